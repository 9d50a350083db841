"""Name the start models of study 2 (the start model's own temperature) by their pretraining scale and seed.

Each arm's pretraining study keeps every trial's model under ``$SWEEP_HOME/models/<study>/trials/trial-NNN``
(``start_pretrain_static``: the static model; ``start_pretrain_l1``: the 1-layer transformer); its fine-tuning study
(``start_temperature_static``, ``start_temperature_l1``) fine-tunes ``$SWEEP_HOME/starts/<arm>_scale<S>_seed<K>``,
the model pretrained at scale S with seed K. This links one to the other, reading each kept model's trial number
(``sweep_model.json``) and the trial's parameters from the study's Optuna storage.

Research code beside the notebooks. Usage: ``SWEEP_HOME=... python -m research.notebooks.start_models [static|l1]``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import optuna

ARMS = {"static": "start_pretrain_static", "l1": "start_pretrain_l1"}  # arm -> its pretraining study


def link_start_models(home: Path, arm: str = "static") -> list[Path]:
    """Link ``home/starts/<arm>_scale<S>_seed<K>`` to each kept model of the arm's pretraining study; the links
    made."""
    study_name = ARMS[arm]
    study = optuna.load_study(study_name=study_name, storage=f"sqlite:///{home / 'optuna.db'}")
    params = {trial.number: trial.params for trial in study.get_trials(states=[optuna.trial.TrialState.COMPLETE])}
    links = []
    for folder in sorted((home / "models" / study_name / "trials").iterdir()):
        number = json.loads((folder / "sweep_model.json").read_text())["trial_number"]
        if number not in params:
            continue
        scale, seed = params[number]["loss.scale"], params[number]["trial.seed"]
        link = home / "starts" / f"{arm}_scale{scale:g}_seed{seed:g}"
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink():
            link.unlink()
        link.symlink_to(folder.resolve(), target_is_directory=True)
        links.append(link)
    return links


if __name__ == "__main__":
    if "SWEEP_HOME" not in os.environ:
        sys.exit("set SWEEP_HOME to the folder the pretraining study ran under")
    chosen = sys.argv[1] if len(sys.argv) > 1 else "static"
    if chosen not in ARMS:
        sys.exit(f"arm {chosen!r}: give one of {', '.join(ARMS)}")
    for made in link_start_models(Path(os.environ["SWEEP_HOME"]), chosen):
        print(made, "->", made.resolve())

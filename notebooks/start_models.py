"""Name the start models of study 2 (the start model's own temperature) by their pretraining scale and seed.

``start_pretrain_static`` keeps every trial's model under ``$SWEEP_HOME/models/start_pretrain_static/trials/
trial-NNN``; ``start_temperature_static`` fine-tunes ``$SWEEP_HOME/starts/static_scale<S>_seed<K>``, the model
pretrained at scale S with seed K. This links one to the other, reading each kept model's trial number
(``sweep_model.json``) and the trial's parameters from the study's Optuna storage.

Research code beside the notebooks. Usage: ``SWEEP_HOME=... python -m notebooks.start_models``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import optuna

STUDY = "start_pretrain_static"


def link_start_models(home: Path) -> list[Path]:
    """Link ``home/starts/static_scale<S>_seed<K>`` to each kept model of the pretraining study; the links made."""
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{home / 'optuna.db'}")
    params = {trial.number: trial.params for trial in study.get_trials(states=[optuna.trial.TrialState.COMPLETE])}
    links = []
    for folder in sorted((home / "models" / STUDY / "trials").iterdir()):
        number = json.loads((folder / "sweep_model.json").read_text())["trial_number"]
        if number not in params:
            continue
        scale, seed = params[number]["loss.scale"], params[number]["trial.seed"]
        link = home / "starts" / f"static_scale{scale:g}_seed{seed:g}"
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink():
            link.unlink()
        link.symlink_to(folder.resolve(), target_is_directory=True)
        links.append(link)
    return links


if __name__ == "__main__":
    if "SWEEP_HOME" not in os.environ:
        sys.exit("set SWEEP_HOME to the folder the pretraining study ran under")
    for made in link_start_models(Path(os.environ["SWEEP_HOME"])):
        print(made, "->", made.resolve())

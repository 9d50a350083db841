"""Study 2's start models are named by the scale and seed they were pretrained at (notebooks/start_models.py)."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
from optuna.distributions import FloatDistribution, IntDistribution

from notebooks.start_models import STUDY, link_start_models


def test_each_kept_model_is_linked_under_its_pretraining_scale_and_seed(tmp_path: Path):
    study = optuna.create_study(study_name=STUDY, storage=f"sqlite:///{tmp_path / 'optuna.db'}")
    cells = [(20.0, 1), (10.0, 0), (50.0, 2), (10.0, 2)]
    distributions = {"loss.scale": FloatDistribution(0, 100), "trial.seed": IntDistribution(0, 9)}
    for scale, seed in cells:
        trial = optuna.trial.create_trial(
            params={"loss.scale": scale, "trial.seed": seed}, distributions=distributions, value=0.5
        )
        study.add_trial(trial)
    failed = optuna.trial.create_trial(
        params={"loss.scale": 20.0, "trial.seed": 0}, distributions=distributions, state=optuna.trial.TrialState.FAIL
    )
    study.add_trial(failed)
    for number in range(len(cells) + 1):  # the failed trial's folder is a leftover: never linked
        folder = tmp_path / "models" / STUDY / "trials" / f"trial-{number:03d}"
        folder.mkdir(parents=True)
        (folder / "sweep_model.json").write_text(json.dumps({"trial_number": number}))

    links = link_start_models(tmp_path)

    assert {link.name for link in links} == {
        "static_scale20_seed1",
        "static_scale10_seed0",
        "static_scale50_seed2",
        "static_scale10_seed2",
    }
    assert (tmp_path / "starts" / "static_scale50_seed2").resolve().name == "trial-002"
    assert link_start_models(tmp_path) == links  # run again: the same links, replaced

"""Study 2: its start models are named by the scale and seed they were pretrained at (notebooks/start_models.py),
and its rule says whether the best fine-tuning scale follows the start's (research/findings/start_temperature.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest
from optuna.distributions import FloatDistribution, IntDistribution

from research.findings.start_temperature import _with_starts, follows, start_verdict
from research.findings.summary import agreed_word
from research.notebooks.start_models import ARMS, link_start_models


@pytest.mark.parametrize("arm", list(ARMS))
def test_each_kept_model_is_linked_under_its_pretraining_scale_and_seed(tmp_path: Path, arm: str):
    study = optuna.create_study(study_name=ARMS[arm], storage=f"sqlite:///{tmp_path / 'optuna.db'}")
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
        folder = tmp_path / "models" / ARMS[arm] / "trials" / f"trial-{number:03d}"
        folder.mkdir(parents=True)
        (folder / "sweep_model.json").write_text(json.dumps({"trial_number": number}))

    links = link_start_models(tmp_path, arm)

    cells_named = {f"{arm}_scale{scale:g}_seed{seed}" for scale, seed in cells}
    assert {link.name for link in links} == cells_named
    assert (tmp_path / "starts" / f"{arm}_scale50_seed2").resolve().name == "trial-002"
    assert link_start_models(tmp_path, arm) == links  # run again: the same links, replaced


def simulated_finetuning(peaks: dict[int, float], seed: int = 0) -> pd.DataFrame:
    """Fine-tuning trials of starts pretrained at each scale of ``peaks`` (3 seeds each): a score that peaks, in log
    scale, at the start's ``peaks`` value, plus per-start noise; the lower rate is worse everywhere."""
    rng = np.random.default_rng(seed)
    rows = []
    for start, peak in peaks.items():
        for replicate in range(3):
            offset = rng.normal(0, 0.01)  # a start model's own quality
            for rate, penalty in ((0.01, 0.0), (0.003, 0.02)):
                for scale in (5.0, 10.0, 20.0, 50.0, 100.0):
                    score = 0.8 - 0.05 * np.log(scale / peak) ** 2 - penalty + offset
                    rows.append(
                        {
                            "model.name_or_path": f"/runs/starts/static_scale{start}_seed{replicate}",
                            "loss.scale": scale,
                            "trial.learning_rate": rate,
                            "stsb_validation_spearman": score + rng.normal(0, 0.002),
                            "stsb_test_spearman": score - 0.1 + rng.normal(0, 0.002),
                        }
                    )
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("peaks", "word"),
    [
        ({10: 10.0, 20: 20.0, 50: 50.0}, "follows"),
        ({10: 10.0, 20: 10.0, 50: 10.0}, "shared"),
        ({10: 10.0, 20: 20.0, 50: 10.0}, "not followed"),
    ],
    ids=["follows the start", "one optimum", "the coldest start fine-tunes warmer"],
)
def test_the_start_rule_finds_the_known_truth(peaks: dict[int, float], word: str):
    trials = _with_starts(simulated_finetuning(peaks))
    verdicts = [start_verdict(trials[trials["start"] == s], s) for s in sorted(trials["start"].unique())]
    assert [v.learning_rate for v in verdicts] == [0.01] * 3  # the better rate, chosen per start
    assert [v.best() for v in verdicts] == [peaks[10], peaks[20], peaks[50]]
    assert follows(verdicts) == word
    assert all(v.n_seeds == 3 for v in verdicts)


@pytest.mark.parametrize(
    ("words", "agreed"),
    [
        ({"follows"}, "follows"),
        ({"shared", "not followed"}, "not followed"),
        ({"follows", "shared"}, "unclear"),
        (set(), "unclear"),
    ],
    ids=["one arm", "neither arm follows", "one arm follows", "no arm ran"],
)
def test_the_summary_takes_the_arms_word_only_where_they_agree_or_none_follows(words: set[str], agreed: str) -> None:
    assert agreed_word(words) == agreed

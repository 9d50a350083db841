"""Question (d)'s fine-tuning costs: every temperature against the untrained model, paired by seed, with Bonferroni
intervals whose simultaneous coverage is checked on simulated seeds with known differences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from research.findings.finetune import against_untrained, chosen_table, untrained_against_best
from sweep.report import STSB_VALIDATION, objective

RESULTS = Path(__file__).resolve().parents[2] / "research" / "results"
TRUE_DIFFS = {5.0: 0.04, 10.0: 0.03, 20.0: 0.0, 50.0: -0.02, 100.0: -0.05}


def simulated(rng: np.random.Generator, seeds: int = 3, spread: float = 0.01) -> pd.DataFrame:
    """One score per scale and seed: a seed effect shared by every scale (what pairing removes) plus noise, the
    untrained model (scale 0) the same for every seed but its seed effect, each trained scale TRUE_DIFFS above it."""
    rows = []
    for seed in range(seeds):
        shared = rng.normal(0.0, 0.05)
        rows.append((0.0, seed, 0.6 + shared))
        rows += [(s, seed, 0.6 + d + shared + rng.normal(0.0, spread)) for s, d in TRUE_DIFFS.items()]
    return pd.DataFrame(rows, columns=["scale", "seed", "value"])


def test_the_differences_cover_the_truth_together_at_least_at_the_level() -> None:
    rng = np.random.default_rng(0)
    draws, covered = 2000, 0
    for _ in range(draws):
        diffs = against_untrained(simulated(rng)).set_index("scale")
        truth = pd.Series(TRUE_DIFFS)
        covered += bool(((diffs["ci_low"] <= truth) & (truth <= diffs["ci_high"])).all())
    assert covered / draws >= 0.94  # Bonferroni over 5 scales: at least 95% up to simulation error


def test_the_differences_are_the_paired_means_and_the_pairing_removes_the_seed_effect() -> None:
    scores = simulated(np.random.default_rng(1), seeds=4, spread=0.0)
    diffs = against_untrained(scores).set_index("scale")
    assert np.allclose(diffs["mean"], pd.Series(TRUE_DIFFS).loc[diffs.index])
    assert np.allclose(diffs["ci_high"] - diffs["ci_low"], 0.0)  # no noise beyond the shared seed effect
    assert (diffs["n_seeds"] == 4).all() and np.isclose(
        diffs["untrained"].iloc[0], scores.query("scale == 0")["value"].mean()
    )


def test_without_an_untrained_arm_there_is_nothing_to_compare() -> None:
    scores = simulated(np.random.default_rng(2)).query("scale != 0")
    assert against_untrained(scores).empty


def test_the_advice_reads_the_table_of_the_metric_the_study_chose_on() -> None:
    batch, static = RESULTS / "mnrl_scale_batch", RESULTS / "mnrl_scale"
    assert objective(batch) != STSB_VALIDATION and set(chosen_table(batch)["metric"]) == {objective(batch)}
    assert objective(static) == STSB_VALIDATION and "metric" not in chosen_table(static)


def test_the_untrained_model_is_read_against_the_best_of_the_chosen_table() -> None:
    short = RESULTS / "mnrl_scale_minilm"
    untrained = chosen_table(short).set_index("scale").loc[0.0]
    assert untrained_against_best(short).endswith(f", {untrained['verdict']}")
    assert untrained_against_best(RESULTS / "gist_temperature_guide") == ""  # no untrained arm in its table

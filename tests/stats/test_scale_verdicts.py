"""The best scale's confidence set, the simultaneous intervals and equivalence, on simulated studies with a known truth.

Two layers are simulated. ``scale_verdicts`` alone gets a parametric bootstrap: the point estimates are the true
means plus correlated Gaussian noise, the resamples the point plus fresh noise of the same law (what a bootstrap
approximates), so hundreds of studies take a second. ``paired_bootstrap`` end to end gets per-pair predictions whose
true Spearman is set by the noise added to the gold scores, with a seed effect shared by every scale of a seed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sweep.stats.paired_bootstrap import paired_bootstrap
from sweep.stats.scale_verdicts import (
    BEST,
    DEFAULT_MARGIN,
    EQUIVALENT,
    NOT_DISTINGUISHABLE,
    WORSE,
    scale_verdicts,
)

LEVEL = 0.95
N_STUDIES = 400
# at N_STUDIES, a rate whose truth is 0.95 falls below this with probability < 0.3%
LOWEST_COVERAGE = 0.95 - 3 * np.sqrt(0.95 * 0.05 / N_STUDIES)


def _study(rng: np.random.Generator, means: np.ndarray, sd: float = 0.01, n_seeds: int = 3, resamples: int = 300):
    """(point, resampled, per_seed) of one simulated study: per-seed values share a seed effect (the pairing), the
    bootstrap draws the point's noise again around the point."""
    seed_effect = rng.normal(0, sd, n_seeds)
    per_seed = means[:, None] + seed_effect[None] + rng.normal(0, sd, (means.size, n_seeds))
    point = per_seed.mean(axis=1)
    noise = rng.normal(0, sd / np.sqrt(n_seeds), (means.size, resamples))
    shared = rng.normal(0, sd / np.sqrt(n_seeds), resamples)
    return point, point[:, None] + noise + shared[None], per_seed


@pytest.mark.parametrize("n_seeds", [3, 12])
def test_the_confidence_set_holds_every_true_best_at_the_nominal_rate(n_seeds: int) -> None:
    means = np.array([0.70, 0.70, 0.695, 0.69, 0.65])  # two equal best, one close, two worse
    rng = np.random.default_rng(1)
    held = 0
    for _ in range(N_STUDIES):
        point, resampled, per_seed = _study(rng, means, n_seeds=n_seeds)
        in_set = scale_verdicts(point, resampled, per_seed, LEVEL).table["in_confidence_set"].to_numpy()
        held += in_set[0] and in_set[1]
    assert held / N_STUDIES >= LOWEST_COVERAGE


def test_a_clearly_worse_scale_leaves_the_confidence_set_and_is_called_worse() -> None:
    means = np.array([0.70, 0.70, 0.55])
    rng = np.random.default_rng(2)
    results = [scale_verdicts(*_study(rng, means, n_seeds=5), LEVEL).table.iloc[2] for _ in range(100)]
    assert all(not row["in_confidence_set"] and row["verdict"] == WORSE for row in results)


@pytest.mark.parametrize("n_seeds", [3, 12])
def test_simultaneous_intervals_keep_the_familywise_error_at_the_level(n_seeds: int) -> None:
    """All six scales equal: a study that calls any of them worse than the best makes a family-wise error."""
    means = np.full(6, 0.7)
    rng = np.random.default_rng(3)
    errors = sum(
        (scale_verdicts(*_study(rng, means, n_seeds=n_seeds), LEVEL).table["verdict"] == WORSE).any()
        for _ in range(N_STUDIES)
    )
    assert errors / N_STUDIES <= 1 - LOWEST_COVERAGE


def test_the_intervals_of_best_minus_each_scale_cover_the_truth_together() -> None:
    means = np.array([0.70, 0.69, 0.68, 0.66])
    rng = np.random.default_rng(4)
    covered = 0
    for _ in range(N_STUDIES):
        verdicts = scale_verdicts(*_study(rng, means, n_seeds=12), LEVEL)
        truth = means[verdicts.best] - means
        table = verdicts.table
        covered += bool(((table["ci_low"] <= truth) & (truth <= table["ci_high"])).all())
    assert covered / N_STUDIES >= LOWEST_COVERAGE


def test_equivalence_is_declared_only_inside_the_margin() -> None:
    rng = np.random.default_rng(5)
    outside = np.array([0.70, 0.685])  # 0.015 apart: beyond the 0.01 margin
    wrongly = sum(
        scale_verdicts(*_study(rng, outside, sd=0.004, n_seeds=5), LEVEL, margin=0.01).table["verdict"].iloc[1]
        == EQUIVALENT
        for _ in range(N_STUDIES)
    )
    assert wrongly / N_STUDIES <= 1 - LOWEST_COVERAGE
    inside = np.array([0.70, 0.70])  # equal and measured precisely: equivalence is found
    found = sum(
        EQUIVALENT
        in scale_verdicts(*_study(rng, inside, sd=0.001, n_seeds=5), LEVEL, margin=0.01).table["verdict"].values
        for _ in range(100)
    )
    assert found >= 90


def test_not_distinguishable_is_neither_equivalent_nor_worse() -> None:
    """Too noisy to rank and to bound: the verdict says only that."""
    rng = np.random.default_rng(6)
    verdict = scale_verdicts(*_study(rng, np.array([0.70, 0.699]), sd=0.05), LEVEL, margin=0.01).table["verdict"]
    assert sorted(verdict) == [BEST, NOT_DISTINGUISHABLE]


def test_the_seed_interval_is_scipys_paired_t_with_bonferroni_over_the_comparisons_with_the_best() -> None:
    per_seed = np.array([[0.73, 0.74, 0.735], [0.72, 0.725, 0.72], [0.60, 0.62, 0.61]])
    table = scale_verdicts(per_seed.mean(axis=1), None, per_seed, LEVEL).table
    interval = stats.ttest_rel(per_seed[0], per_seed[2]).confidence_interval(1 - (1 - LEVEL) / 2)
    assert table["seed_low"].iloc[2] == pytest.approx(interval.low)
    assert table["seed_high"].iloc[2] == pytest.approx(interval.high)
    assert table["p_best"].isna().all()  # no resamples: no P(best)


def test_with_few_seeds_the_more_conservative_interval_decides() -> None:
    """The reviewer's case from results/mnrl_scale: 10 vs 20 per seed [0.0074, 0.0165, 0.0174]; a tight bootstrap
    interval alone would call 20 worse, the per-seed t (2 degrees of freedom, Bonferroni over the two comparisons
    with the best) does not. The third scale is 50, far below."""
    per_seed = np.array([[0.7324, 0.7330, 0.7318], [0.7250, 0.7165, 0.7144], [0.55, 0.54, 0.55]])
    point = per_seed.mean(axis=1)
    tight = point[:, None] + np.random.default_rng(7).normal(0, 0.001, (3, 500))
    verdicts = scale_verdicts(point, tight, per_seed, LEVEL)
    row = verdicts.table.iloc[1]
    assert row["boot_low"] > 0  # the bootstrap alone says worse
    assert row["seed_low"] < 0 and row["ci_low"] == row["seed_low"] and row["verdict"] == NOT_DISTINGUISHABLE
    assert verdicts.seed_t and "Bonferroni" in verdicts.correction


def test_p_best_is_the_share_of_resamples_each_scale_wins() -> None:
    resampled = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 0.0, 0.0]])
    table = scale_verdicts(np.array([0.75, 0.25]), resampled).table
    assert table["p_best"].tolist() == [0.75, 0.25]


def test_paired_bootstrap_end_to_end_covers_the_tied_best_and_drops_a_worse_scale() -> None:
    """Predictions whose Spearman is set by their noise: scales 10 and 15 equal and best, 50 clearly worse. As in
    real studies, most of a scale's error is its own (the same for every seed) and seeds add a little."""
    rng = np.random.default_rng(8)
    noise = {5: 0.8, 10: 0.6, 15: 0.6, 50: 1.6}
    held = dropped = 0
    n_studies = 60
    for _ in range(n_studies):
        gold = rng.normal(size=300)
        predictions = np.array(
            [
                [gold + sd * (own + 0.2 * rng.normal(size=300)) for _ in range(3)]
                for sd, own in ((sd, rng.normal(size=300)) for sd in noise.values())
            ]
        )
        table = paired_bootstrap(gold, predictions, list(noise), n_resamples=200, level=LEVEL).table
        held += bool(table.loc[table["scale"].isin([10, 15]), "in_confidence_set"].all())
        worst = table[table["scale"] == 50].iloc[0]
        dropped += (not worst["in_confidence_set"]) and worst["verdict"] == WORSE
    assert held / n_studies >= 0.9
    assert dropped == n_studies


def test_the_default_margin_exceeds_the_seed_spread_of_every_scale_of_the_default_study() -> None:
    """docs/getting-started.md justifies the 0.01 margin by it: a margin inside training noise would be meaningless."""
    trials = pd.read_csv(Path(__file__).resolve().parents[2] / "results" / "mnrl_scale" / "trials.csv")
    spread = trials.groupby("loss.scale")["stsb_validation_spearman"].std(ddof=1)
    assert (spread < DEFAULT_MARGIN).all() and spread.max() > DEFAULT_MARGIN / 4

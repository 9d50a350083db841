"""The paired comparison end to end on simulated per-pair predictions with a known truth (layer (a) of
`tests.stats.verdict_simulation`): the real resampler (`pair_resamples`, `paired_bootstrap`) estimates the seed
means and the evaluation pairs' covariance, the engine gives the set, intervals and words.

Small and fast: 300 pairs, 200 pair resamples, four scales with true Spearman 0.85, 0.85, 0.84, 0.75. Monte-Carlo
bands are nominal +- 3 standard deviations of a share over the stated number of studies. The calibration is checked
at level 0.5, where intervals too wide show as much as too narrow ones (at 0.95 a band of 120 studies reaches 1).
"""

from __future__ import annotations

import numpy as np
import pytest

from sweep.stats.bootstrap import pair_resamples, paired_bootstrap
from sweep.stats.verdicts import EQUIVALENT, LOWER_ON_PAIRS, WORSE, scale_verdicts, simultaneous_intervals
from tests.stats.verdict_simulation import LEVEL, expected_spearman, monte_carlo_sd, pair_study

TRUTH = np.array([0.85, 0.85, 0.84, 0.75])
SCALES = [5.0, 10.0, 20.0, 50.0]
N_PAIRS, N_RESAMPLES = 300, 200
N_CALIBRATION = 120  # studies with 3 seeds: a share of nominal 0.5 is within +-0.137 (3 sd)
N_END_TO_END = 50  # studies per number of seeds through paired_bootstrap


@pytest.mark.slow
def test_the_resampled_intervals_cover_every_true_difference_at_their_level() -> None:
    """All six pairs at once, at 3 seeds: at level 0.5 inside 0.5 +- 3 sd of 120 studies (0.363..0.637); at 0.95
    at least 0.95 - 3 sd (0.890). The truth is the expected sample Spearman on 300 pairs (Moran)."""
    rng = np.random.default_rng(11)
    truth = expected_spearman(TRUTH, N_PAIRS)
    true_differences = truth[:, None] - truth[None, :]
    covered = {0.5: 0, LEVEL: 0}
    for study in range(N_CALIBRATION):
        gold, predictions = pair_study(rng, TRUTH, 3, N_PAIRS)
        per_seed, covariance = pair_resamples(gold, predictions, N_RESAMPLES, seed=study)
        for level in covered:
            draws = scale_verdicts(per_seed, covariance, level, seed=study).draws
            differences, half, _ = simultaneous_intervals(per_seed.mean(axis=1), draws, level)
            covered[level] += bool((np.abs(differences - true_differences) <= half).all())
    spread = 3 * monte_carlo_sd(0.5, N_CALIBRATION)
    assert 0.5 - spread <= covered[0.5] / N_CALIBRATION <= 0.5 + spread
    assert covered[LEVEL] / N_CALIBRATION >= LEVEL - 3 * monte_carlo_sd(LEVEL, N_CALIBRATION)


@pytest.mark.slow
@pytest.mark.parametrize("n_seeds", [2, 3, 5])
def test_paired_bootstrap_keeps_both_true_bests_and_calls_a_far_scale_worse(n_seeds: int) -> None:
    """The set holds 5 and 10 (truly tied best) in >= 0.95 - 3 sd of 50 studies (0.857); 50, 0.10 below, is out
    of the set and *worse* in every study."""
    rng = np.random.default_rng(20 + n_seeds)
    held = 0
    for study in range(N_END_TO_END):
        gold, predictions = pair_study(rng, TRUTH, n_seeds, N_PAIRS)
        table = paired_bootstrap(gold, predictions, SCALES, N_RESAMPLES, LEVEL, seed=study).table.set_index("scale")
        held += bool(table.loc[[5.0, 10.0], "in_confidence_set"].all())
        assert table.loc[50.0, "verdict"] == WORSE and not table.loc[50.0, "in_confidence_set"]
    assert held / N_END_TO_END >= LEVEL - 3 * monte_carlo_sd(LEVEL, N_END_TO_END)


def test_with_one_seed_paired_bootstrap_never_says_worse_or_equivalent() -> None:
    """One seed: every scale stays in the set; the far scale is only *lower on these pairs*."""
    rng = np.random.default_rng(30)
    lower = 0
    for study in range(20):
        gold, predictions = pair_study(rng, TRUTH, 1, N_PAIRS)
        table = paired_bootstrap(gold, predictions, SCALES, N_RESAMPLES, LEVEL, seed=study).table
        assert table["in_confidence_set"].all()
        assert not table["verdict"].isin([WORSE, EQUIVALENT]).any()
        lower += table.set_index("scale").loc[50.0, "verdict"] == LOWER_ON_PAIRS
    assert lower == 20

"""The verdict engine on simulated seed means with a known truth (layer (b) of `tests.stats.verdict_simulation`: the
engine is fed per_seed values and the TRUE evaluation-pairs covariance), and against the textbook references.

Monte-Carlo bands: a rate is checked against its nominal value +- 3 standard deviations of a share over the stated
number of studies (`monte_carlo_sd`); with `N_STUDIES` = 1,200 and a nominal 0.95 that is +-0.019. A one-sided check
(a set's coverage, an error rate) uses only the side that matters. The design (`DESIGN`): five scales, true
Spearman 0.85, 0.85, 0.845, 0.83, 0.80; seed SD ~0.004 per scale, pair error SD 0.008 correlated 0.98 across scales.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

from sweep.stats.verdicts import (
    BEST,
    DEFAULT_MARGIN,
    EQUIVALENT,
    LOWER_ON_PAIRS,
    NOT_DISTINGUISHABLE,
    WORSE,
    p_best,
    scale_verdicts,
    seed_variance,
    simultaneous_intervals,
)
from tests.stats.verdict_simulation import (
    DESIGN,
    EQUAL,
    GAP,
    LEVEL,
    MARGIN,
    gaussian_rates,
    gaussian_study,
    monte_carlo_sd,
)

N_STUDIES = 1200  # per number of seeds, for the design's coverage, power and P(best)
N_EQUAL = 800  # per number of seeds, for the error rates among equal scales and at the margin
SEEDS = [1, 2, 3, 5, 10]
SEVERAL = [2, 3, 5, 10]
AT_THE_MARGIN = (0.85, 0.85 - MARGIN, 0.80, 0.80, 0.80)  # scale 1 exactly one margin below the best


def lowest(rate: float, n_studies: int) -> float:
    return rate - 3 * monte_carlo_sd(rate, n_studies)


def highest(rate: float, n_studies: int) -> float:
    return rate + 3 * monte_carlo_sd(rate, n_studies)


@pytest.mark.parametrize("n_seeds", SEEDS)
def test_the_confidence_set_holds_every_true_best_at_least_at_the_level(n_seeds: int) -> None:
    rates = gaussian_rates(DESIGN, n_seeds, N_STUDIES, seed=n_seeds)
    assert rates.set_holds_every_best >= lowest(LEVEL, N_STUDIES)


@pytest.mark.parametrize("n_seeds", SEVERAL)
def test_the_simultaneous_intervals_cover_every_true_difference_at_the_level(n_seeds: int) -> None:
    """All 10 pairs at once: nominal +- 3 sd of 1,200 studies (0.931..0.969), so intervals too wide are caught as
    well as too narrow; the four of best - other in the table (the best chosen on the same data) at least that."""
    rates = gaussian_rates(DESIGN, n_seeds, N_STUDIES, seed=n_seeds)
    assert lowest(LEVEL, N_STUDIES) <= rates.all_pairs_covered <= highest(LEVEL, N_STUDIES)
    assert rates.best_pairs_covered >= lowest(LEVEL, N_STUDIES)


def test_with_one_seed_the_intervals_cover_the_trained_models_not_the_scales() -> None:
    """Fed the pairs-only covariance of one seed, the intervals are right about the two trained models (nominal +- 3
    sd) and too short for the scales (the seed-to-seed noise is left out): why one seed gets no words."""
    rates = gaussian_rates(DESIGN, 1, N_STUDIES, seed=1)
    assert lowest(LEVEL, N_STUDIES) <= rates.trained_covered <= highest(LEVEL, N_STUDIES)
    assert rates.all_pairs_covered < lowest(LEVEL, N_STUDIES)


@pytest.mark.parametrize("n_seeds", SEEDS)
def test_equal_scales_are_called_worse_at_most_at_the_level(n_seeds: int) -> None:
    """Five truly equal scales: a study calling any of them worse errs (<= 5% + 3 sd of 800 studies)."""
    rates = gaussian_rates(EQUAL, n_seeds, N_EQUAL, seed=100 + n_seeds)
    assert rates.any_best_worse <= highest(1 - LEVEL, N_EQUAL)


@pytest.mark.parametrize("n_seeds", [2, 5, 10])
def test_equivalence_is_declared_for_a_gap_at_the_margin_at_most_at_the_level(n_seeds: int) -> None:
    """A scale exactly one margin below the best is not equivalent: declared in <= 5% + 3 sd of 800 studies."""
    rates = gaussian_rates(AT_THE_MARGIN, n_seeds, N_EQUAL, seed=200 + n_seeds)
    assert rates.equivalent[1] <= highest(1 - LEVEL, N_EQUAL)


def test_equal_scales_measured_with_ten_seeds_are_often_found_equivalent() -> None:
    """The other side of the margin check: equivalence is reachable (so the bound above is not met vacuously)."""
    rates = gaussian_rates(EQUAL, 10, N_EQUAL, seed=110)
    assert rates.equivalent.mean() > 0.3


def test_the_power_to_call_a_002_gap_worse_rises_with_seeds() -> None:
    power = [gaussian_rates(DESIGN, n, N_STUDIES, seed=n).worse[DESIGN.index(max(DESIGN) - GAP)] for n in SEVERAL]
    slack = 3 * monte_carlo_sd(0.5, N_STUDIES)
    assert all(later >= earlier - slack for earlier, later in zip(power, power[1:], strict=False))
    assert power[0] < power[1] - slack and power[0] < 0.9 and power[-1] > 0.99


def test_a_scale_015_below_the_best_in_each_of_two_seeds_is_worse() -> None:
    rng = np.random.default_rng(7)
    truth = np.array([0.85, 0.85, 0.845, 0.83, 0.70])
    for study in range(200):
        per_seed, fed, _ = gaussian_study(rng, truth, 2)
        verdicts = scale_verdicts(per_seed, fed, LEVEL, seed=study).table
        assert verdicts["verdict"].iloc[4] == WORSE and not verdicts["in_confidence_set"].iloc[4]
    per_seed = np.array([[0.850, 0.856], [0.848, 0.851], [0.700, 0.706]])  # 0.15 below in each seed
    assert scale_verdicts(per_seed).table["verdict"].tolist() == [BEST, NOT_DISTINGUISHABLE, WORSE]


@pytest.mark.parametrize("covariance", [None, 1e-10, 1e-4], ids=["no pairs", "tiny pairs", "pairs"])
def test_one_seed_never_says_worse_or_equivalent_whatever_the_gap(covariance: float | None) -> None:
    per_seed = np.array([[0.85], [0.85], [0.845], [0.84], [0.83], [0.70], [0.35]])
    fed = None if covariance is None else covariance * np.eye(7)
    table = scale_verdicts(per_seed, fed, LEVEL, margin=0.5).table
    assert table["in_confidence_set"].all()
    assert set(table["verdict"]) <= {BEST, NOT_DISTINGUISHABLE, LOWER_ON_PAIRS}
    if covariance is not None and covariance < 1e-6:  # the pairs alone tell the far scales apart: said so
        assert table["verdict"].iloc[-1] == LOWER_ON_PAIRS


@pytest.mark.parametrize("n_seeds", SEVERAL)
def test_every_scale_out_of_the_set_has_p_best_below_5_percent(n_seeds: int) -> None:
    rates = gaussian_rates(DESIGN, n_seeds, N_STUDIES, seed=n_seeds)
    assert rates.max_p_best_out < 0.05


def _anova(per_seed: np.ndarray) -> Any:
    """statsmodels' OLS fit of the randomized block design ``score ~ C(scale) + C(seed)``."""
    n_scales, n_seeds = per_seed.shape
    frame = pd.DataFrame(
        {
            "score": per_seed.ravel(),
            "scale": np.repeat(np.arange(n_scales), n_seeds),
            "seed": np.tile(np.arange(n_seeds), n_scales),
        }
    )
    return smf.ols("score ~ C(scale) + C(seed)", frame).fit()


@pytest.mark.parametrize("n_seeds", [3, 5])
def test_without_pair_covariance_the_engine_is_the_two_way_anova_and_tukey(n_seeds: int) -> None:
    """Seeds as blocks: sigma_u^2 and nu are the residual mean square and degrees of freedom of statsmodels' OLS
    ``score ~ C(scale) + C(seed)`` (exactly); each pair's draws give its OLS t interval with (S-1)(R-1) df (the 95%
    quantile of |D* - D| / OLS se is t.ppf(0.975, nu), times the se OLS's conf_int half-width), and the
    simultaneous half-width / OLS se is Tukey's studentized_range.ppf(0.95, S, nu) / sqrt(2). Monte-Carlo
    tolerance: 4,000 draws give ~2% sd on such a tail quantile; averaged over 10 runs (and the 10 pairs for the t),
    2.5% is > 3 sd."""
    rng = np.random.default_rng(n_seeds)
    per_seed = 0.8 + rng.normal(0, 0.004, (5, n_seeds)) + rng.normal(0, 0.01, n_seeds)[None]
    fit = _anova(per_seed)
    variance, df = seed_variance(per_seed)
    assert df == fit.df_resid == 4 * (n_seeds - 1)
    assert variance == pytest.approx(fit.mse_resid, rel=1e-10)
    contrasts = [f"C(scale)[T.{k}]" for k in range(1, 5)]
    se = fit.bse[contrasts].to_numpy()  # of scale k - scale 0: the same for every pair of this balanced design
    ols_half = (fit.conf_int(1 - LEVEL).loc[contrasts, 1] - fit.params[contrasts]).to_numpy()
    upper = np.triu_indices(5, k=1)
    point = per_seed.mean(axis=1)
    per_pair, family = [], []
    for run in range(10):
        draws = scale_verdicts(per_seed, None, LEVEL, seed=run).draws
        deviations = np.abs((draws[:, None] - draws[None])[upper] - (point[:, None] - point[None])[upper][:, None])
        per_pair.append(np.quantile(deviations / se[0], LEVEL, axis=1))
        family.append(simultaneous_intervals(point, draws, LEVEL)[1][upper] / se[0])
    t = stats.t.ppf((1 + LEVEL) / 2, df)
    assert np.mean(per_pair) == pytest.approx(t, rel=0.025)
    assert np.mean(per_pair) * se == pytest.approx(ols_half, rel=0.025)
    assert np.mean(family) == pytest.approx(stats.studentized_range.ppf(LEVEL, 5, df) / np.sqrt(2), rel=0.025)


def test_p_best_is_the_share_of_draws_each_scale_wins_and_ties_share() -> None:
    draws = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0]])
    assert p_best(draws).tolist() == [0.625, 0.375]


def test_not_distinguishable_is_neither_equivalent_nor_worse() -> None:
    """Too noisy to rank and to bound: the verdict says only that."""
    per_seed = np.array([[0.70, 0.75, 0.66], [0.69, 0.66, 0.74]])
    assert sorted(scale_verdicts(per_seed, margin=0.01).table["verdict"]) == [BEST, NOT_DISTINGUISHABLE]


def test_a_given_reference_can_itself_be_out_of_the_set() -> None:
    per_seed = np.array([[0.70, 0.71, 0.70], [0.80, 0.81, 0.805], [0.79, 0.80, 0.80]])
    verdicts = scale_verdicts(per_seed, reference=0)
    assert verdicts.best == 0 and verdicts.table["verdict"].iloc[0] == BEST
    assert not verdicts.table["in_confidence_set"].iloc[0] and verdicts.table["diff_to_best"].iloc[1] < 0


def test_the_method_line_names_the_seed_df_and_the_pairs() -> None:
    per_seed = np.array([[0.70, 0.71, 0.70], [0.80, 0.81, 0.805], [0.79, 0.80, 0.80]])
    assert scale_verdicts(per_seed, 1e-6 * np.eye(3)).correction == (
        "seeds as blocks (4 df for the scale x seed error) + evaluation pairs (bootstrap); max-t over all 3 pairs "
        "of scales"
    )
    assert scale_verdicts(per_seed[:, :1]).correction == "one seed; max-t over all 3 pairs of scales"


@pytest.mark.parametrize(
    ("per_seed", "covariance", "message"),
    [
        (np.array([0.7, 0.8]), None, "need per_seed"),
        (np.array([[0.7, np.nan], [0.8, 0.8]]), None, "without NaN"),
        (np.ones((2, 2)), np.eye(3), "need pair_covariance"),
    ],
    ids=["one dimension", "NaN", "covariance shape"],
)
def test_inputs_it_cannot_use_are_a_one_line_value_error(per_seed, covariance, message) -> None:
    with pytest.raises(ValueError, match=message):
        scale_verdicts(per_seed, covariance)


def test_the_default_margin_exceeds_the_seed_spread_of_every_scale_of_the_default_study() -> None:
    """docs/getting-started.md justifies the 0.01 margin by it: a margin inside training noise would be meaningless."""
    trials = pd.read_csv(Path(__file__).resolve().parents[2] / "research" / "results" / "mnrl_scale" / "trials.csv")
    spread = trials.groupby("loss.scale")["stsb_validation_spearman"].std(ddof=1)
    assert (spread < DEFAULT_MARGIN).all() and spread.max() > DEFAULT_MARGIN / 4


def test_a_tied_pair_measured_precisely_is_equivalent() -> None:
    per_seed = np.array([[0.800, 0.801, 0.802, 0.800], [0.8005, 0.8008, 0.8012, 0.8004], [0.70, 0.71, 0.70, 0.70]])
    assert scale_verdicts(per_seed, margin=0.01).table["verdict"].tolist() == [BEST, EQUIVALENT, WORSE]

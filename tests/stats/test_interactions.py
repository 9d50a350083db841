"""Interactions of the scale with a condition, on simulated studies whose truth is known: the gap per condition, the
difference in differences (coverage of its interval, paired and Welch), the argmax's change, and the mixed model's
interaction test (its false-alarm rate at the level, its power, and how it declines to fit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm

from sweep.stats.interactions import (
    PAIRED,
    WELCH,
    difference_in_differences,
    gap_by_condition,
    interaction_test,
)

# condition -> scale -> true mean; "lo" and "hi" share their gaps (no interaction), "far" widens the 10 - 20 gap
TRUTH = {
    "lo": {5.0: 0.70, 10.0: 0.73, 20.0: 0.72},
    "hi": {5.0: 0.75, 10.0: 0.78, 20.0: 0.77},
    "far": {5.0: 0.70, 10.0: 0.73, 20.0: 0.69},
}


def simulated(
    rng: np.random.Generator,
    conditions: tuple[str, ...],
    n_seeds: int = 4,
    seed_sd: float = 0.02,
    own_sd: float = 0.004,
    seed_offset: dict[str, int] | None = None,
) -> pd.DataFrame:
    """One value per (condition, scale, seed): the truth, a seed effect shared by every trial of that seed (the
    same batches) and noise of its own. ``seed_offset`` gives a condition other seeds (then not paired)."""
    seed_effect = rng.normal(0, seed_sd, 100)
    rows = [
        {
            "condition": condition,
            "scale": scale,
            "seed": seed,
            "value": mean + seed_effect[seed] + rng.normal(0, own_sd),
        }
        for condition in conditions
        for scale, mean in TRUTH[condition].items()
        for seed in range((seed_offset or {}).get(condition, 0), (seed_offset or {}).get(condition, 0) + n_seeds)
    ]
    return pd.DataFrame(rows)


def true_gap(condition: str, a: float, b: float) -> float:
    return TRUTH[condition][a] - TRUTH[condition][b]


def test_gap_by_condition_names_the_best_scale_and_the_default_gap_with_an_interval():
    frame = simulated(np.random.default_rng(0), ("lo", "far"), n_seeds=6, own_sd=0.001)
    table = gap_by_condition(frame, scales=(20.0, 5.0)).set_index(["condition", "scale"])
    assert set(table["best"]) == {10.0}
    assert table.loc[("far", 20.0), "gap"] == pytest.approx(0.04, abs=0.005)
    assert table.loc[("lo", 20.0), "ci_low"] <= 0.01 <= table.loc[("lo", 20.0), "ci_high"]
    assert len(gap_by_condition(frame, scales=(7.0,))) == 0  # a scale no condition ran: no row


@pytest.mark.parametrize(("offset", "design"), [(None, PAIRED), ({"hi": 10}, WELCH)])
def test_the_difference_in_differences_covers_zero_without_an_interaction(offset, design):
    rng = np.random.default_rng(1)
    covered = []
    for _ in range(300):
        result = difference_in_differences(
            simulated(rng, ("lo", "hi"), seed_offset=offset), 10.0, 20.0, "lo", "hi", n_resamples=50
        )
        assert result.design == design
        covered.append(result.ci_low <= 0 <= result.ci_high)
    assert 0.90 <= np.mean(covered) <= 0.99  # 95% +- 3 standard errors of 300 draws; Welch's leans conservative


@pytest.mark.parametrize("offset", [None, {"far": 10}])
def test_the_difference_in_differences_covers_a_true_interaction(offset):
    rng = np.random.default_rng(2)
    truth = true_gap("far", 10.0, 20.0) - true_gap("lo", 10.0, 20.0)  # 0.03
    covered, excludes_zero = [], []
    for _ in range(300):
        result = difference_in_differences(
            simulated(rng, ("lo", "far"), seed_offset=offset), 10.0, 20.0, "lo", "far", n_resamples=50
        )
        covered.append(result.ci_low <= truth <= result.ci_high)
        excludes_zero.append(result.ci_low > 0)
        assert result.gap2 - result.gap1 == pytest.approx(result.estimate)
    assert np.mean(covered) >= 0.92
    assert np.mean(excludes_zero) > 0.5  # paired: the shared seed effect cancels; Welch still sees most


def test_the_argmax_shares_say_how_sure_the_best_scale_moved():
    rng = np.random.default_rng(3)
    shifted = {"lo": {5.0: 0.70, 10.0: 0.75, 20.0: 0.72}, "hi": {5.0: 0.70, 10.0: 0.72, 20.0: 0.75}}
    rows = [
        {"condition": c, "scale": s, "seed": seed, "value": m + rng.normal(0, 0.003)}
        for c, means in shifted.items()
        for s, m in means.items()
        for seed in range(5)
    ]
    moved = difference_in_differences(pd.DataFrame(rows), 10.0, 20.0, "lo", "hi")
    assert (moved.best1, moved.best2) == (10.0, 20.0)
    assert moved.p_argmax_differs > 0.95 and moved.p_best1[10.0] > 0.95 and sum(moved.p_best2.values()) == 1
    same = difference_in_differences(simulated(rng, ("lo", "hi"), own_sd=0.001), 10.0, 20.0, "lo", "hi")
    assert same.p_argmax_differs < 0.05


def test_a_missing_scale_or_condition_is_a_value_error():
    frame = simulated(np.random.default_rng(4), ("lo", "hi"))
    with pytest.raises(ValueError, match="scale 50"):
        difference_in_differences(frame, 50.0, 20.0, "lo", "hi")
    with pytest.raises(ValueError, match="'nope'"):
        difference_in_differences(frame, 10.0, 20.0, "lo", "nope")


def test_the_mixed_model_rejects_no_interaction_at_about_its_level_and_finds_a_real_one():
    rng = np.random.default_rng(5)
    null = [interaction_test(simulated(rng, ("lo", "hi"), n_seeds=3)) for _ in range(200)]
    assert all(result.p_value is not None and result.df_num == 2 for result in null)
    # the exact ANOVA F of this balanced design gives the same p-values; 5% +- 3 standard errors of 200 draws
    assert 0.01 <= np.mean([result.p_value < 0.05 for result in null]) <= 0.11
    found = [interaction_test(simulated(rng, ("lo", "far"), n_seeds=3)).p_value for _ in range(30)]
    assert np.mean([p is not None and p < 0.05 for p in found]) > 0.9


@pytest.mark.parametrize("conditions", [("lo", "hi"), ("lo", "far")])
def test_the_mixed_models_f_test_is_the_exact_anova_f_of_the_balanced_block_design(conditions):
    """With the seeds as blocks, the Wald F of the interaction terms and its denominator degrees of freedom are those
    of statsmodels' OLS ``value ~ C(scale) * C(condition) + C(seed)`` (anova_lm): a chi-square reference, or other
    degrees of freedom, would not agree (a deterministic check beside the rejection rates above)."""
    rng = np.random.default_rng(7)
    for n_seeds in (2, 3, 5):
        frame = simulated(rng, conditions, n_seeds=n_seeds)
        result = interaction_test(frame)
        fit = smf.ols("value ~ C(scale) * C(condition) + C(seed)", frame).fit()
        row = anova_lm(fit).loc["C(scale):C(condition)"]
        assert (result.df_num, result.df_denom) == (row["df"], fit.df_resid)
        assert result.statistic == pytest.approx(row["F"], rel=1e-4)
        assert result.p_value == pytest.approx(row["PR(>F)"], rel=1e-4, abs=1e-9)


def test_the_mixed_model_says_why_it_cannot_be_fitted():
    frame = simulated(np.random.default_rng(6), ("lo", "hi"))
    one_seed = interaction_test(frame[frame["seed"] == 0])
    assert one_seed.p_value is None and "fewer than two seeds" in one_seed.message
    hole = frame[~((frame["condition"] == "hi") & (frame["scale"] == 5.0))]
    assert "no trials" in interaction_test(hole).message
    assert "two conditions" in interaction_test(frame[frame["condition"] == "lo"]).message

"""Each scale at its own best learning rate, on simulated studies whose truth is known: the right learning rate is
chosen, the edge of the grid is flagged, the simultaneous intervals cover the true gaps at about their level,
validation of the chosen cells is optimistic where test is not, and frames that cannot be paired are refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sweep.stats.tuned_condition import (
    ALL_TIED,
    BETTER,
    HIGHEST,
    INSIDE,
    LOWEST,
    ONLY_ONE,
    tuned_comparison,
)
from sweep.stats.verdicts import scale_verdicts

LRS = (0.001, 0.01, 0.1)
BEST_LR = {1.0: 0.1, 10.0: 0.01, 20.0: 0.01, 50.0: 0.001}  # the truth: each scale's own best learning rate
VALIDATION = {1.0: 0.60, 10.0: 0.75, 20.0: 0.73, 50.0: 0.70}  # at its best learning rate; 10 clearly best
TEST = {1.0: 0.50, 10.0: 0.64, 20.0: 0.64, 50.0: 0.60}  # on test 20 ties 10
OFF_BEST = 0.08  # how much worse every other learning rate is


def simulated_study(
    rng: np.random.Generator,
    n_seeds: int = 3,
    shared_sd: float = 0.03,
    own_sd: float = 0.006,
    off_best: float = OFF_BEST,
) -> pd.DataFrame:
    """One row per (scale, learning rate, seed): the truth, a seed effect shared by every cell and both splits (the
    same batches) and noise of each cell and split of its own."""
    seed_effect = rng.normal(0, shared_sd, n_seeds)
    rows = []
    for scale, best_lr in BEST_LR.items():
        for lr in LRS:
            penalty = 0.0 if lr == best_lr else off_best
            for seed in range(n_seeds):
                scores = {
                    split: truth[scale] - penalty + seed_effect[seed] + rng.normal(0, own_sd)
                    for split, truth in (("validation", VALIDATION), ("test", TEST))
                }
                rows.append({"scale": scale, "condition": lr, "seed": float(seed), **scores})
    return pd.DataFrame(rows)


def test_the_clearly_best_learning_rate_is_chosen_for_every_scale():
    rng = np.random.default_rng(0)
    for _ in range(50):
        table = tuned_comparison(simulated_study(rng)).table.set_index("scale")
        assert table["chosen"].to_dict() == BEST_LR
        assert all(tuple(tried) == LRS for tried in table["tried"]) and table["n_seeds"].eq(3).all()
    assert table["position"].to_dict() == {1.0: HIGHEST, 10.0: INSIDE, 20.0: INSIDE, 50.0: LOWEST}


def test_a_chosen_value_at_the_edge_of_those_tried_is_flagged():
    """Per scale its own grid: best at the top, at the bottom, inside, the only value, and all values tied (a scale
    that does not train)."""
    means = {
        2.0: {0.1: 0.70, 0.2: 0.71, 0.3: 0.72},
        5.0: {0.1: 0.72, 0.2: 0.71},
        10.0: {0.1: 0.70, 0.2: 0.73, 0.3: 0.71},
        15.0: {0.2: 0.72},
        0.0: {0.1: 0.65, 0.2: 0.65, 0.3: 0.65},
    }
    rows = [
        {"scale": scale, "condition": lr, "seed": seed, "validation": mean + 0.01 * seed, "test": mean}
        for scale, grid in means.items()
        for lr, mean in grid.items()
        for seed in (0.0, 1.0)
    ]
    table = tuned_comparison(pd.DataFrame(rows)).table.set_index("scale")
    assert table["position"].to_dict() == {0.0: ALL_TIED, 2.0: HIGHEST, 5.0: LOWEST, 10.0: INSIDE, 15.0: ONLY_ONE}
    assert table.loc[0.0, "chosen"] == 0.1 and table.loc[0.0, "tied_with"] == [0.2, 0.3]
    assert table.loc[10.0, "chosen"] == 0.2 and table.loc[10.0, "tried"] == [0.1, 0.2, 0.3]


@pytest.mark.slow
def test_the_simultaneous_intervals_cover_the_true_gaps_at_about_the_nominal_level():
    """Scale 10 is always the best and every learning rate choice is right, so the true gaps are known: on each
    split the three intervals against the best must hold at once in about 95% of the studies (max-t over all six
    pairs of the four chosen cells: at least that, a little more since only three of the six are checked)."""
    rng = np.random.default_rng(1)
    covered: dict[str, list[bool]] = {"validation": [], "test": []}
    for _ in range(1000):
        result = tuned_comparison(simulated_study(rng), level=0.95)
        assert result.best_scale == 10.0
        table = result.table.set_index("scale").drop(index=10.0)
        for split, truth in (("validation", VALIDATION), ("test", TEST)):
            gaps = np.array([truth[10.0] - truth[scale] for scale in table.index])
            covered[split].append(bool(((table[f"{split}_low"] <= gaps) & (gaps <= table[f"{split}_high"])).all()))
    for split, hits in covered.items():
        assert 0.935 <= np.mean(hits) <= 0.985, (split, np.mean(hits))


@pytest.mark.slow
def test_the_chosen_value_is_optimistic_on_validation_and_not_on_test():
    """Every learning rate is truly as good as the others: picking the highest validation mean picks noise, which
    test (never chosen on) does not share. No seed effect here: it would add the same to both splits."""
    rng = np.random.default_rng(2)
    validation_bias, test_bias = [], []
    for _ in range(400):
        table = tuned_comparison(simulated_study(rng, shared_sd=0.0, off_best=0.0)).table.set_index("scale")
        validation_bias.append((table["validation_mean"] - pd.Series(VALIDATION)).mean())
        test_bias.append((table["test_mean"] - pd.Series(TEST)).mean())
    assert np.mean(validation_bias) > 0.002  # expected own_sd / sqrt(3) * E[max of 3 standard normals] = 0.0029
    assert abs(np.mean(test_bias)) < 0.001


def test_on_validation_the_intervals_and_verdicts_are_the_engines_with_the_best_as_reference():
    frame = simulated_study(np.random.default_rng(3))
    table = tuned_comparison(frame, margin=0.05).table
    cells = frame.merge(table[["scale", "chosen"]], left_on=["scale", "condition"], right_on=["scale", "chosen"])
    per_seed = cells.pivot(index="scale", columns="seed", values="validation").to_numpy()
    best = table["validation_verdict"] == "best"
    reference = scale_verdicts(per_seed, None, 0.95, margin=0.05, reference=int(np.flatnonzero(best)[0])).table
    np.testing.assert_allclose(table.loc[~best, "validation_low"], reference.loc[~best, "ci_low"])
    np.testing.assert_allclose(table.loc[~best, "validation_high"], reference.loc[~best, "ci_high"])
    np.testing.assert_allclose(table["validation_diff"], reference["diff_to_best"])
    # the words are the engine's: a whole interval inside +-margin is *equivalent* even when it also lies above 0
    # (ranked below, by less than the margin); scale 20 is such a case here
    low, high = table.loc[~best, "validation_low"], table.loc[~best, "validation_high"]
    inside = (low >= -0.05) & (high <= 0.05)
    expected = np.where(inside, "equivalent", np.where(low > 0, "worse", "not distinguishable"))
    assert table.loc[~best, "validation_verdict"].tolist() == expected.tolist()
    assert reference.loc[~best, "verdict"].tolist() == expected.tolist()
    assert "equivalent" in expected and (low > 0).all()


def test_on_test_a_scale_can_beat_the_best_chosen_on_validation_or_be_equivalent_to_it():
    rows = [
        {"scale": scale, "condition": 0.01, "seed": float(seed)}
        | {"validation": validation + 0.01 * seed, "test": test + 0.02 * seed + 0.001 * (seed % 2)}
        for scale, validation, test in ((10.0, 0.80, 0.60), (20.0, 0.70, 0.70), (30.0, 0.70, 0.601))
        for seed in range(4)
    ]
    table = tuned_comparison(pd.DataFrame(rows)).table.set_index("scale")
    assert table["validation_verdict"].to_dict() == {10.0: "best", 20.0: "worse", 30.0: "worse"}
    assert table["test_verdict"].to_dict() == {10.0: "best", 20.0: BETTER, 30.0: "equivalent"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: pd.concat([f, f.iloc[[0]]]), "appears twice"),
        (lambda f: f.drop(index=5), "lacks a validation score for seed(s) 2"),
        (lambda f: f.assign(test=f["test"].where(f.index != 4)), "lacks a test score for seed(s) 1"),
        (lambda f: f[f["seed"] == 0], "need at least two seeds"),
        (lambda f: f.drop(columns="test"), "lacks the column(s) test"),
    ],
    ids=["duplicate", "missing seed", "missing test score", "one seed", "no test column"],
)
def test_frames_that_cannot_be_paired_by_seed_are_refused(change, message):
    frame = simulated_study(np.random.default_rng(4))
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tuned_comparison(change(frame))

"""One round of a race over seeds (`sweep.stats.race.race_round`): who is out, and when the race ends."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sweep.stats.bootstrap import paired_bootstrap
from sweep.stats.race import ALL_EQUIVALENT, NONE_SCOREABLE, ONE_LEFT, SEEDS_USED, race_round
from sweep.stats.verdicts import BEST, EQUIVALENT, NOT_DISTINGUISHABLE, WORSE
from tests.stats.verdict_simulation import DESIGN, EQUAL, LEVEL, monte_carlo_sd, race_rates

MARGIN = 0.01
N_RACES = 300  # simulated studies per race setting: a share of nominal 0.95 within +-0.025 (2 sd)


def table(*rows: tuple[str, str, bool, float, str]) -> pd.DataFrame:
    """A comparison's table: (label, verdict, in the confidence set, low end of best - this, not scoreable)."""
    return pd.DataFrame(rows, columns=["scale", "verdict", "in_confidence_set", "ci_low", "not_scoreable"])


def test_out_of_the_set_or_collapsed_is_out_and_the_rest_races_on():
    """The race drops exactly what the final answer would call worse (out of the set), whatever the margin."""
    decision = race_round(
        table(
            ("best", BEST, True, np.nan, ""),
            ("close", NOT_DISTINGUISHABLE, True, 0.005, ""),
            ("far", NOT_DISTINGUISHABLE, True, -0.001, ""),  # far below, but the interval still reaches the best
            ("beaten", WORSE, False, 0.003, ""),  # out of the confidence set, though by less than the margin
            ("collapsed", "", False, np.nan, "collapsed with seed #0"),
        ),
        seeds_used=2,
        seeds_total=5,
        margin=MARGIN,
    )
    assert decision.kept == ["best", "close", "far"]
    assert decision.eliminated == ["beaten", "collapsed"]
    assert decision.end == ""


@pytest.mark.parametrize(
    ("rows", "seeds_used", "end"),
    [
        ([("a", BEST, True, np.nan, ""), ("b", WORSE, False, 0.05, "")], 2, ONE_LEFT),
        ([("a", BEST, True, np.nan, ""), ("b", EQUIVALENT, True, -0.004, "")], 2, ALL_EQUIVALENT.format(margin=MARGIN)),
        ([("a", BEST, True, np.nan, ""), ("b", NOT_DISTINGUISHABLE, True, 0.0, "")], 5, SEEDS_USED),
        ([("a", "", False, np.nan, "collapsed"), ("b", "", False, np.nan, "collapsed")], 2, NONE_SCOREABLE),
    ],
    ids=["one-left", "equivalent", "seeds-used", "none-scoreable"],
)
def test_the_race_ends_when_one_is_left_the_rest_are_equivalent_or_the_seeds_run_out(rows, seeds_used, end):
    assert race_round(table(*rows), seeds_used, 5, MARGIN).end == end


def test_two_seeds_of_paired_predictions_drop_a_clearly_worse_point_and_keep_two_tied_ones():
    """With 2 seeds the scale x seed error has (3 - 1)(2 - 1) = 2 degrees of freedom: enough to put out a point far
    below in both seeds, and the two that train alike stay."""
    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 400)
    shared = rng.normal(0, 1.0, (2, 400))  # what a seed's model gets wrong, at every scale of that seed
    tied = gold + shared + rng.normal(0, 0.05, (2, 2, 400))  # two scales that train alike
    worse = gold + shared + rng.normal(0, 2.0, (1, 2, 400))
    comparison = paired_bootstrap(gold, np.concatenate([tied, worse]), [10.0, 15.0, 50.0], n_resamples=300)
    assert comparison.table.set_index("scale").loc[50.0, "verdict"] == WORSE
    decision = race_round(comparison.table, 2, 5, MARGIN)
    assert decision.eliminated == ["50.0"] and sorted(decision.kept) == ["10.0", "15.0"]


@pytest.mark.slow
def test_a_race_that_spends_its_level_over_its_rounds_holds_every_best_as_often_as_its_level():
    """Five equally good scales, 6 seeds, 2 at first (5 rounds): every round is a chance to put a best out, so a race
    whose rounds each compare at 0.95 keeps all five in fewer than 0.95 - 2 sd of 300 races (0.925), while the full
    grid's one comparison and the race at `round_level` (1 - 0.05 / 5 a round) keep them at least that often."""
    floor = LEVEL - 2 * monte_carlo_sd(LEVEL, N_RACES)
    spent, unspent = (race_rates(EQUAL, 6, 2, N_RACES, seed=3, spend=spend) for spend in (True, False))
    assert spent.grid_holds_every_best >= floor
    assert spent.holds_every_best >= floor
    assert unspent.holds_every_best < floor


def test_a_race_that_spends_its_level_still_saves_trials_where_points_are_far_behind():
    """Five scales, two truly best, one 0.05 below: with 5 seeds the race holds both bests as often as its level
    and trains fewer than 0.85 of the full grid's trials (the points far behind leave after 2 seeds)."""
    rates = race_rates(DESIGN, 5, 2, N_RACES, seed=4)
    assert rates.holds_every_best >= LEVEL - 2 * monte_carlo_sd(LEVEL, N_RACES)
    assert rates.trials < 0.85

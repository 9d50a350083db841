"""One round of a race over seeds (`study.race`): which points the paired statistics put out, and whether it ends.

A race (Birattari et al.'s F-race, Maron & Moore's Hoeffding races) trains every point with a few seeds, drops
those the statistics already reject, and adds a seed only for the survivors. Each round compares the survivors on
the seeds they all have with the study's own verdict engine (`sweep.stats.verdicts`, through
`sweep.stats.bootstrap`: seeds as blocks plus the evaluation pairs' bootstrap, max-t simultaneous intervals
over every pair of survivors), or, for an objective known only as one number per trial, the seeds alone
(`seed_comparison`).

**The rule.** A point is out after a round when it is out of the confidence set for the best (some survivor beats it
by a whole simultaneous interval: the rule of the study's final answer, so the race and the answer cannot disagree),
or when it cannot be scored (its model collapsed: `sweep.stats.collapse`). The engine estimates the seed-level error
from the scale x seed interaction, (points - 1)(seeds - 1) degrees of freedom, so the first round of 2 seeds can
already drop points far behind; with one seed nothing is dropped (seed noise unknown).

**The level of a round.** Each round is a chance to put the true best out by a false claim, so a race whose rounds
each compared at the study's level would hold the best less often than the full grid's one comparison does, most
where many points are equally good (`tests/stats/test_race.py` measures it on simulated studies). The race spends
1 - level over the rounds it may take, seeds - min_seeds + 1, in equal shares (Bonferroni): each round compares at
`round_level` (and the first round's early stops, `sweep.stats.early_stop`, judge at it too), so its last set holds
the true best with probability >= level overall, whatever rounds came before. The price is wider intervals in each
round, so points leave a little later.

**The end.** The race ends for a family of points when one point is left, when every remaining point is
*equivalent* to the best (its interval within +-margin: `sweep.stats.verdicts`), or when the seeds run out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from sweep.stats.verdicts import BEST, EQUIVALENT

ONE_LEFT = "one point left"
ALL_EQUIVALENT = "the remaining points are equivalent within +-{margin:g}"
SEEDS_USED = "every seed is used"
NONE_SCOREABLE = "no point is scoreable"


def race_rounds(seeds_total: int, min_seeds: int) -> int:
    """The rounds a race over ``seeds_total`` seeds may take: the first with ``min_seeds``, then one a seed."""
    return seeds_total - min_seeds + 1


def round_level(level: float, rounds: int) -> float:
    """The level each of a race's ``rounds`` compares at so that the whole race holds the best at ``level``:
    1 - (1 - level) / rounds (the module docstring)."""
    return 1 - (1 - level) / rounds


@dataclass(frozen=True)
class RoundDecision:
    """The labels kept and put out by one round, and why the race ends after it ("" when it goes on)."""

    kept: list[str]
    eliminated: list[str]
    end: str


def race_round(table: pd.DataFrame, seeds_used: int, seeds_total: int, margin: float) -> RoundDecision:
    """The round's decision from a comparison's table (`PairedComparison.table`: one row per point, its label in
    ``scale``) on ``seeds_used`` of the ``seeds_total`` seeds; the rule of the module docstring."""
    out = table["not_scoreable"].astype(object).fillna("").ne("") | ~table["in_confidence_set"].astype(bool)
    kept, dropped = table[~out], table[out]
    if kept.empty:
        end = NONE_SCOREABLE
    elif len(kept) == 1:
        end = ONE_LEFT
    elif kept["verdict"].isin([BEST, EQUIVALENT]).all():
        end = ALL_EQUIVALENT.format(margin=margin)
    elif seeds_used >= seeds_total:
        end = SEEDS_USED
    else:
        end = ""
    return RoundDecision([str(s) for s in kept["scale"]], [str(s) for s in dropped["scale"]], end)

"""One round of a race over seeds (`study.race`): which points the paired statistics put out, and whether it ends.

A race (Birattari et al.'s F-race, Maron & Moore's Hoeffding races) trains every point with a few seeds, drops
those the statistics already reject, and adds a seed only for the survivors. Each round compares the survivors on
the seeds they all have with the study's own paired comparison (`sweep.stats.paired_bootstrap`: a paired bootstrap
over the evaluation pairs and the seeds, max-t simultaneous intervals over every pair of survivors, and with 2-9
seeds the per-seed paired t, Bonferroni over the comparisons with the best, whichever is wider deciding), or, for
an objective known only as one number per trial, the per-seed t alone (`seed_comparison`).

**The rule.** A point is out after a round when

1. it is out of the confidence set for the best (some survivor beats it by a whole simultaneous interval: the rule
   of the study's final answer), or
2. the bootstrap interval of best - this lies wholly beyond the equivalence margin (``stats.paired.margin``): worse
   by more than a difference a user would act on, or
3. it cannot be scored (its model collapsed: `sweep.stats.collapse`).

Why the second clause: with 2 seeds the seed t has 1 degree of freedom and, Bonferroni-corrected over 8
comparisons, a critical value near 100, so rule 1 alone drops nothing in the first round, although the bootstrap
over 1,500 evaluation pairs inside those seeds already places scales 0.15 below the best far outside any doubt.
The bootstrap with 2 seeds under-states the seed-to-seed part of the noise (it resamples 2 values), so clause 2 asks
for more than rule 1: the whole interval must clear the margin, not just 0. A wrong drop then needs a seed effect
on the difference larger than the margin on top of the pair-level interval; measured seed spreads of a difference
on a small MNRL set-up are a few thousandths against a margin of 0.01, and the benchmark's replay of a published grid
over every seed order checks the answer (`sweep.bench.race`). From 3 seeds on the seed t
(2 degrees of freedom) takes part in rule 1 as in the final answer.

**The end.** The race ends for a family of points when one point is left, when every remaining point is
*equivalent* to the best (its interval within +-margin: `sweep.stats.scale_verdicts`), or when the seeds run out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from sweep.stats.scale_verdicts import BEST, EQUIVALENT

ONE_LEFT = "one point left"
ALL_EQUIVALENT = "the remaining points are equivalent within +-{margin:g}"
SEEDS_USED = "every seed is used"
NONE_SCOREABLE = "no point is scoreable"


@dataclass(frozen=True)
class RoundDecision:
    """The labels kept and put out by one round, and why the race ends after it ("" when it goes on)."""

    kept: list[str]
    eliminated: list[str]
    end: str


def race_round(table: pd.DataFrame, seeds_used: int, seeds_total: int, margin: float) -> RoundDecision:
    """The round's decision from a comparison's table (`PairedComparison.table`: one row per point, its label in
    ``scale``) on ``seeds_used`` of the ``seeds_total`` seeds; the rule of the module docstring."""
    scoreable = table["not_scoreable"].eq("")
    beyond_margin = pd.to_numeric(table["boot_low"], errors="coerce").gt(margin)
    out = ~scoreable | ~table["in_confidence_set"].astype(bool) | beyond_margin
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

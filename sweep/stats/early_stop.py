"""Stopping a raced trial before its last step (`study.race.stop_early`): can a trial that trails at an evaluation
still enter the confidence set for the best?

A race over seeds (`sweep.stats.race`) trains every grid point with its first seeds in full before it can drop any.
Most of those points are far behind long before their last step, so in those first rounds a trial is judged at each
validation from what the study has logged so far, its *history*: one row per trial and evaluation (``point``,
``seed``, ``step``, ``value``; the trial's own rows included).

**The comparison at step t** (the verdict method's model, `sweep.stats.verdicts`): the values at t of the points
x seeds are point + seed + error, the error's variance sigma_u^2 the point x seed interaction's, estimated from the
points logged at t on every seed of a block of >= 2 seeds (`seed_variance`, (points - 1)(seeds - 1) df). The trial's
point c is compared with each other point q logged at t on all of c's seeds S_c, *paired* within seed:
d_q = mean over S_c of (value_q - value_c), standard error sqrt(2 sigma_u^2 / |S_c|), so that a point with one seed
so far is already compared, against the same seed's other points, with the noise the others' seeds show. The
critical value is Student's t with the block's df at the two-sided level, Bonferroni over every pair of the points
logged at t (the final answer's intervals are simultaneous too; Bonferroni is the more cautious).

**What is still to come.** A trailing point may catch up before the last step. On each seed, among its finished
trials, the leader at t and each trial it led *clearly* (by more than t_crit * sigma_u): the share of that lead the
trailing trial won back by the last step; rho_t is the largest (above 1 where a clear lead was overturned). Only the
leader's leads count: a trial is stopped on a leader's lead, and two far-behind points swapping places say nothing
about catching the best. With no such lead how far a lead shrinks is unknown and nothing stops.

**The rule.** The lead at the end is predicted as the lead at t shrunk by the largest share seen, d_q (1 - rho_t);
stop the trial when some point's predicted lead clears the equivalence margin (`stats.paired.margin`: a point within
it of the best is as good in practice, so the final answer keeps it) by a whole interval:
max_q d_q (1 - rho_t) - t_crit * se > margin. The margin also stands for the evaluation pairs' noise, which the final
answer adds (`sweep.stats.bootstrap`) and a validation's one number per trial cannot show. It never stops at
step 0 (the untrained model) nor at the last step (nothing is saved). A stopped trial is evidence that its point
cannot enter the set for the best, never a score. The rule trusts the finished curves: a point whose curve has a
shape none of them had (a slow start no finished pair showed) is not protected; `tests/stats/test_early_stop.py`
measures its error rate on simulated curves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from sweep.stats.verdicts import DEFAULT_MARGIN, seed_variance

HISTORY_COLUMNS = ["point", "seed", "step", "value"]


@dataclass(frozen=True)
class StopDecision:
    """Whether to stop the trial, against which point, by how much and why (one line for its record)."""

    stop: bool
    reason: str
    leader: str | None = None
    lower_bound: float = math.nan  # the predicted final lead's low end: d_q (1 - rho_t) - t_crit * se
    shrink_share: float = math.nan  # rho_t


def catch_up_share(history: pd.DataFrame, step: int, last_step: int, clear: float) -> float:
    """rho_t of the module docstring: the largest share of a clear lead (> ``clear``) at ``step`` of a seed's leader
    among its finished trials that a trailing finished trial won back by ``last_step`` (0: every such lead held;
    above 1: one was overturned); NaN with no such clear lead."""
    at = history[history["step"].isin([step, last_step])].pivot_table(
        index=["seed", "point"], columns="step", values="value", aggfunc="last"
    )
    if step not in at or last_step not in at:
        return math.nan
    shares = []
    for _, rows in at.dropna().groupby(level="seed"):
        early, late = rows[step].to_numpy(), rows[last_step].to_numpy()
        top = int(np.argmax(early))  # the seed's leader at `step`: the lead a stopped trial is judged on
        lead_early, lead_late = early[top] - early, late[top] - late
        leading = lead_early > clear
        shares.extend(((lead_early - lead_late) / np.where(leading, lead_early, 1.0))[leading])
    return max(0.0, float(np.max(shares))) if shares else math.nan


def variance_block(at_step: pd.DataFrame) -> tuple[float, int]:
    """(sigma_u^2, df) from the largest block of ``at_step`` (points x seeds, NaN where not logged) with every cell
    logged: seeds are left out fewest-logged first until >= 2 points have all the rest; (NaN, 0) when no block of
    >= 2 points x >= 2 seeds exists."""
    block = at_step
    while block.shape[1] >= 2:
        complete = block.dropna()
        if len(complete) >= 2:
            return seed_variance(complete.to_numpy())
        block = block.drop(columns=block.notna().sum().idxmin())
    return math.nan, 0


def stop_early(
    history: pd.DataFrame, point: str, step: int, last_step: int, level: float = 0.95, margin: float = DEFAULT_MARGIN
) -> StopDecision:
    """The rule of the module docstring for ``point``'s trial at ``step`` of ``last_step``, from ``history``
    (`HISTORY_COLUMNS`: every logged validation value of the family's trials, the trial's own up to ``step``)."""
    if step <= 0 or step >= last_step:
        return StopDecision(False, "not before the first evaluation or at the last step")
    at_step = history[history["step"] == step].pivot_table(
        index="point", columns="seed", values="value", aggfunc="last"
    )
    if point not in at_step.index:
        return StopDecision(False, f"{point} has no value at step {step}")
    own_seeds = at_step.columns[at_step.loc[point].notna()]
    others = at_step.drop(index=point)[own_seeds].dropna()
    variance, df = variance_block(at_step)
    if others.empty or df == 0:
        return StopDecision(False, f"no seed-to-seed noise at step {step} yet (needs 2 points x 2 seeds)")
    n_points = len(at_step)
    pairs = n_points * (n_points - 1) // 2
    critical = float(scipy_stats.t.ppf(1 - (1 - level) / (2 * pairs), df))
    share = catch_up_share(history, step, last_step, critical * math.sqrt(variance))
    if math.isnan(share):
        return StopDecision(
            False, "no finished pair of one seed with a clear lead yet: how far a lead shrinks is unknown"
        )
    if share >= 1:
        return StopDecision(False, f"a finished leader's clear lead at step {step} was overturned by step {last_step}")
    lead = (others.to_numpy() - at_step.loc[point, own_seeds].to_numpy()).mean(axis=1)
    lower = np.clip(lead, 0, None) * (1 - share) - critical * math.sqrt(2 * variance / len(own_seeds))
    ahead = int(np.argmax(lower))
    leader, bound = str(others.index[ahead]), float(lower[ahead])
    stop = bound > margin
    reason = (
        f"{leader} leads by {lead[ahead]:.4f} at step {step} on {len(own_seeds)} seed(s); finished pairs won back at "
        f"most {share:.0%} of a clear lead by step {last_step}, leaving {lead[ahead] * (1 - share):.4f} "
        f"(interval's low end {bound:.4f} {'>' if stop else '<='} the margin {margin:g})"
    )
    return StopDecision(stop, reason, leader, bound, share)

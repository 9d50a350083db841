"""One comparison, scale ``a`` against scale ``b``, pooled over distinct conditions (of one or several studies): the
per-seed paired differences, the duplicates that deterministic re-runs make, and the pooled mean with its interval.

The input is a tidy frame, one row per trial: ``source`` (the study), ``condition`` (its label inside the study),
``seed``, ``scale``, ``value`` and ``config`` (a string naming the trial's configuration apart from its scale and
seed). A *unit* is one (source, condition, seed): its trials at ``a`` and ``b`` see the same batches, so its
difference ``value(a) - value(b)`` is paired.

**Duplicates.** A deterministic re-run is not a replication: counting it twice would shrink the interval for
nothing. A unit is dropped as a duplicate of an earlier unit (in the frame's order: the first one is kept) with the
same seed when either

- its ``config`` is the same (the same trial run again, e.g. in another study), or
- its values agree with the earlier unit's within ``tolerance`` at every scale both have (at least two): the same
  computation up to floating-point rounding even when the configs differ in keys that do not matter (a data cap
  above the data set's size; Normalize before a cosine loss, which computes the same loss). The default tolerance,
  ``SAME_RUN_TOLERANCE`` = 1e-4 Spearman, is far below the seed-to-seed spread (about 0.005) and far above the
  rounding differences of such re-runs (about 1e-6); ``tolerance=0`` keeps only bit-identical values.

**Pooled interval: random effects over conditions.** The gap ``a - b`` is not one number: it changes with the
learning rate, the data size, the loss (``sweep.stats.interactions``). The pooled estimate is therefore the mean
over conditions of each condition's mean difference, with a Student-t interval over the condition means (C - 1
degrees of freedom): the two-stage form of the one-way random-effects model ``d = mu + u_condition + e_seed``,
exact for equal seeds per condition, and it needs no estimate of each condition's own variance, which 3 seeds give
too unreliably for inverse-variance (DerSimonian-Laird) weights. It answers "over conditions like these, how much
does a beat b", and is wider than a fixed-effect interval over all seed pairs whenever the gap varies between
conditions. It treats the conditions as independent: seeds shared by the conditions of one study see the same
batches, and a seed effect on the difference common to all of them would make it too narrow. With one condition it
falls back to the t interval over that condition's seed pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sweep.stats.seed_paired import mean_interval

SAME_RUN_TOLERANCE = 1e-4
UNIT = ["source", "condition", "seed"]
DIFFERENCE_COLUMNS = [*UNIT, "difference"]
CONDITION_COLUMNS = ["source", "condition", "n_pairs", "mean", "ci_low", "ci_high", "n_a_beats_b"]
RANDOM_EFFECTS = "random effects over conditions"
ONE_CONDITION = "one condition: t over its seed pairs"


@dataclass(frozen=True)
class Duplicate:
    """A dropped unit, the kept unit it repeats and why (``same config``, ``bit-identical values`` or ``values within
    <tolerance>``)."""

    source: str
    condition: str
    seed: float
    kept_source: str
    kept_condition: str
    reason: str


def _same_run(config: str, values: pd.Series, kept_config: str, kept: pd.Series, tolerance: float) -> str | None:
    """Why two units of one seed are one run (see the module docstring), or None."""
    if config == kept_config:
        return "same config"
    common = values.index.intersection(kept.index)
    if len(common) < 2:
        return None
    gap = float(np.max(np.abs(values[common].to_numpy() - kept[common].to_numpy())))
    if gap == 0:
        return "bit-identical values"
    return f"values within {tolerance:g}" if gap <= tolerance else None


def drop_duplicates(frame: pd.DataFrame, tolerance: float = SAME_RUN_TOLERANCE) -> tuple[pd.DataFrame, list[Duplicate]]:
    """The frame without its duplicate units (the first of each is kept, in the frame's order) and the dropped ones."""
    kept: list[tuple[tuple[str, str, float], str, pd.Series]] = []
    dropped: list[Duplicate] = []
    keep = pd.Series(True, index=frame.index)
    for _, rows in frame.groupby(UNIT, sort=False):
        first = rows.iloc[0]
        unit, config = (str(first["source"]), str(first["condition"]), float(first["seed"])), str(first["config"])
        values = rows.groupby("scale")["value"].mean()
        for (kept_source, kept_condition, kept_seed), kept_config, kept_values in kept:
            reason = _same_run(config, values, kept_config, kept_values, tolerance) if unit[2] == kept_seed else None
            if reason is not None:
                dropped.append(Duplicate(*unit, kept_source, kept_condition, reason))
                keep[rows.index] = False
                break
        else:
            kept.append((unit, config, values))
    return frame[keep], dropped


def paired_differences(frame: pd.DataFrame, a: float, b: float) -> pd.DataFrame:
    """``value(a) - value(b)`` per unit (source, condition, seed) that ran both scales, in the frame's order."""
    at_a, at_b = (frame[frame["scale"] == scale].set_index(UNIT)["value"] for scale in (a, b))
    difference = (at_a - at_b.reindex(at_a.index)).dropna()
    return difference.rename("difference").reset_index()[DIFFERENCE_COLUMNS]


def by_condition(differences: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Per (source, condition): the number of seed pairs, their mean difference with its t interval, and in how
    many of them ``a`` beats ``b`` (a strictly higher value)."""
    rows = []
    for (source, condition), group in differences.groupby(["source", "condition"], sort=False):
        mean, low, high = mean_interval(group["difference"].to_numpy(), level)
        n_beats = int((group["difference"] > 0).sum())
        rows.append(
            {"source": source, "condition": condition, "n_pairs": len(group), "mean": mean}
            | {"ci_low": low, "ci_high": high, "n_a_beats_b": n_beats}
        )
    return pd.DataFrame(rows, columns=CONDITION_COLUMNS)


@dataclass(frozen=True)
class Pooled:
    """The pooled difference ``a - b``: its mean over conditions and interval (``method``: random effects over
    conditions, or one condition's seed pairs), the counts, and the sign consistency (``n_a_beats_b`` of
    ``n_pairs`` seed pairs)."""

    mean: float
    ci_low: float
    ci_high: float
    level: float
    method: str
    n_conditions: int
    n_pairs: int
    n_a_beats_b: int


def pool(differences: pd.DataFrame, level: float = 0.95) -> Pooled:
    """Pool the paired differences of :func:`paired_differences` (see the module docstring for the interval)."""
    conditions = by_condition(differences, level)
    if len(conditions) == 1:
        mean, low, high = mean_interval(differences["difference"].to_numpy(), level)
        method = ONE_CONDITION
    else:
        mean, low, high = mean_interval(conditions["mean"].to_numpy(), level)
        method = RANDOM_EFFECTS
    return Pooled(
        mean=mean,
        ci_low=low,
        ci_high=high,
        level=level,
        method=method,
        n_conditions=len(conditions),
        n_pairs=len(differences),
        n_a_beats_b=int((differences["difference"] > 0).sum()),
    )

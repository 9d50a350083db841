"""Each scale at its own best value of a condition (a learning rate, say), compared with the best such scale over
seeds, on validation and on test.

Input: a tidy frame, one row per trial, with ``scale``, ``condition`` (the value tuned per scale), ``seed``,
``validation`` and ``test`` (one metric, higher is better, on each split). Every (scale, condition) cell must hold the
same seeds: the same seed trains on the same batches at every scale and condition, so the comparisons are paired.

**The choice, on validation only.** For each scale the condition value with the highest mean validation score over
seeds is chosen ("each scale at its own best learning rate"); the best scale is the one whose chosen cell has the
highest mean validation score. Where several values tie (within `TIE_TOLERANCE`, e.g. scale 0, which does not train),
the lowest is taken and the others named. The chosen value's place among the values tried *for that scale* is
reported: at the lowest or highest tried, the optimum is not bracketed and the scale may do better outside the grid.

**The comparison.** For each scale, the per-seed differences best minus it (each at its chosen value), their mean and
the verdict engine's simultaneous interval (`sweep.stats.verdicts`: seeds as blocks, max-t over every pair of
chosen cells), on validation and on test. Verdicts from the interval of best - this
(`sweep.stats.verdicts`'s words): *equivalent* when the whole interval lies within +-margin, *worse* when it
lies above 0, *not distinguishable* otherwise; on test also *better* when it lies below 0 (the best was chosen on
validation, so on test another scale can beat it).

**Why test is the honest read.** The condition values and the best scale were chosen on the validation scores, so
the chosen cells' validation means are biased upwards (the maximum of noisy means) and the validation intervals
ignore both choices. Test scores played no part in either choice: their intervals hold for the cells as chosen. They
are free of the validation pairs' noise, though not of the training noise of the seeds that the choice also used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sweep.stats.verdicts import (
    BEST,
    DEFAULT_MARGIN,
    EQUIVALENT,
    NOT_DISTINGUISHABLE,
    WORSE,
    scale_verdicts,
)

SCALE, CONDITION, SEED, VALIDATION, TEST = "scale", "condition", "seed", "validation", "test"
SPLITS = (VALIDATION, TEST)
BETTER = "better"  # on test only: the scale beats the best chosen on validation by a whole interval
TIE_TOLERANCE = 1e-9  # condition values whose mean validation scores agree this closely tie (a scale that never trains)
# where the chosen value lies among the values tried for its scale
INSIDE, LOWEST, HIGHEST, ONLY_ONE, ALL_TIED = "inside", "lowest tried", "highest tried", "only one tried", "all tied"
EDGES = (LOWEST, HIGHEST, ONLY_ONE)  # not bracketed: the scale's optimum may lie outside the values tried
COLUMNS = [
    "scale",
    "tried",
    "chosen",
    "position",
    "tied_with",
    "n_seeds",
    *(f"{split}_{stat}" for split in SPLITS for stat in ("mean", "diff", "low", "high", "verdict")),
]


@dataclass(frozen=True)
class TunedComparison:
    """One row per scale (`COLUMNS`, by scale): the values tried, the chosen one and its place among them, the
    means at the chosen value and best - this with its simultaneous interval and verdict per split."""

    table: pd.DataFrame
    best_scale: float
    seeds: list[float]
    level: float
    margin: float

    @property
    def n_comparisons(self) -> int:
        """The comparisons with the best (the simultaneous intervals cover every pair of scales, these included)."""
        return len(self.table) - 1

    @property
    def best(self) -> pd.Series:
        """The best scale's row."""
        return self.table.set_index("scale").loc[self.best_scale]


def per_seed_cells(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per split, ``frame``'s scores as one row per (scale, condition) and one column per seed; ValueError when a
    column is missing, a (scale, condition, seed) appears twice, a cell lacks a seed another has, or there are fewer
    than two seeds (no interval over seeds)."""
    missing = [column for column in (SCALE, CONDITION, SEED, *SPLITS) if column not in frame]
    if missing:
        raise ValueError(f"the frame lacks the column(s) {', '.join(missing)}")
    keys = [SCALE, CONDITION, SEED]
    repeated = frame[frame.duplicated(keys)]
    if not repeated.empty:
        first = repeated.iloc[0]
        raise ValueError(f"scale {first[SCALE]:g} at {first[CONDITION]:g}, seed {first[SEED]:g} appears twice")
    seeds = sorted(frame[SEED].unique())
    if len(seeds) < 2:
        raise ValueError(f"need at least two seeds for an interval over seeds; got {len(seeds)}")
    cells = {split: frame.pivot(index=[SCALE, CONDITION], columns=SEED, values=split).sort_index() for split in SPLITS}
    for split, wide in cells.items():
        holes = wide[wide.isna().any(axis=1)]
        if not holes.empty:
            (scale, value), row = holes.index[0], holes.iloc[0]
            lacking = ", ".join(f"{seed:g}" for seed, score in row.items() if pd.isna(score))
            raise ValueError(
                f"scale {scale:g} at {value:g} lacks a {split} score for seed(s) {lacking}: every (scale, condition) "
                "needs the same seeds to be paired"
            )
    return cells


def _position(tried: list[float], chosen: float, tied: list[float]) -> str:
    """Where ``chosen`` lies among the values ``tried`` for its scale (`INSIDE`, an edge, or `ALL_TIED`)."""
    if len(tried) == 1:
        return ONLY_ONE
    if len(tied) + 1 == len(tried):
        return ALL_TIED
    if chosen == tried[0]:
        return LOWEST
    return HIGHEST if chosen == tried[-1] else INSIDE


def choose_conditions(validation: pd.DataFrame) -> pd.DataFrame:
    """Per scale of `per_seed_cells`' validation frame: the values tried, the one with the highest mean score (the
    lowest of those tied), the others tied with it, and the chosen value's place among those tried."""
    means = validation.mean(axis=1)
    rows = []
    for scale in sorted(set(means.index.get_level_values(SCALE))):
        by_value = means.xs(scale, level=SCALE).sort_index()
        tried = by_value.index.astype(float).tolist()
        top = by_value.index[by_value >= by_value.max() - TIE_TOLERANCE].astype(float).tolist()
        chosen, tied = top[0], top[1:]
        rows.append(
            {"scale": float(scale), "tried": tried, "chosen": chosen, "tied_with": tied}
            | {"position": _position(tried, chosen, tied)}
        )
    return pd.DataFrame(rows)


def against_reference(
    per_seed: np.ndarray, reference: int, level: float = 0.95, margin: float = DEFAULT_MARGIN
) -> pd.DataFrame:
    """Per row of ``per_seed`` (scales, seeds): the mean of reference - it, its simultaneous interval from the verdict
    engine (`sweep.stats.verdicts`: seeds as blocks, max-t over every pair of rows), and the verdict (`BEST`
    for the reference, NaN bounds there; NaN bounds and *not distinguishable* everywhere with one seed)."""
    per_seed = np.asarray(per_seed, dtype=float)
    engine = scale_verdicts(per_seed, None, level, margin, reference=reference).table
    diff = engine["diff_to_best"].to_numpy()
    low, high = engine["ci_low"].to_numpy().copy(), engine["ci_high"].to_numpy().copy()
    with np.errstate(invalid="ignore"):
        verdict = np.where(
            (low >= -margin) & (high <= margin),
            EQUIVALENT,
            np.where(low > 0, WORSE, np.where(high < 0, BETTER, NOT_DISTINGUISHABLE)),
        ).astype(object)
    verdict[reference] = BEST
    low[reference], high[reference] = np.nan, np.nan
    return pd.DataFrame({"diff": diff, "low": low, "high": high, "verdict": verdict})


def tuned_comparison(frame: pd.DataFrame, level: float = 0.95, margin: float = DEFAULT_MARGIN) -> TunedComparison:
    """The module docstring's choice and comparison on ``frame`` (its columns: `SCALE`, `CONDITION`, `SEED`,
    `VALIDATION`, `TEST`); ValueError as `per_seed_cells`, or for a level outside (0, 1) or a negative margin."""
    if not 0 < level < 1 or margin < 0:
        raise ValueError(f"need level in (0, 1) and margin >= 0; got level {level}, margin {margin}")
    wide = per_seed_cells(frame)
    chosen = choose_conditions(wide[VALIDATION])
    cells = pd.MultiIndex.from_arrays([chosen["scale"], chosen["chosen"]])
    table = chosen.assign(n_seeds=wide[VALIDATION].shape[1])
    best = int(np.argmax(wide[VALIDATION].loc[cells].to_numpy().mean(axis=1)))
    for split in SPLITS:
        scores = wide[split].loc[cells].to_numpy()
        compared = against_reference(scores, best, level, margin)
        table[f"{split}_mean"] = scores.mean(axis=1)
        for stat in ("diff", "low", "high", "verdict"):
            table[f"{split}_{stat}"] = compared[stat].to_numpy()
    seeds = [float(seed) for seed in wide[VALIDATION].columns]
    return TunedComparison(table[COLUMNS], float(table["scale"].iloc[best]), seeds, level, margin)

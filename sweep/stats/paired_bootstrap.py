"""Paired bootstrap of STSB Spearman across scales: which scales cannot be told apart from the best one.

Trials that differ only in scale (same seed) train on the same batches and are scored on the same evaluation
pairs, so their Spearman correlations are compared *paired*. Rule, for one condition (the swept parameters other
than scale and seed held fixed), with predictions of shape (scales, seeds, pairs); a study that sweeps other keys
instead of one scale (AnglE's three scales, its weights) compares its grid points the same way, labelled by name:

1. point estimate per scale: the mean over seeds of the Spearman correlation on all pairs; the best scale has the
   highest one;
2. each of ``n_resamples`` bootstrap resamples draws the evaluation pairs with replacement and, with several seeds,
   the seeds with replacement too; every scale is scored on the *same* drawn pairs and seeds (the pairing);
3. the resampled statistic per scale is the mean over the drawn seeds of the Spearman on the drawn pairs, and the
   difference is best minus that scale;
4. a scale is *not distinguishable from the best* at level ``level`` when the percentile interval of that difference
   (quantiles (1 - level)/2 and (1 + level)/2) contains 0.

A scale whose predictions collapsed with some seed (`sweep.stats.collapse`: cosines without spread, constant ones
included, whose Spearman is undefined) is *not scoreable*: it is left out before step 1, its row says why
(``not_scoreable``) and carries no Spearman, difference or interval, it is never the best, and the other scales are
compared as if it had not been swept (the same resamples). With no scoreable scale there is no best.

The resampling is vectorised numpy rather than ``scipy.stats.bootstrap(paired=True)``: every scale must share one
draw of pairs *and* of seeds, and the statistic is a whole vector of differences, which scipy's interface does not
express; ranks come from ``scipy.stats.rankdata`` (ties averaged, as in Spearman).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from sweep.stats.collapse import COLLAPSE_STD, collapse_reason

CHUNK = 25  # resamples ranked at once: (scales x seeds x CHUNK x pairs) floats
MEASURED = ("spearman", "diff_to_best", "ci_low", "ci_high")  # the table's numbers (NaN for a scale not scoreable)


def _spearman(ranked_gold: np.ndarray, ranked_predictions: np.ndarray) -> np.ndarray:
    """Pearson correlation of ranks along the last axis (ranks already computed), broadcasting."""
    g = ranked_gold - ranked_gold.mean(axis=-1, keepdims=True)
    p = ranked_predictions - ranked_predictions.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (g * p).sum(axis=-1) / np.sqrt((g * g).sum(axis=-1) * (p * p).sum(axis=-1))


@dataclass(frozen=True)
class PairedComparison:
    """The result for one condition: ``table`` has one row per scale or grid point (``scale, spearman,
    diff_to_best, ci_low, ci_high, best, indistinguishable, not_scoreable``; ``not_scoreable`` is empty for a
    scale that was compared, else why it was left out)."""

    table: pd.DataFrame
    n_pairs: int
    n_seeds: int
    n_resamples: int
    level: float

    @property
    def best(self) -> pd.Series:
        """The best scale's row (IndexError when no scale was scoreable)."""
        return self.table.loc[self.table["best"]].iloc[0]

    def line(self, condition: str = "") -> str:
        """``best scale 10 (0.751); not distinguishable from it: 5, 15, 20 (paired bootstrap, 1,500 pairs x 3
        seeds, 95%)``, then the scales left out (``; not scoreable (collapsed: ...): 1, 2``), prefixed with the
        condition when there is one."""
        numeric = pd.api.types.is_numeric_dtype(self.table["scale"])

        def listed(scales: pd.Series) -> str:
            return (", " if numeric else "; ").join(f"{s:g}" if numeric else f"({s})" for s in scales) or "none"

        others = self.table[self.table["indistinguishable"] & ~self.table["best"]]["scale"]
        seeds = f"{self.n_seeds} seed{'s' if self.n_seeds != 1 else ''}"
        if self.table["best"].any():
            best = f"scale {self.best['scale']:g}" if numeric else f"point ({self.best['scale']})"
            text = (
                f"best {best} ({self.best['spearman']:.3f}); not distinguishable from it: {listed(others)} "
                f"(paired bootstrap, {self.n_pairs:,} pairs x {seeds}, {self.level:.0%})"
            )
        else:
            text = f"no best {'scale' if numeric else 'point'}: none is scoreable"
        excluded = self.table[self.table["not_scoreable"] != ""]["scale"]
        if not excluded.empty:
            text += f"; not scoreable (collapsed: cosine std < {COLLAPSE_STD:g} with some seed): {listed(excluded)}"
        return f"{condition}: {text}" if condition else text


def paired_bootstrap(
    gold: np.ndarray,
    predictions: np.ndarray,
    scales: Sequence[float] | Sequence[str],
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """The paired comparison of the module docstring. ``predictions[i, k, j]``: the predicted similarity of pair
    ``j`` by the trial at ``scales[i]`` (a scale, or a grid point's label) with the k-th seed; ``gold[j]`` its gold
    score."""
    gold = np.asarray(gold, dtype=np.float64)
    predictions = np.asarray(predictions, dtype=np.float64)
    n_scales, n_seeds, n_pairs = predictions.shape
    if n_scales != len(scales) or n_pairs != gold.size or n_pairs < 3 or n_resamples < 1 or not 0 < level < 1:
        raise ValueError(
            f"need predictions (scales={len(scales)}, seeds, pairs={gold.size} >= 3), n_resamples >= 1 and level "
            f"in (0, 1); got shape {predictions.shape}, n_resamples {n_resamples}, level {level}"
        )
    reasons = [_not_scoreable(by_seed) for by_seed in predictions]
    scored = np.flatnonzero([reason == "" for reason in reasons])
    columns = {name: np.full(n_scales, np.nan) for name in MEASURED}
    best, indistinguishable = np.zeros(n_scales, dtype=bool), np.zeros(n_scales, dtype=bool)
    if scored.size:
        measured, tied, best_of_scored = _compare(gold, predictions[scored], n_resamples, level, seed)
        for name, values in measured.items():
            columns[name][scored] = values
        indistinguishable[scored] = tied
        best[scored[best_of_scored]] = True
    table = pd.DataFrame(
        {
            "scale": list(scales) if any(isinstance(s, str) for s in scales) else np.asarray(scales, dtype=float),
            **columns,
            "best": best,
            "indistinguishable": indistinguishable,
            "not_scoreable": reasons,
        }
    )
    return PairedComparison(table.sort_values("scale", ignore_index=True), n_pairs, n_seeds, n_resamples, level)


def _not_scoreable(by_seed: np.ndarray) -> str:
    """Why one scale's predictions (seeds, pairs) cannot be scored (a seed's collapsed), or "" when they can."""
    for k, cosines in enumerate(by_seed):
        reason = collapse_reason(cosines)
        if reason is not None:
            return f"collapsed with seed #{k}: {reason}"
    return ""


def _compare(
    gold: np.ndarray, predictions: np.ndarray, n_resamples: int, level: float, seed: int
) -> tuple[dict[str, np.ndarray], np.ndarray, int]:
    """Steps 1 to 4 on scoreable predictions (scales, seeds, pairs): the `MEASURED` columns, whether each scale is
    not distinguishable from the best, and the best scale's index."""
    _, n_seeds, n_pairs = predictions.shape
    point = _spearman(rankdata(gold), rankdata(predictions, axis=-1)).mean(axis=1)  # (scales,)
    best = int(np.argmax(point))
    rng = np.random.default_rng(seed)
    statistics = []
    for start in range(0, n_resamples, CHUNK):
        m = min(CHUNK, n_resamples - start)
        pairs = rng.integers(0, n_pairs, size=(m, n_pairs))
        seeds = rng.integers(0, n_seeds, size=(m, n_seeds)) if n_seeds > 1 else np.zeros((m, 1), dtype=int)
        rho = _spearman(rankdata(gold[pairs], axis=-1), rankdata(predictions[:, :, pairs], axis=-1))  # (S, K, m)
        drawn = np.take_along_axis(rho, seeds.T[None], axis=1)  # (S, drawn seeds, m): the same seeds for all scales
        statistics.append(drawn.mean(axis=1))
    resampled = np.concatenate(statistics, axis=1)  # (S, n_resamples)
    differences = resampled[best][None] - resampled
    low, high = np.quantile(differences, [(1 - level) / 2, (1 + level) / 2], axis=1)
    indistinguishable = (low <= 0) & (high >= 0)
    indistinguishable[best] = True
    measured = {"spearman": point, "diff_to_best": point[best] - point, "ci_low": low, "ci_high": high}
    return measured, indistinguishable, best

"""Paired bootstrap of STSB Spearman across scales: the best scale's confidence set and every scale's verdict.

Trials that differ only in scale (same seed) train on the same batches and are scored on the same evaluation
pairs, so their Spearman correlations are compared *paired*. Rule, for one condition (the swept parameters other
than scale and seed held fixed), with predictions of shape (scales, seeds, pairs); a study that sweeps other keys
instead of one scale (AnglE's three scales, its weights) compares its grid points the same way, labelled by name:

1. point estimate per scale: the mean over seeds of the Spearman correlation on all pairs; the best scale has the
   highest one;
2. each of ``n_resamples`` bootstrap resamples draws the evaluation pairs with replacement and, with several seeds,
   the seeds with replacement too; every scale is scored on the *same* drawn pairs and seeds (the pairing);
3. the resampled statistic per scale is the mean over the drawn seeds of the Spearman on the drawn pairs;
4. `sweep.stats.scale_verdicts` turns the resamples (and, with 2-9 seeds, the per-seed Spearman) into the confidence
   set for the best, P(best), simultaneous intervals of best - this and the verdicts *equivalent* (within the
   margin), *not distinguishable* and *worse*.

A scale whose predictions collapsed with some seed (`sweep.stats.collapse`: cosines without spread, constant ones
included, whose Spearman is undefined) is *not scoreable*: it is left out before step 1, its row says why
(``not_scoreable``) and carries no Spearman, difference or interval, it is never the best, and the other scales are
compared as if it had not been swept (the same resamples). With no scoreable scale there is no best.

The resampling is vectorised numpy rather than ``scipy.stats.bootstrap(paired=True)``: every scale must share one
draw of pairs *and* of seeds, and the statistic is a whole vector of scales, which scipy's interface does not
express; ranks come from ``scipy.stats.rankdata`` (ties averaged, as in Spearman).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from sweep.stats.collapse import COLLAPSE_STD, collapse_reason
from sweep.stats.scale_verdicts import (
    BEST,
    COLUMNS,
    DEFAULT_MARGIN,
    ELIMINATED_AFTER,
    EQUIVALENT,
    NOT_DISTINGUISHABLE,
    WORSE,
    Verdicts,
    scale_verdicts,
)

CHUNK = 25  # resamples ranked at once: (scales x seeds x CHUNK x pairs) floats
NUMBERS = [c for c in COLUMNS if c not in ("in_confidence_set", "verdict")]  # NaN for a scale not scoreable


def _spearman(ranked_gold: np.ndarray, ranked_predictions: np.ndarray) -> np.ndarray:
    """Pearson correlation of ranks along the last axis (ranks already computed), broadcasting."""
    g = ranked_gold - ranked_gold.mean(axis=-1, keepdims=True)
    p = ranked_predictions - ranked_predictions.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (g * p).sum(axis=-1) / np.sqrt((g * g).sum(axis=-1) * (p * p).sum(axis=-1))


def listed(scales: pd.Series, numeric: bool) -> str:
    """``5, 15, 20`` (scales) or ``(a=1, b=2); (a=2, b=1)`` (grid points), ``none`` when empty."""
    return (", " if numeric else "; ").join(f"{s:g}" if numeric else f"({s})" for s in scales) or "none"


@dataclass(frozen=True)
class PairedComparison:
    """The result for one condition: ``table`` has one row per scale or grid point (``scale, spearman``, the
    `sweep.stats.scale_verdicts.COLUMNS`, ``best, indistinguishable, not_scoreable``; ``indistinguishable`` is
    "not shown worse", ``not_scoreable`` is empty for a scale that was compared, else why it was left out)."""

    table: pd.DataFrame
    n_pairs: int
    n_seeds: int
    n_resamples: int
    level: float
    margin: float = DEFAULT_MARGIN
    correction: str = ""

    @property
    def best(self) -> pd.Series:
        """The best scale's row (IndexError when no scale was scoreable)."""
        return self.table.loc[self.table["best"]].iloc[0]

    @property
    def numeric(self) -> bool:
        return pd.api.types.is_numeric_dtype(self.table["scale"])

    def confidence_set(self) -> str:
        """``10 (P(best) 0.71), 15 (0.29)``: the scales in the confidence set, most often best first."""
        rows = self.table[self.table["in_confidence_set"].eq(True)]
        if not self.n_resamples:  # from seeds alone: no P(best)
            return listed(rows["scale"], self.numeric)
        rows = rows.sort_values("p_best", ascending=False)
        names = [f"{s:g}" if self.numeric else f"({s})" for s in rows["scale"]]
        shares = [f"P(best) {p:.2f}" if i == 0 else f"{p:.2f}" for i, p in enumerate(rows["p_best"])]
        return ", ".join(f"{name} ({share})" for name, share in zip(names, shares, strict=True))

    def method(self) -> str:
        """What the numbers rest on, in words."""
        seeds = f"{self.n_seeds} seed{'s' if self.n_seeds != 1 else ''}"
        if not self.n_resamples:
            return f"one score per trial, {seeds}, no per-pair predictions: no bootstrap, no P(best)"
        return f"paired bootstrap, {self.n_pairs:,} pairs x {seeds}, {self.n_resamples:,} resamples"

    def line(self, condition: str = "") -> str:
        """``best scale 10 (0.732); 95% confidence set for the best: 10 (P(best) 0.71), 15 (0.29); equivalent to it
        (within +-0.01): none; not distinguishable: 15; worse: 1, 2, 50 (paired bootstrap, 1,500 pairs x 3 seeds;
        max-t ...)``, then the scales left out (``; not scoreable (collapsed: ...): 1, 2``), prefixed with the
        condition when there is one."""
        if self.table["best"].any():
            best = f"scale {self.best['scale']:g}" if self.numeric else f"point ({self.best['scale']})"
            groups = {
                v: self.table[self.table["verdict"] == v]["scale"] for v in (EQUIVALENT, NOT_DISTINGUISHABLE, WORSE)
            }
            text = (
                f"best {best} ({self.best['spearman']:.3f}); {self.level:.0%} confidence set for the best: "
                f"{self.confidence_set()}; equivalent to it (within +-{self.margin:g}): "
                f"{listed(groups[EQUIVALENT], self.numeric)}; not distinguishable: "
                f"{listed(groups[NOT_DISTINGUISHABLE], self.numeric)}; worse: {listed(groups[WORSE], self.numeric)} "
                f"({self.method()}; simultaneous: {self.correction})"
            )
        else:
            text = f"no best {'scale' if self.numeric else 'point'}: none is scoreable"
        excluded = self.table[self.table["not_scoreable"] != ""]["scale"]
        if not excluded.empty:
            text += (
                f"; not scoreable (collapsed: cosine std < {COLLAPSE_STD:g} with some seed): "
                f"{listed(excluded, self.numeric)}"
            )
        text += self.race()
        return f"{condition}: {text}" if condition else text

    def race(self) -> str:
        """``; eliminated by the race: after 2 seeds: 1, 2; after 3 seeds: 20`` for a raced study (a point dropped
        before the last round has only its own seeds and is not in the comparison above), else ""."""
        if ELIMINATED_AFTER not in self.table or self.table[ELIMINATED_AFTER].isna().all():
            return ""
        dropped = self.table.dropna(subset=[ELIMINATED_AFTER])
        groups = [
            f"after {int(seeds)} seeds: {listed(rows['scale'], self.numeric)}"
            for seeds, rows in dropped.groupby(ELIMINATED_AFTER, sort=True)
        ]
        return f"; eliminated by the race: {'; '.join(groups)}"


def paired_bootstrap(
    gold: np.ndarray,
    predictions: np.ndarray,
    scales: Sequence[float] | Sequence[str],
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    margin: float = DEFAULT_MARGIN,
) -> PairedComparison:
    """The paired comparison of the module docstring. ``predictions[i, k, j]``: the predicted similarity of pair
    ``j`` by the trial at ``scales[i]`` (a scale, or a grid point's label) with the k-th seed; ``gold[j]`` its gold
    score."""
    gold = np.asarray(gold, dtype=np.float64)
    predictions = np.asarray(predictions, dtype=np.float64)
    n_scales, n_seeds, n_pairs = predictions.shape
    if n_scales != len(scales) or n_pairs != gold.size or n_pairs < 3 or n_resamples < 2 or not 0 < level < 1:
        raise ValueError(
            f"need predictions (scales={len(scales)}, seeds, pairs={gold.size} >= 3), n_resamples >= 2 and level "
            f"in (0, 1); got shape {predictions.shape}, n_resamples {n_resamples}, level {level}"
        )
    reasons = [_not_scoreable(by_seed) for by_seed in predictions]
    scored = np.flatnonzero([reason == "" for reason in reasons])
    verdicts = None
    if scored.size:
        point, resampled, per_seed = _resample(gold, predictions[scored], n_resamples, seed)
        verdicts = scale_verdicts(point, resampled, per_seed, level, margin)
    table = _table(scales, scored, point if scored.size else np.empty(0), verdicts, reasons)
    correction = verdicts.correction if verdicts else ""
    return PairedComparison(table, n_pairs, n_seeds, n_resamples, level, margin, correction)


def seed_comparison(
    per_seed: np.ndarray, scales: Sequence[float] | Sequence[str], level: float = 0.95, margin: float = DEFAULT_MARGIN
) -> PairedComparison:
    """The same verdicts from the per-seed Spearman alone, ``per_seed`` (scales, seeds): for a results folder that
    ships no per-pair predictions, so nothing can be resampled (no P(best); the seed interval decides)."""
    per_seed = np.asarray(per_seed, dtype=np.float64)
    scored = np.flatnonzero(~np.isnan(per_seed).any(axis=1))
    reasons = ["" if i in scored else "no Spearman (collapsed)" for i in range(len(scales))]
    point = per_seed[scored].mean(axis=1)
    verdicts = scale_verdicts(point, None, per_seed[scored], level, margin) if scored.size else None
    table = _table(scales, scored, point, verdicts, reasons)
    correction = verdicts.correction if verdicts else ""
    return PairedComparison(table, 0, per_seed.shape[1], 0, level, margin, correction)


def _table(
    scales: Sequence[float] | Sequence[str],
    scored: np.ndarray,
    point: np.ndarray,
    verdicts: Verdicts | None,
    reasons: list[str],
) -> pd.DataFrame:
    """One row per scale: the point estimate and the verdict columns where ``scored``, empty where not."""
    n_scales = len(scales)
    columns: dict[str, np.ndarray] = {name: np.full(n_scales, np.nan) for name in ["spearman", *NUMBERS]}
    in_set, verdict = np.zeros(n_scales, dtype=bool), np.full(n_scales, "", dtype=object)
    best = np.zeros(n_scales, dtype=bool)
    if verdicts is not None:
        columns["spearman"][scored] = point
        for name in NUMBERS:
            columns[name][scored] = verdicts.table[name].to_numpy()
        in_set[scored] = verdicts.table["in_confidence_set"].to_numpy()
        verdict[scored] = verdicts.table["verdict"].to_numpy()
        best[scored[verdicts.best]] = True
    table = pd.DataFrame(
        {
            "scale": list(scales) if any(isinstance(s, str) for s in scales) else np.asarray(scales, dtype=float),
            **columns,
            "in_confidence_set": in_set,
            "verdict": verdict,
            "best": best,
            "indistinguishable": np.isin(verdict, [BEST, EQUIVALENT, NOT_DISTINGUISHABLE]),
            "not_scoreable": reasons,
        }
    )
    return table.sort_values("scale", ignore_index=True)


def _not_scoreable(by_seed: np.ndarray) -> str:
    """Why one scale's predictions (seeds, pairs) cannot be scored (a seed's collapsed), or "" when they can."""
    for k, cosines in enumerate(by_seed):
        reason = collapse_reason(cosines)
        if reason is not None:
            return f"collapsed with seed #{k}: {reason}"
    return ""


def _resample(
    gold: np.ndarray, predictions: np.ndarray, n_resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 1 to 3 on scoreable predictions (scales, seeds, pairs): the point estimates (scales,), the resampled
    statistic (scales, resamples) and the per-seed Spearman on all pairs (scales, seeds)."""
    _, n_seeds, n_pairs = predictions.shape
    per_seed = _spearman(rankdata(gold), rankdata(predictions, axis=-1))  # (scales, seeds)
    rng = np.random.default_rng(seed)
    statistics = []
    for start in range(0, n_resamples, CHUNK):
        m = min(CHUNK, n_resamples - start)
        pairs = rng.integers(0, n_pairs, size=(m, n_pairs))
        seeds = rng.integers(0, n_seeds, size=(m, n_seeds)) if n_seeds > 1 else np.zeros((m, 1), dtype=int)
        rho = _spearman(rankdata(gold[pairs], axis=-1), rankdata(predictions[:, :, pairs], axis=-1))  # (S, K, m)
        drawn = np.take_along_axis(rho, seeds.T[None], axis=1)  # (S, drawn seeds, m): the same seeds for all scales
        statistics.append(drawn.mean(axis=1))
    return per_seed.mean(axis=1), np.concatenate(statistics, axis=1), per_seed

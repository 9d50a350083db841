"""The paired comparison of STSB Spearman across scales from per-pair predictions: the evaluation pairs' bootstrap,
the verdicts it feeds, and the answer line.

Trials that differ only in scale (same seed) train on the same batches and are scored on the same evaluation
pairs, so their Spearman correlations are compared *paired*. For one condition (the swept parameters other than
scale and seed held fixed), with predictions of shape (scales, seeds, pairs); a study that sweeps other keys
instead of one scale (AnglE's three scales, its weights) compares its grid points the same way, labelled by name:

1. per scale and seed, the Spearman correlation on all pairs (``per_seed``); a scale's point estimate is its mean
   over seeds, and the best scale has the highest one;
2. ``n_resamples`` bootstrap resamples draw the evaluation pairs with replacement, one draw shared by every scale
   and seed (the pairing); from them, the covariance across scales of the pairs' error that the seeds share (the
   covariance between *different* seeds' resampled Spearman), or with one seed the whole pairs-only covariance;
3. `sweep.stats.verdicts` combines it with the scale x seed error of ``per_seed`` into one set of joint draws
   of the seed means, and from them the confidence set for the best, P(best), simultaneous intervals of best - this
   and the words; `sweep.stats.optimum` locates the optimum between grid points from the same draws.

A scale whose predictions collapsed with some seed (`sweep.stats.collapse`: cosines without spread, constant ones
included, whose Spearman is undefined) is *not scoreable*: it is left out before step 1, its row says why
(``not_scoreable``) and carries no Spearman, difference or interval, it is never the best, and the other scales are
compared as if it had not been swept. With no scoreable scale there is no best.

The resampling is vectorised numpy rather than ``scipy.stats.bootstrap(paired=True)``: every scale and seed must
share one draw of pairs and the statistic is a whole matrix of scales and seeds, which scipy's interface does not
express; ranks come from ``scipy.stats.rankdata`` (ties averaged, as in Spearman).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from sweep.stats.collapse import COLLAPSE_STD, collapse_reason
from sweep.stats.optimum import MIN_SCALES, Optimum, locate_optimum
from sweep.stats.untrained import UntrainedComparison
from sweep.stats.verdicts import (
    COLUMNS,
    DEFAULT_MARGIN,
    ELIMINATED_AFTER,
    EQUIVALENT,
    LOWER_ON_PAIRS,
    NOT_DISTINGUISHABLE,
    WORSE,
    Verdicts,
    listed,
    percent,
    scale_verdicts,
    verdict_groups,
)

CHUNK = 25  # resamples ranked at once: (scales x seeds x CHUNK x pairs) floats
NUMBERS = [c for c in COLUMNS if c not in ("in_confidence_set", "verdict")]  # NaN for a scale not scoreable
ONE_SEED_WARNING = "one seed: these intervals leave out seed-to-seed noise; add study.seeds"
DETAIL_INDENT = "  "  # a line under an answer (its confidence set, P(best) and method) starts with this


def bullets(lines: list[str]) -> str:
    """Answer lines as a markdown list, each detail line nested under its answer."""
    return "\n".join(f"  - {line.strip()}" if line.startswith(DETAIL_INDENT) else f"- {line}" for line in lines)


def _spearman(ranked_gold: np.ndarray, ranked_predictions: np.ndarray) -> np.ndarray:
    """Pearson correlation of ranks along the last axis (ranks already computed), broadcasting."""
    g = ranked_gold - ranked_gold.mean(axis=-1, keepdims=True)
    p = ranked_predictions - ranked_predictions.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (g * p).sum(axis=-1) / np.sqrt((g * g).sum(axis=-1) * (p * p).sum(axis=-1))


def share(p: float) -> str:
    """P(best) as printed: two decimals, ``<0.01`` for a small share that is not zero, ``0`` for none."""
    return "0" if p == 0 else "<0.01" if p < 0.005 else ">0.99" if p > 0.995 and p < 1 else f"{p:.2f}"


@dataclass(frozen=True)
class PairedComparison:
    """The result for one condition: ``table`` has one row per scale or grid point (``scale, spearman``, the
    `sweep.stats.verdicts.COLUMNS`, ``best, indistinguishable, not_scoreable``; ``indistinguishable`` is
    "in the confidence set", ``not_scoreable`` is empty for a scale that was compared, else why it was left out)."""

    table: pd.DataFrame
    n_pairs: int
    n_seeds: int
    n_resamples: int
    level: float
    margin: float = DEFAULT_MARGIN
    correction: str = ""
    optimum: Optimum | None = None  # between grid points (`sweep.stats.optimum`); None for grid points or one seed
    untrained: UntrainedComparison | None = None  # the best against no training (`sweep.stats.untrained`), if known

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
        if rows["p_best"].isna().all():  # nothing estimated the noise: no P(best)
            return listed(rows["scale"], self.numeric)
        rows = rows.sort_values("p_best", ascending=False)
        names = [f"{s:g}" if self.numeric else f"({s})" for s in rows["scale"]]
        shares = [f"P(best) {share(p)}" if i == 0 else share(p) for i, p in enumerate(rows["p_best"])]
        return ", ".join(f"{name} ({text})" for name, text in zip(names, shares, strict=True))

    def method(self) -> str:
        """What the numbers rest on, in words: the data, then how the intervals were made."""
        seeds = f"{self.n_seeds} seed{'s' if self.n_seeds != 1 else ''}"
        data = (
            f"{seeds} x {self.n_pairs:,} pairs, {self.n_resamples:,} pair resamples"
            if self.n_resamples
            else (f"one score per trial, {seeds}, no per-pair predictions")
        )
        return f"{data}; {self.correction}" if self.correction else data

    def line(self, condition: str = "") -> str:
        """The answer in one line, e.g. ``best scale 10 (0.732); above no training (0.645): +0.087 [+0.071, +0.103];
        as good (within 0.01): 15; cannot tell apart: 20; worse: 1, 50 (3 seeds x 1,500 pairs, 95%)``, then the
        scales left out and a race's drops, prefixed with the condition when there is one; it starts with ``TRAINING
        HURT`` when the best is below the untrained model; with one seed it says that seed noise is left out."""
        if self.table["best"].any():
            best = f"scale {self.best['scale']:g}" if self.numeric else f"point ({self.best['scale']})"
            one_seed = self.n_seeds < 2
            words = (LOWER_ON_PAIRS, NOT_DISTINGUISHABLE) if one_seed else (EQUIVALENT, NOT_DISTINGUISHABLE, WORSE)
            parts = verdict_groups(self.table, "verdict", self.margin, words, self.numeric)
            data = f"{self.n_seeds} seed{'s' if self.n_seeds != 1 else ''}"
            data += f" x {self.n_pairs:,} pairs" if self.n_pairs else ", one score per trial"
            head = f"best {best} ({self.best['spearman']:.3f})"
            head += f", {self.optimum.text()}" if self.optimum is not None else ""
            against = [self.untrained.clause()] if self.untrained is not None else []
            first = [self.untrained.headline()] if self.untrained is not None and self.untrained.hurt else []
            text = "; ".join([*first, head, *against, *parts])
            text += f" ({ONE_SEED_WARNING})" if one_seed else f" ({data}, {percent(self.level)})"
        else:
            text = f"no best {'scale' if self.numeric else 'point'}: none is scoreable"
        excluded = self.table[self.table["not_scoreable"].astype(object).fillna("") != ""][
            "scale"
        ]  # a CSV read back: NaN
        if not excluded.empty:
            text += (
                f"; not scoreable (collapsed: cosine std < {COLLAPSE_STD:g} with some seed): "
                f"{listed(excluded, self.numeric)}"
            )
        text += self.race()
        return f"{condition}: {text}" if condition else text

    def detail(self) -> str:
        """The line under the answer: P(best) of the set's members and the method, e.g. ``P(best): 10 0.71, 15
        0.29, 20 <0.01; 3 seeds x 1,500 pairs, 1,000 pair resamples; seeds as blocks ...``."""
        if not self.table["best"].any():
            return ""
        members = self.confidence_set()
        head = (
            f"{percent(self.level)} confidence set for the best: {members}"
            if self.n_seeds > 1
            else (f"P(best) on these pairs: {members}" if self.n_resamples else "")
        )
        return "; ".join(part for part in (head, f"method: {self.method()}") if part)

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
    verdicts, per_seed = None, np.empty((0, n_seeds))
    if scored.size:
        per_seed, covariance = pair_resamples(gold, predictions[scored], n_resamples, seed)
        verdicts = scale_verdicts(per_seed, covariance, level, margin, seed=seed)
    sizes = (n_pairs, n_seeds, n_resamples)
    return _comparison(scales, scored, per_seed.mean(axis=1), verdicts, reasons, sizes, level, margin)


def seed_comparison(
    per_seed: np.ndarray, scales: Sequence[float] | Sequence[str], level: float = 0.95, margin: float = DEFAULT_MARGIN
) -> PairedComparison:
    """The same verdicts from the per-seed scores alone, ``per_seed`` (scales, seeds): for a results folder that
    ships no per-pair predictions or a metric known as one number per trial (the seeds carry all the noise)."""
    per_seed = np.asarray(per_seed, dtype=np.float64)
    scored = np.flatnonzero(~np.isnan(per_seed).any(axis=1))
    reasons = ["" if i in scored else "no score (collapsed)" for i in range(len(scales))]
    point = per_seed[scored].mean(axis=1)
    verdicts = scale_verdicts(per_seed[scored], None, level, margin) if scored.size else None
    return _comparison(scales, scored, point, verdicts, reasons, (0, per_seed.shape[1], 0), level, margin)


def _comparison(
    scales: Sequence[float] | Sequence[str],
    scored: np.ndarray,
    point: np.ndarray,
    verdicts: Verdicts | None,
    reasons: list[str],
    sizes: tuple[int, int, int],
    level: float,
    margin: float,
) -> PairedComparison:
    """The `PairedComparison` of the scored scales' verdicts, with the optimum between numeric scales when there are
    several seeds (with one the draws leave out seed noise), more than `MIN_SCALES` trained scales (with three, the
    parabola would be the whole curve, not a fit near its peak) and a trained best (when the untrained model, scale
    0, is best, there is no peak of training to locate); ``sizes``: (pairs, seeds, pair resamples)."""
    table = _table(scales, scored, point, verdicts, reasons)
    if verdicts is None:
        return PairedComparison(table, *sizes, level, margin)
    numeric = not any(isinstance(s, str) for s in scales)
    scored_scales = np.asarray(scales, dtype=float)[scored] if numeric else np.empty(0)
    optimum = None
    if verdicts.n_seeds > 1 and (scored_scales > 0).sum() > MIN_SCALES and scored_scales[verdicts.best] > 0:
        optimum = locate_optimum(scored_scales, point, verdicts.draws, level, margin)
        table = table.assign(
            optimum=optimum.estimate, optimum_low=optimum.low, optimum_high=optimum.high, optimum_flag=optimum.flag
        )
    return PairedComparison(table, *sizes, level, margin, verdicts.correction, optimum)


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
            "indistinguishable": in_set,
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


def pair_resamples(
    gold: np.ndarray, predictions: np.ndarray, n_resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1 and 2 on scoreable predictions (scales, seeds, pairs): the per-seed Spearman on all pairs (scales,
    seeds) and the pairs' covariance across scales (scales, scales): shared by the seeds, or with one seed whole."""
    n_scales, n_seeds, n_pairs = predictions.shape
    per_seed = _spearman(rankdata(gold), rankdata(predictions, axis=-1))
    rng = np.random.default_rng(seed)
    drawn = []
    for start in range(0, n_resamples, CHUNK):
        pairs = rng.integers(0, n_pairs, size=(min(CHUNK, n_resamples - start), n_pairs))
        drawn.append(_spearman(rankdata(gold[pairs], axis=-1), rankdata(predictions[:, :, pairs], axis=-1)))
    rho = np.concatenate(drawn, axis=-1)  # (scales, seeds, resamples)
    centred = rho - rho.mean(axis=-1, keepdims=True)
    if n_seeds == 1:
        return per_seed, np.atleast_2d(np.cov(centred[:, 0]))
    total = centred.sum(axis=1)  # (scales, resamples)
    within = np.einsum("irb,jrb->ij", centred, centred)  # same-seed products, left out below
    across = (total @ total.T - within) / ((n_resamples - 1) * n_seeds * (n_seeds - 1))
    return per_seed, (across + across.T) / 2

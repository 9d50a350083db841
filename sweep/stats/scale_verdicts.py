"""Verdicts on the best scale: its confidence set, simultaneous intervals, equivalence within a margin.

Input: for S scales, the point estimates (mean Spearman over seeds), the same statistic on B paired bootstrap
resamples (every scale scored on the same drawn pairs and seeds, `sweep.stats.paired_bootstrap`) and, when there are
2 to `SEED_T_MAX` seeds, the per-seed Spearman of each scale on all pairs.

**Simultaneous intervals (max-t over all pairs of scales).** For every pair (j, k) the bootstrap gives the standard
error of the difference; the critical value ``c`` is the ``level`` quantile over resamples of the largest studentised
deviation max_{j<k} |(D*_jk - D_jk) / se_jk|. Then D_jk +- c se_jk hold for *all* pairs at once with probability about
``level``. The family is every pair, not only "best vs the others", so the intervals stay valid although the best is
chosen on the same data (the winner's curse of intervals against a selected best).

**Confidence set for the best** (the simultaneous-pairwise construction of Mogstad, Romano, Shaikh & Wilhelm 2024,
"Inference for Ranks"; Hansen, Lunde & Nason's model confidence set answers the same question by sequential
elimination): scale j is *out* when some scale k is better by a whole simultaneous interval (D_kj - c se_kj > 0).
The true best is wrongly put out only through a false claim about one of the pairs, so the set holds it with
probability >= ``level``. It is chosen over the set of highest P(best) because that set has no coverage guarantee:
P(best), the share of resamples in which a scale wins when the best is re-selected inside every resample, is
reported beside it as a description, not a test.

**Seeds as the unit when there are few.** Bootstrapping 3 seeds gives 10 distinct draws and acts like z = 1.96 where
a t with 2 degrees of freedom needs 4.30. With 2 to `SEED_T_MAX` seeds, best - this also gets the paired t interval
over the per-seed differences, Bonferroni-corrected over the S - 1 comparisons with the best (the bootstrap's max-t
already covers the choice of the best; a Bonferroni over all pairs with 2 degrees of freedom would leave nothing to
say), and each verdict uses the union of the two intervals (the more conservative one); a scale whose seed interval
does not lie above 0 stays in the confidence set. With more seeds the bootstrap over seeds is trusted alone.

**Verdicts against the best** (the scale with the highest point estimate), from its interval of best - this:
*equivalent* when the whole interval lies within +-``margin`` (two one-sided tests, here at the simultaneous
two-sided level, so conservative); *worse* when the interval lies above 0 (and not within the margin); *not
distinguishable* otherwise: the data are too few to rank them, which is not a claim that they are equal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

SEED_T_MAX = 9  # up to this many seeds, the per-seed paired t interval joins the bootstrap's
DEFAULT_MARGIN = 0.01  # a Spearman difference a user would not act on (`stats.paired.margin`; docs/reports.md says why)
BEST, EQUIVALENT, NOT_DISTINGUISHABLE, WORSE = "best", "equivalent", "not distinguishable", "worse"
VERDICTS = (BEST, EQUIVALENT, NOT_DISTINGUISHABLE, WORSE)
ELIMINATED = "eliminated"  # a raced point dropped before the last comparison (`sweep.stats.race`): its verdict's start
ELIMINATED_AFTER = "eliminated_after"  # a raced comparison's column: the seeds after which the race dropped the point


def eliminated_after(seeds: int) -> str:
    """The verdict of a point a race dropped after ``seeds`` seeds: ``eliminated after 2 seeds``."""
    return f"{ELIMINATED} after {seeds} seed{'s' if seeds != 1 else ''}"


COLUMNS = [
    "diff_to_best",
    "ci_low",
    "ci_high",
    "boot_low",
    "boot_high",
    "seed_low",
    "seed_high",
    "p_best",
    "in_confidence_set",
    "verdict",
]


@dataclass(frozen=True)
class Verdicts:
    """Per scale (in input order) the `COLUMNS`, with the method named for the output lines."""

    table: pd.DataFrame
    best: int
    critical_value: float  # the bootstrap's max-t critical value (NaN without resamples)
    n_pairs_of_scales: int
    bootstrap: bool
    seed_t: bool

    @property
    def correction(self) -> str:
        """How the intervals were made simultaneous, in words."""
        pairs = f"{self.n_pairs_of_scales} pair{'s' if self.n_pairs_of_scales != 1 else ''} of scales"
        methods = [f"max-t bootstrap over all {pairs}"] if self.bootstrap else []
        if self.seed_t:
            methods.append("paired t over seeds, Bonferroni over the comparisons with the best")
        return ", and ".join(methods) or "none (one seed, no resamples)"


def _pairwise(values: np.ndarray) -> np.ndarray:
    """D[j, k] = values[j] - values[k] along the first axis."""
    return values[:, None] - values[None, :]


def bootstrap_intervals(point: np.ndarray, resampled: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(differences D[j, k] = point[j] - point[k], their simultaneous half-widths, the max-t critical value) from
    ``resampled`` (scales, resamples)."""
    differences = _pairwise(point)
    drawn = _pairwise(resampled)  # (S, S, B)
    se = drawn.std(axis=-1, ddof=1)
    upper = np.triu_indices(point.size, k=1)
    spread = se[upper]
    deviations = np.abs(drawn[upper] - differences[upper][:, None])  # (pairs, B)
    with np.errstate(invalid="ignore", divide="ignore"):
        studentised = np.where(spread[:, None] > 0, deviations / spread[:, None], 0.0)
    critical = float(np.quantile(studentised.max(axis=0), level)) if spread.size else 0.0
    return differences, critical * se, critical


def seed_intervals(gaps: np.ndarray, level: float) -> np.ndarray:
    """Half-widths of the paired t intervals over seeds of best - each scale, Bonferroni over the S - 1 comparisons;
    ``gaps`` (scales, seeds): best minus each scale per seed, with at least two seeds."""
    n_scales, n_seeds = gaps.shape
    family = max(n_scales - 1, 1)
    quantile = stats.t.ppf(1 - (1 - level) / (2 * family), n_seeds - 1)
    return quantile * gaps.std(axis=-1, ddof=1) / np.sqrt(n_seeds)


def _confidence_set(differences: np.ndarray, half_widths: np.ndarray) -> np.ndarray:
    """Scale j stays in unless some k beats it by a whole interval: D[k, j] - h[k, j] > 0."""
    beaten = (differences - half_widths) > 0
    np.fill_diagonal(beaten, False)
    return ~beaten.any(axis=0)


def p_best(resampled: np.ndarray) -> np.ndarray:
    """Share of resamples in which each scale has the highest statistic (the best re-selected every time); scales
    tied for the highest share that resample's win equally."""
    top = resampled >= resampled.max(axis=0, keepdims=True) - 1e-12
    return (top / top.sum(axis=0, keepdims=True)).mean(axis=1)


def scale_verdicts(
    point: np.ndarray,
    resampled: np.ndarray | None,
    per_seed: np.ndarray | None = None,
    level: float = 0.95,
    margin: float = DEFAULT_MARGIN,
) -> Verdicts:
    """The verdicts of the module docstring. ``point`` (S,), ``resampled`` (S, B) or None, ``per_seed`` (S, seeds)
    or None. Without resamples (a metric known only as one number per trial) the seed interval decides alone, with
    any number of seeds; with neither, every scale but the best is *not distinguishable* (nothing to decide with)."""
    point = np.asarray(point, dtype=float)
    if resampled is not None and (np.ndim(resampled) != 2 or len(resampled) != point.size):
        raise ValueError(f"need resampled (scales={point.size}, resamples); got shape {np.shape(resampled)}")
    if not 0 < level < 1 or margin < 0:
        raise ValueError(f"need level in (0, 1) and margin >= 0; got level {level}, margin {margin}")
    nan = np.full(point.size, np.nan)
    best = int(np.argmax(point))
    differences = _pairwise(point)
    gap = differences[best]
    boot_low, boot_high, critical, shares = nan, nan, float("nan"), nan
    in_set = np.ones(point.size, dtype=bool)
    if resampled is not None:
        differences, boot_half, critical = bootstrap_intervals(point, np.asarray(resampled, dtype=float), level)
        boot_low, boot_high = gap - boot_half[best], gap + boot_half[best]
        in_set, shares = _confidence_set(differences, boot_half), p_best(np.asarray(resampled, dtype=float))
    seed_low, seed_high = nan, nan
    n_seeds = 0 if per_seed is None else np.shape(per_seed)[1]
    seed_t = n_seeds >= 2 and point.size > 1 and (resampled is None or n_seeds <= SEED_T_MAX)
    if seed_t:
        by_seed = np.asarray(per_seed, dtype=float)
        half = seed_intervals(by_seed[best][None] - by_seed, level)
        seed_low, seed_high = gap - half, gap + half
        seed_in = ~(seed_low > 0)
        in_set = seed_in if resampled is None else in_set | seed_in  # the union of the two sets: conservative
    low, high = np.fmin(boot_low, seed_low), np.fmax(boot_high, seed_high)
    with np.errstate(invalid="ignore"):
        verdict = np.where(
            (low >= -margin) & (high <= margin), EQUIVALENT, np.where(low > 0, WORSE, NOT_DISTINGUISHABLE)
        ).astype(object)
    verdict[best] = BEST
    in_set[best] = True
    table = pd.DataFrame(
        {
            "diff_to_best": gap,
            "ci_low": low,
            "ci_high": high,
            "boot_low": boot_low,
            "boot_high": boot_high,
            "seed_low": seed_low,
            "seed_high": seed_high,
            "p_best": shares,
            "in_confidence_set": in_set,
            "verdict": verdict,
        },
        columns=COLUMNS,
    )
    return Verdicts(table, best, critical, point.size * (point.size - 1) // 2, resampled is not None, seed_t)

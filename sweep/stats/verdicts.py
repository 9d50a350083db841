"""Verdicts on the best scale from one sampling model of the seed means: the confidence set, P(best), intervals, words.

**The design.** Trials that differ only in scale share their seed (the same batches) and are scored on the same
evaluation pairs: a randomized block design with two levels of noise. For scale s and seed r the per-seed score is
rho[s, r] = mu + a_s + b_r + e_s + u_sr, where b_r (the seed's luck, shared by every scale) cancels in any comparison
of scales, e_s is the evaluation set's error common to every seed of scale s (the pairs that happen to favour it),
and u_sr is what differs between seeds of one scale (training noise, and the part of the pair noise that depends on
the trained model). The statistic is the seed mean theta_s; for a contrast c (c sums to 0),

    Var(c . theta) = c' Sigma_e c + sigma_u^2 |c|^2 / R.

- sigma_u^2 is the scale x seed residual mean square of the two-way layout (``per_seed`` after removing scale and
  seed means), with nu = (S - 1)(R - 1) degrees of freedom: the seed-level error pooled over all scales (Montgomery,
  *Design and Analysis of Experiments*, ch. 4, the randomized complete block design).
- Sigma_e is the covariance across scales of the evaluation-set error *shared by the seeds*: from a bootstrap of the
  evaluation pairs (one draw of pairs for every scale and seed), the covariance between the resampled Spearman of
  *different* seeds (their seed-specific parts are independent, so only the shared part co-varies). Within one seed
  that covariance would also hold the seed-specific pair noise that sigma_u^2 already counts; this keeps the two
  levels apart, where a bootstrap of seeds and then pairs counts it twice (the known conservatism of the hierarchical
  bootstrap; Saravanan et al. 2020, "Application of the hierarchical bootstrap to multi-level data in neuroscience").

**One source for every number.** ``DRAWS`` joint draws theta* = theta + N(0, Sigma_e) + sqrt(s2*/R) N(0, I), with
s2* = sigma_u^2 nu / chi2_nu (the scaled inverse chi-square: the uncertainty of the seed variance itself; with
Sigma_e = 0 each contrast's studentised draw is exactly Student t with nu degrees of freedom, and the largest over
all pairs is Tukey's studentised range, which `tests/stats` check against statsmodels and scipy). From the draws:

- simultaneous intervals (max-t over all S(S - 1)/2 pairs of scales): D_jk +- c se_jk, with c the ``level`` quantile
  of max_{j<k} |D*_jk - D_jk| / se_jk; they hold for every pair at once, so also for the pairs with a best chosen on
  the same data;
- the confidence set for the best (Mogstad, Romano, Shaikh & Wilhelm 2024, "Inference for Ranks", the simultaneous-
  pairwise construction): scale j is out when some k beats it by a whole simultaneous interval; the true best is put
  out only through a false claim about a pair, so the set holds it with probability >= ``level``;
- P(best): the share of draws in which each scale is the highest (a description of the same distribution; a scale
  can sit in the set with a small P(best), when the intervals that would put it out are not quite wide enough);
- the words, against the best (the highest point estimate): *equivalent* when the whole interval of best - this lies
  inside +-``margin`` (two one-sided tests at the simultaneous level: as good for any practical purpose, even where
  the data also rank it below); otherwise *worse* when it is out of the set, *not distinguishable* when it is in:
  too few data to rank, not a claim of equality.

**Fewer seeds never give stronger words.** With one seed sigma_u^2 is unknown: the draws hold the evaluation pairs'
noise alone, nothing is put out of the set, no scale is called *worse* or *equivalent*, and a scale whose pairs-only
interval lies below the best is *lower on these pairs* (the line says that seed noise is left out). Without pair
covariance (a metric known as one number per trial) the seeds carry all the noise (Sigma_e = 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

DRAWS = 4000  # joint draws of the seed means: Monte-Carlo error of a 95% critical value about 1%
DEFAULT_MARGIN = 0.01  # a Spearman difference a user would not act on (`stats.paired.margin`; docs/reports.md says why)
BEST, EQUIVALENT, NOT_DISTINGUISHABLE, WORSE = "best", "equivalent", "not distinguishable", "worse"
LOWER_ON_PAIRS = "lower on these pairs"  # one seed: below the best by a pairs-only interval, seed noise unknown
VERDICTS = (BEST, EQUIVALENT, NOT_DISTINGUISHABLE, WORSE, LOWER_ON_PAIRS)
# the answer lines' words for the verdicts (tables keep the verdicts' names; docs/getting-started.md maps them)
LINE_WORDS = {
    EQUIVALENT: "as good (within {margin:g})",
    NOT_DISTINGUISHABLE: "cannot tell apart",
    WORSE: "worse",
    LOWER_ON_PAIRS: "lower on these pairs",
}
ELIMINATED = "eliminated"  # a raced point dropped before the last comparison (`sweep.stats.race`): its verdict's start
ELIMINATED_AFTER = "eliminated_after"  # a raced comparison's column: the seeds after which the race dropped the point
RACE_ROUNDS = "race_rounds"  # a raced study's trials' column: the rounds its race spends the level over


def eliminated_after(seeds: int) -> str:
    """The verdict of a point a race dropped after ``seeds`` seeds: ``eliminated after 2 seeds``."""
    return f"{ELIMINATED} after {seeds} seed{'s' if seeds != 1 else ''}"


def percent(level: float) -> str:
    """``95%``, or ``98.75%`` for a race's round level (`sweep.stats.race.round_level`)."""
    return f"{100 * level:.4g}%"


def listed(scales: pd.Series, numeric: bool = True) -> str:
    """``5, 15, 20`` (scales) or ``(a=1, b=2); (a=2, b=1)`` (grid points), ``none`` when empty."""
    return (", " if numeric else "; ").join(f"{s:g}" if numeric else f"({s})" for s in scales) or "none"


def verdict_groups(
    table: pd.DataFrame,
    column: str,
    margin: float,
    verdicts: tuple[str, ...] = (EQUIVALENT, NOT_DISTINGUISHABLE, WORSE),
    numeric: bool = True,
) -> list[str]:
    """``as good (within 0.01): 10, 20``, one part per verdict of ``verdicts`` in the answer lines' words: the scales
    (or grid points, ``numeric`` False) of ``table`` whose ``column`` holds it; a verdict no scale has is left out,
    except *worse* (``worse: none``)."""
    parts = []
    for verdict in verdicts:
        scales = table.loc[table[column] == verdict, "scale"]
        if not scales.empty or verdict == WORSE:
            parts.append(f"{LINE_WORDS.get(verdict, verdict).format(margin=margin)}: {listed(scales, numeric)}")
    return parts


COLUMNS = ["diff_to_best", "ci_low", "ci_high", "p_best", "in_confidence_set", "verdict"]


@dataclass(frozen=True)
class Verdicts:
    """Per scale (in input order) the `COLUMNS`; the draws they came from (for the optimum) and the method."""

    table: pd.DataFrame
    best: int
    draws: np.ndarray  # (scales, DRAWS) joint draws of the seed means
    critical_value: float  # max-t critical value of the simultaneous intervals
    n_seeds: int
    seed_df: int  # degrees of freedom of the seed-level variance, 0 with one seed
    pairs: bool  # whether the evaluation pairs' covariance took part

    @property
    def correction(self) -> str:
        """How the intervals were made, in words (the method line of the answer)."""
        n = len(self.table)
        family = f"max-t over all {n * (n - 1) // 2} pair{'s' if n != 2 else ''} of scales"
        if self.n_seeds < 2:
            noise = "one seed: evaluation pairs only, seed-to-seed noise left out" if self.pairs else "one seed"
            return f"{noise}; {family}"
        seeds = f"seeds as blocks ({self.seed_df} df for the scale x seed error)"
        return f"{seeds}{' + evaluation pairs (bootstrap)' if self.pairs else ''}; {family}"


def seed_variance(per_seed: np.ndarray) -> tuple[float, int]:
    """(sigma_u^2, nu): the scale x seed residual mean square of ``per_seed`` (scales, seeds) and its degrees of
    freedom (S - 1)(R - 1); (0, 0) with one seed or one scale."""
    n_scales, n_seeds = per_seed.shape
    df = (n_scales - 1) * (n_seeds - 1)
    if df == 0:
        return 0.0, 0
    residual = per_seed - per_seed.mean(axis=1, keepdims=True) - per_seed.mean(axis=0, keepdims=True) + per_seed.mean()
    return float((residual**2).sum() / df), df


def draw_means(
    per_seed: np.ndarray, pair_covariance: np.ndarray | None, n_draws: int = DRAWS, seed: int = 0
) -> tuple[np.ndarray, int]:
    """(draws (scales, n_draws), nu): joint draws of the seed means of the module docstring."""
    n_scales, n_seeds = per_seed.shape
    rng = np.random.default_rng(seed)
    draws = np.repeat(per_seed.mean(axis=1)[:, None], n_draws, axis=1)
    if pair_covariance is not None:
        values, vectors = np.linalg.eigh((pair_covariance + pair_covariance.T) / 2)
        root = vectors * np.sqrt(np.clip(values, 0.0, None))  # a PSD square root, negative estimates set to 0
        draws += root @ rng.standard_normal((n_scales, n_draws))
    variance, df = seed_variance(per_seed)
    if df:
        scaled = variance * df / rng.chisquare(df, size=n_draws)
        draws += np.sqrt(scaled / n_seeds) * rng.standard_normal((n_scales, n_draws))
    return draws, df


def _pairwise(values: np.ndarray) -> np.ndarray:
    """D[j, k] = values[j] - values[k] along the first axis."""
    return values[:, None] - values[None, :]


def simultaneous_intervals(point: np.ndarray, draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(D[j, k] = point[j] - point[k], the simultaneous half-widths, the max-t critical value) from ``draws``."""
    differences, drawn = _pairwise(point), _pairwise(draws)  # (S, S), (S, S, B)
    se = drawn.std(axis=-1, ddof=1)
    upper = np.triu_indices(point.size, k=1)
    spread = se[upper]
    deviations = np.abs(drawn[upper] - differences[upper][:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        studentised = np.where(spread[:, None] > 0, deviations / spread[:, None], 0.0)
    critical = float(np.quantile(studentised.max(axis=0), level)) if spread.size else 0.0
    return differences, critical * se, critical


def p_best(draws: np.ndarray) -> np.ndarray:
    """Share of draws in which each scale is the highest; scales tied for the highest share that draw's win."""
    top = draws >= draws.max(axis=0, keepdims=True) - 1e-12
    return (top / top.sum(axis=0, keepdims=True)).mean(axis=1)


def scale_verdicts(
    per_seed: np.ndarray,
    pair_covariance: np.ndarray | None = None,
    level: float = 0.95,
    margin: float = DEFAULT_MARGIN,
    reference: int | None = None,
    seed: int = 0,
) -> Verdicts:
    """The verdicts of the module docstring. ``per_seed`` (scales, seeds): each trial's score on all evaluation pairs;
    ``pair_covariance`` (scales, scales) or None: Sigma_e with several seeds, the whole pairs-only covariance of the
    one seed's scores with one seed (`sweep.stats.bootstrap` estimates it); ``reference``: the scale compared
    with (default: the highest mean)."""
    per_seed = np.asarray(per_seed, dtype=float)
    if per_seed.ndim != 2 or not per_seed.size or np.isnan(per_seed).any():
        raise ValueError(f"need per_seed (scales, seeds) without NaN; got shape {np.shape(per_seed)}")
    if pair_covariance is not None and np.shape(pair_covariance) != (len(per_seed),) * 2:
        raise ValueError(f"need pair_covariance ({len(per_seed)}, {len(per_seed)}); got {np.shape(pair_covariance)}")
    if not 0 < level < 1 or margin < 0:
        raise ValueError(f"need level in (0, 1) and margin >= 0; got level {level}, margin {margin}")
    n_scales, n_seeds = per_seed.shape
    point = per_seed.mean(axis=1)
    best = int(np.argmax(point)) if reference is None else reference
    draws, df = draw_means(per_seed, pair_covariance, seed=seed)
    differences, half, critical = simultaneous_intervals(point, draws, level)
    gap, low, high = differences[best], differences[best] - half[best], differences[best] + half[best]
    informative = df > 0 or (n_seeds > 1 and pair_covariance is not None)  # some noise was estimated
    estimated = informative or pair_covariance is not None  # intervals to show (one seed: the pairs' alone)
    beaten = (differences - half) > 0
    np.fill_diagonal(beaten, False)
    in_set = ~beaten.any(axis=0) if informative else np.ones(n_scales, dtype=bool)
    if informative:
        equivalent = (low >= -margin) & (high <= margin)  # a whole interval inside the margin: as good in practice
        verdict = np.where(equivalent, EQUIVALENT, np.where(~in_set, WORSE, NOT_DISTINGUISHABLE)).astype(object)
    else:
        with np.errstate(invalid="ignore"):
            lower = (low > 0) & (pair_covariance is not None)
        verdict = np.where(lower, LOWER_ON_PAIRS, NOT_DISTINGUISHABLE).astype(object)
    verdict[best] = BEST
    in_set[best] |= reference is None  # the highest mean is never beaten; a given reference can be
    table = pd.DataFrame(
        {
            "diff_to_best": gap,
            "ci_low": low if estimated else np.nan,
            "ci_high": high if estimated else np.nan,
            "p_best": p_best(draws) if estimated else np.nan,
            "in_confidence_set": in_set,
            "verdict": verdict,
        },
        columns=COLUMNS,
    )
    return Verdicts(table, best, draws, critical, n_seeds, df, pair_covariance is not None)

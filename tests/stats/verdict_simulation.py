"""Simulated studies with a known truth for the verdict engine's tests (`tests/stats/test_scale_verdicts.py`,
`tests/stats/test_verdict_simulation.py`) and for the power table of the docs (`benchmarks/verdict_power.py`).

**The truth.** Each scale s has a true Spearman ``truth[s]``; a trained model (scale s, seed r) has the population
Spearman ``truth[s] + b_r + u_sr``: ``b_r`` is the seed's luck shared by every scale (it cancels in a comparison) and
``u_sr`` the scale x seed training noise, both *additive and mean-zero on the population Spearman*, so the mean over
seeds of the scales' population Spearman is ``truth`` exactly and every true difference is known.

**Layer (b), the seed means alone** (`gaussian_study`, fast): ``per_seed[s, r] = truth[s] + b_r + e_s + u_sr + w_sr``
with ``e ~ N(0, Sigma_e)`` the evaluation pairs' error shared by the seeds (`pair_covariance`: SD `PAIR_SD` per
scale, correlation `PAIR_CORRELATION` between scales: the pairs that favour one scale favour the others) and
``w_sr ~ N(0, TAU_PAIRS^2)`` the part of the pair noise that depends on the trained model. The engine is fed the true
Sigma_e (with one seed the whole pairs-only covariance Sigma_e + TAU_PAIRS^2 I). The sizes are those of the pair
model below at 1,500 pairs (a STSB validation set) with ``c = 0.9``: the scale x seed SD is sqrt(TAU_TRAIN^2 +
TAU_PAIRS^2) ~ 0.004.

**Layer (a), per-pair predictions** (`pair_study`, through the real resampler): gold ``g_j ~ N(0, 1)``, a per-pair
difficulty ``h_j ~ N(0, 1)`` shared by every scale and seed, and predictions ``g_j + sigma_sr (c h_j + sqrt(1 - c^2)
eps_srj)``: their correlation with gold is ``r = 1 / sqrt(1 + sigma^2)`` and their population Spearman (bivariate
normal) ``(6 / pi) arcsin(r / 2)``, which sets ``sigma_sr`` from the trained model's population Spearman. The truth
compared with is the expected sample Spearman on n pairs (Moran 1948: ``6 / (pi (n + 1)) [arcsin r + (n - 2) arcsin
(r / 2)]``), whose difference from the population value (~0.002 at 300 pairs) is nearly the same for every scale;
the curvature of that map over the seed effect (~1e-5) is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from sweep.stats.race import race_round, race_rounds, round_level
from sweep.stats.verdicts import EQUIVALENT, WORSE, scale_verdicts, simultaneous_intervals

LEVEL = 0.95
MARGIN = 0.01
SEED_SD = 0.004  # b_r: the seed's luck, shared by every scale
TAU_TRAIN = 0.003  # u_sr: scale x seed training noise
TAU_PAIRS = 0.003  # w_sr: the pair noise that depends on the trained model (layer (b))
PAIR_SD, PAIR_CORRELATION = 0.008, 0.98  # Sigma_e: the pairs' error shared by the seeds (layer (b))
# five scales: two truly best, one 0.005 below, one 0.02 below (the gap whose power is reported), one far below
DESIGN = (0.85, 0.85, 0.845, 0.83, 0.80)
GAP = 0.02
EQUAL = (0.85,) * 5


def pair_covariance(n_scales: int) -> np.ndarray:
    """Sigma_e of layer (b): SD `PAIR_SD` per scale, correlation `PAIR_CORRELATION` between scales."""
    correlation = np.full((n_scales, n_scales), PAIR_CORRELATION)
    np.fill_diagonal(correlation, 1.0)
    return PAIR_SD**2 * correlation


def gaussian_study(
    rng: np.random.Generator, truth: np.ndarray, n_seeds: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(per_seed (scales, seeds), the covariance the engine is fed, the trained models' truth of the first seed)."""
    n_scales = truth.size
    sigma_e = pair_covariance(n_scales)
    shared = np.linalg.cholesky(sigma_e) @ rng.standard_normal(n_scales)
    training = rng.normal(0, TAU_TRAIN, (n_scales, n_seeds))
    per_seed = (
        truth[:, None]
        + rng.normal(0, SEED_SD, n_seeds)[None]
        + shared[:, None]
        + training
        + rng.normal(0, TAU_PAIRS, (n_scales, n_seeds))
    )
    fed = sigma_e if n_seeds > 1 else sigma_e + TAU_PAIRS**2 * np.eye(n_scales)
    return per_seed, fed, truth + training[:, 0]


@dataclass(frozen=True)
class Rates:
    """What a batch of simulated studies shows, each a share of the studies (``worse``, ``equivalent``: per scale)."""

    set_holds_every_best: float  # the confidence set holds every truly best scale
    all_pairs_covered: float  # every simultaneous interval (all pairs) covers its true difference
    best_pairs_covered: float  # every interval of best - other in the table covers its true difference
    trained_covered: float  # with one seed: every interval covers the trained models' difference
    worse: np.ndarray  # per scale: called worse
    equivalent: np.ndarray  # per scale: called equivalent
    any_best_worse: float  # some truly best scale called worse
    max_p_best_out: float  # the largest P(best) of a scale out of the set, over all studies
    n_studies: int


@cache
def gaussian_rates(truth: tuple[float, ...], n_seeds: int, n_studies: int, seed: int, level: float = LEVEL) -> Rates:
    """`Rates` of ``n_studies`` layer-(b) studies of ``truth`` with ``n_seeds`` seeds (cached: tests share them)."""
    rng = np.random.default_rng(seed)
    means = np.asarray(truth)
    best = means >= means.max() - 1e-12
    true_differences = means[:, None] - means[None, :]
    counts = dict.fromkeys(("set", "all", "pairs", "trained", "best_worse"), 0)
    worse, equivalent = np.zeros(means.size), np.zeros(means.size)
    max_p_out = 0.0
    for study in range(n_studies):
        per_seed, fed, trained = gaussian_study(rng, means, n_seeds)
        verdicts = scale_verdicts(per_seed, fed, level, MARGIN, seed=study)
        in_set, called = (verdicts.table[c].to_numpy() for c in ("in_confidence_set", "verdict"))
        low, high, p_best = (verdicts.table[c].to_numpy() for c in ("ci_low", "ci_high", "p_best"))
        differences, half, _ = simultaneous_intervals(per_seed.mean(axis=1), verdicts.draws, level)
        counts["set"] += bool(in_set[best].all())
        counts["all"] += bool((np.abs(differences - true_differences) <= half).all())
        gaps = means[verdicts.best] - means
        counts["pairs"] += bool(((low <= gaps) & (gaps <= high)).all())
        trained_differences = trained[:, None] - trained[None, :]
        counts["trained"] += bool((np.abs(differences - trained_differences) <= half).all())
        worse += called == WORSE
        equivalent += called == EQUIVALENT
        counts["best_worse"] += bool((called[best] == WORSE).any())
        if (~in_set).any():
            max_p_out = max(max_p_out, float(p_best[~in_set].max()))
    return Rates(
        counts["set"] / n_studies,
        counts["all"] / n_studies,
        counts["pairs"] / n_studies,
        counts["trained"] / n_studies,
        worse / n_studies,
        equivalent / n_studies,
        counts["best_worse"] / n_studies,
        max_p_out,
        n_studies,
    )


@dataclass(frozen=True)
class RaceRates:
    """What a batch of simulated races shows (`race_rates`)."""

    holds_every_best: float  # share of races whose last survivors hold every truly best scale
    grid_holds_every_best: float  # the same for the full grid's confidence set on the same studies
    trials: float  # the races' trials over the full grid's, averaged over the studies


@cache
def race_rates(
    truth: tuple[float, ...], n_seeds: int, min_seeds: int, n_studies: int, seed: int, spend: bool = True
) -> RaceRates:
    """`RaceRates` of ``n_studies`` layer-(b) studies of ``truth`` raced as `sweep.study.race` races them: every
    scale with the first ``min_seeds`` seeds, then one seed more a round for the scales `race_round` keeps, each
    round's comparison at `round_level` (``spend``) or at `LEVEL` itself (what a race did before it spent it)."""
    rng = np.random.default_rng(seed)
    means = np.asarray(truth)
    best = np.flatnonzero(means >= means.max() - 1e-12)
    level = round_level(LEVEL, race_rounds(n_seeds, min_seeds)) if spend else LEVEL
    held = grid_held = trials = 0
    for study in range(n_studies):
        per_seed, fed, _ = gaussian_study(rng, means, n_seeds)
        grid = scale_verdicts(per_seed, fed, LEVEL, MARGIN, seed=study).table["in_confidence_set"].to_numpy()
        grid_held += bool(grid[best].all())
        survivors, used = list(range(means.size)), min_seeds
        trials += means.size * min_seeds
        while True:
            compared = per_seed[np.ix_(survivors, range(used))]
            table = scale_verdicts(compared, fed[np.ix_(survivors, survivors)], level, MARGIN, seed=study).table
            table = table.assign(scale=[str(i) for i in survivors], not_scoreable="")
            decision = race_round(table, used, n_seeds, MARGIN)
            survivors = [int(k) for k in decision.kept]
            if decision.end:
                break
            used += 1
            trials += len(survivors)
        held += bool(set(best) <= set(survivors))
    return RaceRates(held / n_studies, grid_held / n_studies, trials / (n_studies * means.size * n_seeds))


def monte_carlo_sd(rate: float, n_studies: int) -> float:
    """The standard deviation of a share whose truth is ``rate`` over ``n_studies`` independent studies."""
    return float(np.sqrt(rate * (1 - rate) / n_studies))


def sigma_for(spearman: np.ndarray) -> np.ndarray:
    """The noise SD sigma whose predictions g + sigma z have population Spearman ``spearman`` with gold g."""
    r = 2 * np.sin(np.pi * np.asarray(spearman) / 6)
    return np.sqrt(1 / r**2 - 1)


def expected_spearman(spearman: np.ndarray, n_pairs: int) -> np.ndarray:
    """The expected sample Spearman on ``n_pairs`` pairs of a bivariate normal with population Spearman
    ``spearman`` (Moran 1948)."""
    r = 1 / np.sqrt(1 + sigma_for(spearman) ** 2)
    return 6 / (np.pi * (n_pairs + 1)) * (np.arcsin(r) + (n_pairs - 2) * np.arcsin(r / 2))


def pair_study(
    rng: np.random.Generator, truth: np.ndarray, n_seeds: int, n_pairs: int, shared: float = 0.9
) -> tuple[np.ndarray, np.ndarray]:
    """(gold (pairs,), predictions (scales, seeds, pairs)) of one layer-(a) study; ``shared`` is c, the weight of
    the per-pair difficulty every scale and seed shares."""
    gold, difficulty = rng.normal(size=n_pairs), rng.normal(size=n_pairs)
    quality = truth[:, None] + rng.normal(0, SEED_SD, n_seeds)[None] + rng.normal(0, TAU_TRAIN, (truth.size, n_seeds))
    own = rng.normal(size=(truth.size, n_seeds, n_pairs))
    noise = shared * difficulty + np.sqrt(1 - shared**2) * own
    return gold, gold + sigma_for(quality)[..., None] * noise

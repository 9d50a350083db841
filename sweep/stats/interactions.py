"""Whether the scale's effect depends on another condition (learning rate, data size, ...), on a tidy frame with
columns ``condition``, ``scale``, ``seed``, ``value`` (one row per trial).

Three views of "does the answer move with the condition", from the plainest to the most formal:

- :func:`gap_by_condition`: per condition, the best scale and how far below it named scales (the library default
  20) fall, paired by seed with a Student-t interval (`sweep.stats.seed_paired`).
- :func:`difference_in_differences`: how the gap ``a - b`` changes from one condition to another, with an interval,
  and how sure one can be that the best scale differs (a bootstrap over seeds of each condition's argmax).
- :func:`interaction_test`: the mixed model ``value ~ C(scale) * C(condition) + (1 | seed)`` (statsmodels
  ``mixedlm``) and a Wald F test of all the scale x condition terms at once.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats

from sweep.stats.seed_paired import mean_interval, seed_paired_comparison

LIBRARY_DEFAULT_SCALE = 20.0  # sentence-transformers' MNRL and CoSENT default (temperature 0.05)
GAP_COLUMNS = ["condition", "best", "scale", "n_seeds", "gap", "ci_low", "ci_high"]
PAIRED, WELCH = "paired", "welch"  # the two designs of a difference in differences


def gap_by_condition(
    frame: pd.DataFrame, scales: Sequence[float] = (LIBRARY_DEFAULT_SCALE,), level: float = 0.95
) -> pd.DataFrame:
    """One row per condition and named scale: the condition's best scale (highest mean over the seeds every scale
    has), the gap best - that scale (mean of the per-seed differences) and its paired t interval. A named scale the
    condition did not run has no row; the best scale's own row has gap 0."""
    rows = []
    for condition, group in frame.groupby("condition", sort=True):
        table = seed_paired_comparison(group[["scale", "seed", "value"]], level).set_index("scale")
        if table.empty:
            continue
        best = float(table.index[table["best"]][0])
        for scale in (s for s in scales if s in table.index):
            row = table.loc[scale]
            rows.append(
                {
                    "condition": condition,
                    "best": best,
                    "scale": scale,
                    "n_seeds": int(row["n_seeds"]),
                    "gap": float(row["diff_to_best"]),
                    "ci_low": float(row["ci_low"]),
                    "ci_high": float(row["ci_high"]),
                }
            )
    return pd.DataFrame(rows, columns=GAP_COLUMNS)


@dataclass(frozen=True)
class DifferenceInDifferences:
    """How the gap ``a - b`` changes from ``cond1`` to ``cond2``: ``estimate = gap2 - gap1`` with its t interval.

    ``design`` says which interval: ``paired`` when both conditions ran the same seeds (the per-seed change of the
    gap, n - 1 degrees of freedom), ``welch`` otherwise (an independent two-sample t on the per-seed gaps, unequal
    variances). ``p_best1`` / ``p_best2``: the share of seed bootstrap resamples in which each scale has the highest
    mean; ``p_argmax_differs``: the share in which the two conditions' best scales differ (the same resampled seeds
    in both conditions for the paired design). With 3 seeds there are only 10 distinct resamples: read these shares
    as a coarse confidence, not a test.
    """

    a: float
    b: float
    cond1: str
    cond2: str
    gap1: float
    gap2: float
    estimate: float
    ci_low: float
    ci_high: float
    level: float
    design: str
    n1: int
    n2: int
    best1: float
    best2: float
    p_best1: dict[float, float]
    p_best2: dict[float, float]
    p_argmax_differs: float


def _wide(frame: pd.DataFrame, condition: str) -> pd.DataFrame:
    """One condition's values, seeds x scales, over the seeds that every scale has."""
    group = frame[frame["condition"] == condition]
    if group.empty:
        raise ValueError(f"no trials in condition {condition!r}")
    return group.pivot(index="seed", columns="scale", values="value").dropna()


def _gaps(wide: pd.DataFrame, a: float, b: float, condition: str) -> pd.Series:
    """Per-seed ``a - b`` of one condition."""
    missing = [f"{s:g}" for s in (a, b) if s not in wide.columns]
    if missing:
        raise ValueError(f"condition {condition!r} has no trials at scale {', '.join(missing)}")
    return wide[a] - wide[b]


def _best(wide: pd.DataFrame) -> float:
    """The scale with the highest mean over the seeds."""
    return float(wide.columns.to_numpy()[wide.mean().to_numpy().argmax()])


def _argmax_shares(
    wide1: pd.DataFrame, wide2: pd.DataFrame, paired: bool, n_resamples: int, seed: int
) -> tuple[dict[float, float], dict[float, float], float]:
    """Bootstrap over seeds of each condition's argmax: the share each scale wins, and the share of resamples whose
    two argmaxes differ (the same seed rows drawn in both conditions when ``paired``)."""
    rng = np.random.default_rng(seed)
    draws1 = rng.integers(0, len(wide1), size=(n_resamples, len(wide1)))
    draws2 = draws1 if paired else rng.integers(0, len(wide2), size=(n_resamples, len(wide2)))
    best1 = wide1.columns.to_numpy()[wide1.to_numpy()[draws1].mean(axis=1).argmax(axis=1)]
    best2 = wide2.columns.to_numpy()[wide2.to_numpy()[draws2].mean(axis=1).argmax(axis=1)]

    def shares(best: np.ndarray, columns: pd.Index) -> dict[float, float]:
        return {float(s): float(np.mean(best == s)) for s in columns}

    return shares(best1, wide1.columns), shares(best2, wide2.columns), float(np.mean(best1 != best2))


def difference_in_differences(
    frame: pd.DataFrame,
    a: float,
    b: float,
    cond1: str,
    cond2: str,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> DifferenceInDifferences:
    """The change of the gap ``a - b`` (and of the best scale) from ``cond1`` to ``cond2``; see
    :class:`DifferenceInDifferences`. ValueError when a condition or a scale is missing."""
    wide1, wide2 = _wide(frame, cond1), _wide(frame, cond2)
    gaps1, gaps2 = _gaps(wide1, a, b, cond1), _gaps(wide2, a, b, cond2)
    paired = set(gaps1.index) == set(gaps2.index)
    if paired:
        wide2 = wide2.loc[wide1.index]
        estimate, low, high = mean_interval((gaps2 - gaps1.loc[gaps2.index]).to_numpy(), level)
    else:
        estimate = float(gaps2.mean() - gaps1.mean())
        low = high = float("nan")
        if len(gaps1) > 1 and len(gaps2) > 1:
            interval = stats.ttest_ind(gaps2, gaps1, equal_var=False).confidence_interval(level)
            low, high = float(interval.low), float(interval.high)
    p_best1, p_best2, differs = _argmax_shares(wide1, wide2, paired, n_resamples, seed)
    return DifferenceInDifferences(
        a=a,
        b=b,
        cond1=cond1,
        cond2=cond2,
        gap1=float(gaps1.mean()),
        gap2=float(gaps2.mean()),
        estimate=float(estimate),
        ci_low=float(low),
        ci_high=float(high),
        level=level,
        design=PAIRED if paired else WELCH,
        n1=len(gaps1),
        n2=len(gaps2),
        best1=_best(wide1),
        best2=_best(wide2),
        p_best1=p_best1,
        p_best2=p_best2,
        p_argmax_differs=differs,
    )


@dataclass(frozen=True)
class InteractionTest:
    """The Wald F test of every scale x condition term of ``value ~ C(scale) * C(condition) + (1 | seed)``.

    The mixed model is fitted by REML (statsmodels ``mixedlm``, a random intercept per seed: a seed's trials share
    their batches); the statistic is ``b' V^-1 b / q`` over the q interaction coefficients, referred to an F
    distribution with ``n - rank(X) - (seeds - 1)`` denominator degrees of freedom, the residual degrees of freedom
    of the randomized block design: for a complete balanced design this is the exact ANOVA F test, where a
    likelihood-ratio chi-square would reject too often with 3 seeds. ``message`` is empty when the model was fitted,
    else why it was not (``p_value`` is then None).
    """

    p_value: float | None
    statistic: float | None
    df_num: int
    df_denom: int
    message: str = ""


def _not_fitted(message: str) -> InteractionTest:
    return InteractionTest(None, None, 0, 0, f"no interaction test: {message}")


def interaction_test(frame: pd.DataFrame) -> InteractionTest:
    """Fit the mixed model to ``frame`` and test the scale x condition interaction; see :class:`InteractionTest`."""
    data = frame[["condition", "scale", "seed", "value"]].dropna().reset_index(drop=True)
    counts = {column: data[column].nunique() for column in ("seed", "scale", "condition")}
    if counts["seed"] < 2:
        return _not_fitted("fewer than two seeds: no spread between them to fit the seed effect")
    if counts["scale"] < 2 or counts["condition"] < 2:
        return _not_fitted("it needs at least two scales and two conditions")
    model = smf.mixedlm("value ~ C(scale) * C(condition)", data, groups=data["seed"])
    rank = int(np.linalg.matrix_rank(model.exog))
    if rank < model.exog.shape[1]:
        return _not_fitted("some scale x condition cells have no trials (the design is singular)")
    df_denom = len(data) - rank - (counts["seed"] - 1)
    if df_denom < 1:
        return _not_fitted("no residual degrees of freedom (one trial per cell and seed is not enough)")
    try:
        with warnings.catch_warnings():  # a seed variance at its boundary (0) warns; the fixed effects still stand
            warnings.simplefilter("ignore")
            result = model.fit(reml=True)
        names = [name for name in result.fe_params.index if ":" in name]
        coefficients = result.fe_params[names].to_numpy()
        covariance = result.cov_params().loc[names, names].to_numpy()
        statistic = float(coefficients @ np.linalg.solve(covariance, coefficients)) / len(names)
    except (np.linalg.LinAlgError, ValueError) as error:
        return _not_fitted(f"the mixed model could not be fitted ({error})")
    if not np.isfinite(statistic):
        return _not_fitted("the mixed model's covariance is singular (no spread within the cells?)")
    return InteractionTest(float(stats.f.sf(statistic, len(names), df_denom)), statistic, len(names), df_denom)

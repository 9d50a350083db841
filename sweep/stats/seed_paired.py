"""Scales compared by one score per trial, paired by seed: the per-scale mean with its interval over seeds, and each
scale's verdict against the best one.

The STSB Spearman is compared by the paired bootstrap over pairs and seeds (`sweep.stats.bootstrap`), since
every trial logs its per-pair predictions. An objective named by ``eval.objective`` (an extra set's retrieval metric,
the layer grid's mean) is known only as one number per trial, so its comparison can only be over seeds: for each
scale, the mean of the per-seed differences *best minus that scale* (the same seed trains on the same batches, hence
paired) with the verdict engine's simultaneous interval (`sweep.stats.verdicts`: seeds as blocks, the scale x
seed error pooled over every scale) and its words *equivalent* / *not distinguishable* / *worse*. With one seed
there is no interval, and the table says so rather than pretending to a verdict.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from sweep.stats.verdicts import (
    BEST,
    DEFAULT_MARGIN,
    WORSE,
    percent,
    scale_verdicts,
    verdict_groups,
)

SUMMARY_COLUMNS = ["scale", "n_seeds", "mean", "ci_low", "ci_high"]
COMPARISON_COLUMNS = [
    "scale",
    "n_seeds",
    "mean",
    "diff_to_best",
    "ci_low",
    "ci_high",
    "best",
    "verdict",
    "indistinguishable",
]


def mean_interval(values: np.ndarray, level: float) -> tuple[float, float, float]:
    """(mean, low, high): the Student-t interval of the mean of ``values`` at ``level``; NaN bounds for fewer than two
    values (one seed says nothing about seed-to-seed spread)."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean()) if values.size else float("nan")
    if values.size < 2:
        return mean, float("nan"), float("nan")
    half = stats.t.ppf((1 + level) / 2, values.size - 1) * stats.sem(values)
    return mean, mean - half, mean + half


def per_scale(scores: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """One row per scale of ``scores`` (columns ``scale``, ``value``; one row per trial): the number of trials
    (seeds), the mean and its t-interval over them."""
    rows = []
    for scale, group in scores.groupby("scale", sort=True):
        mean, low, high = mean_interval(group["value"].to_numpy(), level)
        rows.append({"scale": scale, "n_seeds": len(group), "mean": mean, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def seed_paired_comparison(
    scores: pd.DataFrame, level: float = 0.95, minimize: bool = False, margin: float = DEFAULT_MARGIN
) -> pd.DataFrame:
    """Every scale against the best one, paired by seed. ``scores``: columns ``scale``, ``seed``, ``value``, one row
    per trial. Only seeds that every scale has are used. ``diff_to_best`` is how much worse the scale is (best minus
    it, or it minus best when minimizing) and ``verdict`` says what its interval shows (`scale_verdicts`);
    ``indistinguishable`` is True unless the scale is worse, NA with a single seed. Empty with fewer than two scales
    or no common seed."""
    common = set.intersection(*(set(g["seed"]) for _, g in scores.groupby("scale"))) if not scores.empty else set()
    wide = scores[scores["seed"].isin(common)].pivot_table(index="seed", columns="scale", values="value")
    if wide.shape[1] < 2 or wide.empty:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    sign = -1.0 if minimize else 1.0
    signed = sign * wide.to_numpy().T  # (scales, seeds), higher is better
    verdicts = scale_verdicts(signed, None, level, margin).table
    one_seed = len(wide) < 2
    return pd.DataFrame(
        {
            "scale": wide.columns,
            "n_seeds": len(wide),
            "mean": wide.mean().to_numpy(),
            "diff_to_best": verdicts["diff_to_best"],
            "ci_low": verdicts["ci_low"],
            "ci_high": verdicts["ci_high"],
            "best": verdicts["verdict"] == BEST,
            "verdict": verdicts["verdict"],
            "indistinguishable": [
                True if v == BEST else (None if one_seed else v != WORSE) for v in verdicts["verdict"]
            ],
        },
        columns=COMPARISON_COLUMNS,
    )


def comparison_line(table: pd.DataFrame, metric: str, level: float, margin: float = DEFAULT_MARGIN) -> str:
    """``<metric>, mean over 3 seeds: best scale 10 (0.412); cannot tell apart: 15; worse: 1 (3 seeds, one score per
    trial, 95%)``: the words of the STSB answer line (`sweep.stats.verdicts.LINE_WORDS`), or with one seed a
    line that says there is no interval."""
    best = table.loc[table["best"]].iloc[0]
    n_seeds = int(best["n_seeds"])
    head = f"{metric}, mean over {n_seeds} seed{'s' if n_seeds != 1 else ''}: best scale {best['scale']:g} "
    head += f"({best['mean']:.3f})"
    if n_seeds < 2:
        return f"{head}; one seed: no interval over seeds (set study.seeds=[0,1,2] to compare scales)"
    groups = verdict_groups(table, "verdict", margin)
    return f"{head}; {'; '.join(groups)} ({n_seeds} seeds, one score per trial, {percent(level)})"

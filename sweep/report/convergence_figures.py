"""Validation Spearman against the training step (``spearman_vs_step``): one line per scale (mean over seeds, a 95%
t-band where n > 1), one panel per condition, so that a reader sees whether the ranking of the scales is still
changing when training stops. Built from the ``stsb_validation_spearman`` history, whose step 0 is the untrained
model; the table has one row per condition, scale and step: mean, ci_low, ci_high, n. The history itself, one row
per trial and evaluation, is kept beside it (``validation_history.csv``)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import matplotlib as mpl
import pandas as pd
from matplotlib import colormaps

from sweep.report.axes import (
    PAPER_RC,
    condition_title,
    facets,
    label_outer,
    legend_below,
    n_label,
    save_figure,
    scale_norm,
)
from sweep.report.history_figures import HISTORY_COLUMNS
from sweep.report.results_folder import HISTORY_STEM
from sweep.report.study_context import scale_axis_label
from sweep.report.summaries import by_condition, t_interval

STEM = "spearman_vs_step"
STEP_COLUMNS = {"scale", "step", "mean", "ci_low", "ci_high", "n"}  # the table's own columns
BRIGHTEST = 0.85  # of the colour map: its yellow end is unreadable on white


def spearman_step_summary(history: pd.DataFrame) -> pd.DataFrame:
    """Per condition, scale and step of a ``metric_history_table`` of the validation Spearman (COMPLETE trials):
    the mean over seeds, its 95% t-interval (NaN bounds with one seed) and n."""
    if history.empty:
        return pd.DataFrame()
    conditions = [column for column in history.columns if column not in HISTORY_COLUMNS]
    keys = [*conditions, "scale", "step"]
    complete = history[history["state"] == "COMPLETE"]
    rows = [
        {**dict(zip(keys, values, strict=True)), **t_interval(group["value"])}
        for values, group in complete.groupby(keys, dropna=False)
    ]
    return pd.DataFrame(rows, columns=[*keys, "mean", "ci_low", "ci_high", "n"])


@mpl.rc_context(PAPER_RC)
def write_spearman_vs_step(summary: pd.DataFrame, trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Validation Spearman vs step from a ``spearman_step_summary``: one panel per condition, one line per scale
    (colour by scale, markers at the evaluation steps); nothing with fewer than two steps."""
    if summary.empty or summary["step"].nunique() < 2:
        return []
    panels = by_condition(summary, [column for column in summary.columns if column not in STEP_COLUMNS])
    norm, colours = scale_norm(summary["scale"]), colormaps["viridis"]
    fig, axes = facets(len(panels), height=2.0, max_columns=2)
    for ax, (condition, rows) in zip(axes, panels, strict=True):
        for scale, line in rows.groupby("scale", sort=True):
            colour = colours(BRIGHTEST * float(norm(cast(float, scale))))  # a value of the `scale` column
            ax.plot(line["step"], line["mean"], marker="o", markersize=2, color=colour, label=f"{scale:g}")
            if (line["n"] > 1).any():
                ax.fill_between(line["step"], line["ci_low"], line["ci_high"], color=colour, alpha=0.15, linewidth=0)
        if condition:
            ax.set_title(condition_title(condition, ", "))
        ax.set_xlabel("training step")
        ax.grid(True, axis="y", color="0.92", linewidth=0.5)
        label_outer(ax)
    axes[0].set_ylabel("STSB validation Spearman")
    bands = "; band: 95% t-interval" if (summary["n"] > 1).any() else ""
    title = f"{scale_axis_label(trials)} (mean over seeds, {n_label(summary['n'])}{bands}; step 0: untrained)"
    legend_below(axes, title, columns=min(summary["scale"].nunique(), 6))
    return save_figure(fig, summary, out_dir, STEM)


def write_validation_history(history: pd.DataFrame, out_dir: Path) -> list[Path]:
    """``validation_history.csv``: a ``metric_history_table`` of the validation Spearman, every trial's value at
    every evaluation (`benchmarks.race` replays a race over seeds and steps from it); nothing when empty."""
    if history.empty:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{HISTORY_STEM}.csv"
    history.to_csv(path, index=False)
    return [path]

"""The ``scale_and_condition`` figure of a study that sweeps the scale and one numeric condition (a learning rate, a
batch size, a data size): the metric against the scale, one line per condition value, beside the metric against the
condition, one line per scale, on one shared y axis. Which of the two factors moves the metric more is read off the
spread of the lines; the numbers that answer it are the paired tables' (`sweep.stats.verdicts`)."""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from sweep.report.axes import (
    DOUBLE_COLUMN_WIDTH,
    PAPER_RC,
    condition_title,
    format_swept_axis,
    interval_errors,
    legend_below,
    n_label,
    new_figure,
    plain_number,
    save_figure,
)
from sweep.report.best_scale_figures import format_condition_axis, key_words
from sweep.report.summaries import INTERVAL_COLUMNS, METRIC_LABELS, SPEARMAN_COLUMNS, SPEARMAN_OF_SPLIT

STEM = "scale_and_condition"


def scale_and_condition_table(spearman: pd.DataFrame, split: str = "validation") -> pd.DataFrame:
    """The trained rows (scale > 0) of a ``spearman_vs_scale`` table on ``split`` with the condition's value as
    ``condition_value`` (and its key as ``condition_key``); empty unless the table has exactly one condition column,
    numeric, with at least two values, and at least two trained scales."""
    conditions = [str(c) for c in spearman.columns if str(c) not in SPEARMAN_COLUMNS]
    if spearman.empty or len(conditions) != 1:
        return pd.DataFrame()
    key = conditions[0]
    rows = spearman[(spearman["split"] == split) & (spearman["scale"] > 0)]
    values = pd.to_numeric(rows[key], errors="coerce")
    if values.isna().any() or values.nunique() < 2 or rows["scale"].nunique() < 2:
        return pd.DataFrame()
    table = rows[["scale", *INTERVAL_COLUMNS]].assign(condition_key=key, condition_value=values.to_numpy())
    return table.sort_values(["condition_value", "scale"], ignore_index=True)


def interval_line(ax: Axes, x: pd.Series, rows: pd.DataFrame, colour: object, label: str, marker: str) -> None:
    """One series of means over seeds (``rows``: n, mean, ci_low, ci_high) at ``x``, with its t-interval as bars
    only where every point has more than one seed."""
    errors = interval_errors(rows) if (rows["n"] > 1).all() else None
    ax.errorbar(x, rows["mean"], yerr=errors, marker=marker, ms=3, lw=0.9, capsize=2, color=colour, label=label)


def write_scale_and_condition(spearman: pd.DataFrame, out_dir: Path, split: str = "validation") -> list[Path]:
    """The figure and its CSV, or nothing when the study does not sweep the scale and one numeric condition."""
    data = scale_and_condition_table(spearman, split)
    if data.empty:
        return []
    key = str(data["condition_key"].iloc[0])
    name = key.rsplit(".", 1)[-1]
    words = key_words(name)
    values, scales = sorted(data["condition_value"].unique()), sorted(data["scale"].unique())
    with mpl.rc_context(PAPER_RC):
        fig = new_figure(DOUBLE_COLUMN_WIDTH, 3.0)
        by_scale, by_condition = fig.subplots(1, 2, sharey=True)
        value_colours = mpl.colormaps["viridis"](np.linspace(0.0, 0.85, len(values)))
        for colour, value in zip(value_colours, values, strict=True):
            rows = data[data["condition_value"] == value]
            label = f"{condition_title(f'{key}={plain_number(value)}')} ({n_label(rows['n'])})"
            interval_line(by_scale, rows["scale"], rows, colour, label, marker="o")
        format_swept_axis(by_scale, scales)
        by_scale.set_title(f"by scale, one line per {words}")
        scale_colours = mpl.colormaps["plasma"](np.linspace(0.0, 0.85, len(scales)))
        for colour, scale in zip(scale_colours, scales, strict=True):
            rows = data[data["scale"] == scale]
            interval_line(by_condition, rows["condition_value"], rows, colour, f"scale {plain_number(scale)}", "s")
        format_condition_axis(by_condition, values, name)
        by_condition.set_xlabel(words)
        by_condition.set_title(f"by {words}, one line per scale")
        by_scale.set_ylabel(METRIC_LABELS[SPEARMAN_OF_SPLIT[split]])
        bars = "bars: 95% t-interval over seeds" if (data["n"] > 1).all() else "one seed: no interval"
        legend_below([by_scale, by_condition], f"mean over seeds; {bars}", columns=4)
        return save_figure(fig, data, out_dir, STEM)

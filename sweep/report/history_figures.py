"""Per-trial metric histories: training-loss curves in one panel per scale (each its own y range, with the
chance level ln(#candidates) where the loss has one) and learnable-scale trajectories on a log axis above the
learning-rate schedule. Each writer saves a PNG + the history table as CSV and returns the paths."""

from __future__ import annotations

import math
from pathlib import Path
from typing import cast

import matplotlib as mpl
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, LogLocator, MaxNLocator, NullFormatter, NullLocator

from sweep.report.axes import (
    COLUMN_SIZE,
    DOUBLE_COLUMN_WIDTH,
    PAPER_RC,
    condition_title,
    facets,
    label_outer,
    legend_below,
    n_label,
    new_figure,
    panel_below,
    plain_number,
    save_figure,
)
from sweep.report.study_context import config_value, lr_schedule, n_candidates, scale_axis_label
from sweep.report.summaries import by_condition

HISTORY_COLUMNS = {"run_id", "trial_number", "state", "scale", "step", "value"}
MANY_PANELS = 9  # above this, four panels per row
LOG_TICKS = (0.5, 1, 2, 5, 10, 20, 50, 100, 200)


def _conditions(data: pd.DataFrame) -> list[str]:
    """The condition columns of a ``metric_history_table``."""
    return [column for column in data.columns if column not in HISTORY_COLUMNS]


def _loss_panels(data: pd.DataFrame, label: str, sharey: bool) -> tuple[Figure, list[tuple[Axes, str, pd.DataFrame]]]:
    """(axes, title, rows) per (condition, scale): a grid with one row per condition and one column per scale when
    there are conditions (the row's condition labels its first panel), else panels wrapped three or four a row;
    one panel per condition when each has its own single scale (a schedule study's arms: their first scales)."""
    groups = by_condition(data, _conditions(data))
    if data["scale"].nunique() > 1 and all(rows["scale"].nunique() == 1 for _, rows in groups):  # else mostly empty
        fig, axes = facets(len(groups), height=1.35, sharey=sharey, max_columns=4 if len(groups) > MANY_PANELS else 3)
        return fig, [(ax, condition_title(c, ", "), rows) for ax, (c, rows) in zip(axes, groups, strict=True)]
    if len(groups) == 1:
        by_scale = list(groups[0][1].groupby("scale", sort=True))
        fig, axes = facets(
            len(by_scale), height=1.35, sharey=sharey, max_columns=4 if len(by_scale) > MANY_PANELS else 3
        )
        return fig, [(ax, f"{label} {scale:g}", rows) for ax, (scale, rows) in zip(axes, by_scale, strict=True)]
    scales = sorted(data["scale"].unique())
    fig = new_figure(DOUBLE_COLUMN_WIDTH, 1.15 * len(groups) + 0.9)
    grid = fig.subplots(len(groups), len(scales), sharex=True, sharey=sharey, squeeze=False)
    panels = []
    for row, (condition, group) in enumerate(groups):
        grid[row][0].set_ylabel(condition_title(condition), fontsize=6)
        for column, scale in enumerate(scales):
            title = f"{label} {scale:g}" if row == 0 else ""
            panels.append((grid[row][column], title, group[group["scale"] == scale]))
    return fig, panels


@mpl.rc_context(PAPER_RC)
def write_train_loss_curves(data: pd.DataFrame, trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Training loss vs step from a ``metric_history_table``: one panel per (condition, scale), one line per
    trial (seed). For an MNRL-family loss with C candidates per anchor the loss is divided by ln C (1 = chance,
    the scale-0 level) on one shared log axis; other losses keep their own y range per panel."""
    if data.empty:
        return []
    candidates = n_candidates(trials)
    chance = math.log(candidates) if candidates else 1.0
    fig, panels = _loss_panels(data, scale_axis_label(trials), sharey=bool(candidates))
    axes = [ax for ax, _, _ in panels]
    for ax, title, rows in panels:
        for _, run in rows.groupby("run_id", sort=False):
            ax.plot(run["step"], run["value"] / chance, color="C0", alpha=0.7)
        if candidates:
            ax.axhline(1.0, color="0.5", linestyle=":", linewidth=0.8)
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 3.0, 5.0)))  # 0.2, 0.3, 0.5, 1: a short range
            ax.yaxis.set_major_formatter(plain_number)
            ax.yaxis.set_minor_formatter(NullFormatter())
        else:
            ax.ticklabel_format(axis="y", useOffset=False)
        ax.set_title(title, pad=2)
        spec = ax.get_subplotspec()
        assert spec is not None  # a panel of the figure's grid
        columns = spec.get_gridspec().ncols
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=2 if columns > 5 else 4))
        if not panel_below(ax):  # the bottom panel of its column, also above an empty slot
            ax.set_xlabel("training step")
        if candidates:  # a shared y axis: only the outer panels keep their labels
            label_outer(ax)
    runs = data.groupby(["scale", *_conditions(data)], dropna=False)["run_id"].nunique()
    axes[0].plot([], [], color="C0", label=f"one line per seed ({n_label(runs)} per panel)")
    if candidates:
        axes[0].plot([], [], color="0.5", linestyle=":", label=f"chance: ln {candidates} = {chance:.2f} (scale 0)")
    ylabel = f"training loss / ln {candidates} (log)" if candidates else "training loss (own y range per panel)"
    fig.supylabel(ylabel, fontsize=7)
    legend_below(axes[0], "", columns=2)
    return save_figure(fig, data, out_dir, "train_loss_curves", compress=True)  # every step of every trial: long


@mpl.rc_context(PAPER_RC)
def write_learned_scale_trajectory(data: pd.DataFrame, trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """The learned scale vs step on a log axis, one colour per initial scale (marked at step 0), the clamp
    ``loss.max_scale`` as a reference line, and the learning-rate schedule in a panel below."""
    if data.empty:
        return []
    schedule = lr_schedule(trials)
    fig = new_figure(COLUMN_SIZE[0], COLUMN_SIZE[1] + (0.9 if not schedule.empty else 0.3))
    top, bottom = (
        fig.subplots(2, 1, sharex=True, height_ratios=[3, 1]) if not schedule.empty else (fig.add_subplot(), None)
    )
    for index, (initial, rows) in enumerate(data.groupby("scale", sort=True)):
        colour, start = f"C{index % 10}", cast(float, initial)  # a value of the `scale` column
        for _, run in rows.groupby("run_id", sort=False):
            top.plot([0, *run["step"]], [start, *run["value"]], color=colour, alpha=0.8)
        top.plot([0], [start], marker="o", color=colour, label=f"{initial:g} ({n_label(rows['run_id'].nunique())})")
    clamp = config_value(trials, "loss.max_scale")
    if clamp is not None:
        top.axhline(float(clamp), color="0.4", linestyle=":", linewidth=0.8, label=f"clamp {float(clamp):g}")
    top.set_yscale("log")
    top.yaxis.set_major_locator(FixedLocator(LOG_TICKS))
    top.yaxis.set_major_formatter(plain_number)
    top.yaxis.set_minor_locator(NullLocator())
    top.set_ylabel("learned scale (log)")
    if bottom is not None:
        bottom.plot(schedule["step"], schedule["learning_rate"], color="0.3")
        bottom.set_ylabel("learning rate")
        bottom.set_xlabel("training step")
        bottom.yaxis.set_major_formatter(plain_number)
    else:
        top.set_xlabel("training step")
    legend_below(top, f"{scale_axis_label(trials)} (marker at step 0; n = seeds)")
    return save_figure(fig, data, out_dir, "learned_scale_trajectory")

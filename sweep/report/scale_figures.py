"""Figures against the scale: analytic loss vs scale, STSB Spearman and similarity concentration vs scale, and
per-trial metric histories coloured by scale. Each writer saves PNG + SVG + the CSV behind the figure into
``out_dir`` and returns the paths it wrote, or ``[]`` when the trials lack its columns."""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from sweep.report.axes import (
    COLUMN_SIZE,
    PAPER_RC,
    SCALE_LABEL,
    facets,
    format_scale_axis,
    interval_errors,
    legend_below,
    new_figure,
    plain_number,
    save_figure,
    scale_norm,
)
from sweep.report.loss_curves import gradient_long
from sweep.report.summaries import (
    SIM_KINDS,
    SIM_STAGES,
    SPLITS,
    by_condition,
    concentration_summary,
    condition_names,
    metric_history_table,
    spearman_summary,
    swept_scales,
)

LINESTYLES = ("-", "--", ":", "-.")
MAX_LABELLED_SCALES = 8  # colour bars get a tick at each swept scale up to this many
CONDITION_LEGEND_HEIGHT = 0.3  # inches added under a single-panel figure whose legend lists conditions


def _profile_lines(ax: Axes, table: pd.DataFrame, y: str) -> None:
    """One line of ``y`` vs scale per similarity profile."""
    for profile, group in table.groupby("profile", sort=False):
        ax.plot(group["scale"], group[y], label=profile)
    legend_below(ax, "similarities (positive first)")


@mpl.rc_context(PAPER_RC)
def write_loss_vs_scale(table: pd.DataFrame, out_dir: Path, gradient: bool = False) -> list[Path]:
    """The ``loss_vs_scale`` figure from a ``loss_curves.loss_table``; with ``gradient`` also its gradients.

    With ``gradient`` the loss CSV keeps the ``grad_i`` columns when all profiles have the same length, and
    ``loss_vs_scale_gradient`` shows d loss / d positive similarity (its CSV: every similarity, long format).
    """
    fig = new_figure()
    ax = fig.add_subplot()
    _profile_lines(ax, table, "loss")
    ax.set_ylabel("MNRL loss on one anchor (nats)")
    format_scale_axis(ax, symlog=False)
    keep_gradients = gradient and not table.isna().any().any()
    paths = save_figure(fig, table if keep_gradients else table[["profile", "scale", "loss"]], out_dir, "loss_vs_scale")
    if not gradient:
        return paths

    gradients = gradient_long(table)
    fig = new_figure()
    ax = fig.add_subplot()
    ax.axhline(0, color="0.6", linewidth=0.5)
    _profile_lines(ax, gradients[gradients["index"] == 0], "grad")
    ax.set_ylabel("d loss / d positive similarity")
    format_scale_axis(ax, symlog=False)
    return paths + save_figure(fig, gradients, out_dir, "loss_vs_scale_gradient")


@mpl.rc_context(PAPER_RC)
def write_spearman_vs_scale(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Validation (solid) and test (dashed) Spearman vs scale with 95% t-interval error bars over seeds;
    one colour per condition."""
    if not swept_scales(trials) or not any(column in trials for column in SPLITS.values()):
        return []
    summary = spearman_summary(trials)
    if summary.empty:
        return []
    conditions = condition_names(trials)
    fig = new_figure(height=COLUMN_SIZE[1] + (CONDITION_LEGEND_HEIGHT if conditions else 0))
    ax = fig.add_subplot()
    for colour, (condition, rows) in enumerate(by_condition(summary, conditions)):
        for split, group in rows.groupby("split", sort=False):
            ax.errorbar(
                group["scale"],
                group["mean"],
                yerr=interval_errors(group),
                marker="o",
                capsize=2,
                color=f"C{colour}",
                linestyle="-" if split == "validation" else "--",
                label=f"{split}, {condition}" if condition else split,
            )
    ax.set_ylabel("STSB Spearman (cosine)")
    legend_below(ax, "STSB split: mean and 95% t-interval over seeds")
    format_scale_axis(ax)
    return save_figure(fig, summary, out_dir, "spearman_vs_scale")


@mpl.rc_context(PAPER_RC)
def write_concentration_vs_scale(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Cosine similarity of each logged pair kind vs scale: mean, q05-q95 band, before training dashed;
    one panel per condition."""
    if not swept_scales(trials):
        return []
    summary = concentration_summary(trials)
    summary = summary[summary["n"] > 0]
    if summary.empty:
        return []
    panels = by_condition(summary, condition_names(trials))
    fig, axes = facets(len(panels))
    for ax, (condition, rows) in zip(axes, panels, strict=True):
        for kind, group in rows.groupby("kind", sort=False):
            final, init = (group[group["stage"] == stage] for stage in SIM_STAGES)
            (line,) = ax.plot(final["scale"], final["mean"], marker="o", label=SIM_KINDS[kind])
            ax.fill_between(final["scale"], final["q05"], final["q95"], color=line.get_color(), alpha=0.2, linewidth=0)
            ax.plot(init["scale"], init["mean"], color=line.get_color(), linestyle="--")
        if condition:
            ax.set_title(condition.replace(", ", "\n"))
        format_scale_axis(ax)
        ax.label_outer()
    axes[0].set_ylabel("cosine similarity")
    legend_below(axes[0], "mean over seeds, q05-q95 band; dashed: before training")
    return save_figure(fig, summary, out_dir, "concentration_vs_scale")


@mpl.rc_context(PAPER_RC)
def write_metric_histories(
    trials: pd.DataFrame, history: pd.DataFrame, out_dir: Path, stem: str, ylabel: str, scale_label: str = SCALE_LABEL
) -> list[Path]:
    """One line per trial of a metric vs step, coloured by scale (symlog colour bar, ticks at the swept scales);
    one line style per condition."""
    data = metric_history_table(trials, history)
    if data.empty:
        return []
    conditions = condition_names(trials)
    norm, cmap = scale_norm(data["scale"]), mpl.colormaps["viridis"]
    fig = new_figure(height=COLUMN_SIZE[1] + (CONDITION_LEGEND_HEIGHT if conditions else 0))
    ax = fig.add_subplot()
    for index, (condition, rows) in enumerate(by_condition(data, conditions)):
        style = LINESTYLES[index % len(LINESTYLES)]
        for (_, scale), run in rows.groupby(["run_id", "scale"], sort=False):
            ax.plot(run["step"], run["value"], color=cmap(norm(scale)), alpha=0.8, linestyle=style)
        if condition:
            ax.plot([], [], color="0.3", linestyle=style, label=condition)
    colorbar = fig.colorbar(mpl.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, label=scale_label)
    swept = np.sort(data["scale"].unique())
    if len(swept) <= MAX_LABELLED_SCALES:
        colorbar.set_ticks(swept)
    colorbar.ax.yaxis.set_major_formatter(plain_number)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    if conditions:
        legend_below(ax, "line style: condition")
    return save_figure(fig, data, out_dir, stem)

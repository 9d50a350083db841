"""Figures over grids of two swept values: AnglE weight and scale heatmaps, and the layer x dim heatmap and
speed/quality trade-off. Each writer saves PNG + SVG + the CSV behind the figure into ``out_dir`` and returns
the paths it wrote, or ``[]`` when the trials lack its columns."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from sweep.report.axes import (
    COLUMN_SIZE,
    DOUBLE_COLUMN_WIDTH,
    PAPER_RC,
    facets,
    interval_errors,
    legend_below,
    new_figure,
    panel_axes,
    panel_shape,
    save_figure,
)
from sweep.report.summaries import (
    ANGLE_SCALES,
    ANGLE_WEIGHTS,
    SPLITS,
    layer_grid_panels,
    layer_grid_summary,
    mean_by,
)


def _label(value: object) -> str:
    """A tick or title label: floats as ``%g``, anything else as ``str``."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _panel_heatmaps(
    table: pd.DataFrame, x: str, y: str, panel: str, labels: Mapping[str, str], colorbar_label: str
) -> Figure:
    """One annotated heatmap of ``table['mean']`` over (x, y) per value of ``panel``, sharing one colour scale.
    ``labels`` names the axes: keys x, y and panel (the panel title prefix)."""
    xs, ys, panels = (sorted(table[key].unique()) for key in (x, y, panel))
    rows, columns = panel_shape(len(panels))
    fig = new_figure(min(DOUBLE_COLUMN_WIDTH, max(COLUMN_SIZE[0], 1.0 + 1.9 * columns)), 0.3 + 2.0 * rows)
    grid_axes, axes = panel_axes(fig, len(panels), sharex=False)
    norm = Normalize(table["mean"].min(), table["mean"].max())
    for ax, value in zip(axes, panels, strict=True):
        grid = table[table[panel] == value].pivot(index=y, columns=x, values="mean").reindex(index=ys, columns=xs)
        image = ax.imshow(grid.to_numpy(dtype=float), origin="lower", cmap="viridis", norm=norm, aspect="auto")
        for (row, col), cell in np.ndenumerate(grid.to_numpy(dtype=float)):
            if np.isfinite(cell):
                colour = "w" if norm(cell) < 0.5 else "k"
                ax.text(col, row, f"{cell:.3f}", ha="center", va="center", fontsize=5, color=colour)
        ax.set_xticks(range(len(xs)), [_label(v) for v in xs])
        ax.set_yticks(range(len(ys)), [_label(v) for v in ys])
        ax.set_title(labels[panel] + _label(value).replace(", ", "\n"))
        ax.set_xlabel(labels[x])
        ax.set_ylabel(labels[y])
        ax.label_outer()
    fig.colorbar(image, ax=grid_axes, label=colorbar_label)
    return fig


@mpl.rc_context(PAPER_RC)
def write_angle_weights_heatmap(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Mean validation Spearman over the AnglE weights: a (w1, w2) heatmap per w3 value."""
    table = mean_by(trials, ANGLE_WEIGHTS, SPLITS["validation"])
    if len(table) < 2:  # one weight triple: nothing to compare
        return []
    labels = {"w1": "w1 (cosine)", "w2": "w2 (in-batch)", "w3": "w3 (angle) = "}
    fig = _panel_heatmaps(table, "w1", "w2", "w3", labels, "validation Spearman (mean)")
    return save_figure(fig, table, out_dir, "angle_weights_heatmap")


@mpl.rc_context(PAPER_RC)
def write_angle_scales_heatmap(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Mean validation Spearman over the AnglE objectives' scales: (cos_scale, ibn_scale) per angle_scale."""
    table = mean_by(trials, ANGLE_SCALES, SPLITS["validation"])
    if table.empty or not all(table[key].nunique() > 1 for key in ("cos_scale", "ibn_scale")):
        return []
    labels = {
        "cos_scale": "cosine objective scale",
        "ibn_scale": "in-batch objective scale",
        "angle_scale": "angle scale = ",
    }
    fig = _panel_heatmaps(table, "cos_scale", "ibn_scale", "angle_scale", labels, "validation Spearman (mean)")
    return save_figure(fig, table, out_dir, "angle_scales_heatmap")


@mpl.rc_context(PAPER_RC)
def write_layer_grid_figures(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """For layer x dim studies: a test-Spearman heatmap per (layer, dim) and condition, and the speed/quality
    trade-off (Spearman vs encoder layers kept, one line per dim; encoding cost grows linearly with layers,
    index size and search cost with dim)."""
    summary = layer_grid_summary(trials)
    if summary.empty or summary["layer"].nunique() * summary["dim"].nunique() < 2:
        return []
    test = layer_grid_panels(summary)
    labels = {"dim": "embedding dims kept", "layer": "encoder layers kept", "panel": ""}
    heatmap = _panel_heatmaps(test, "dim", "layer", "panel", labels, "test Spearman (mean over seeds)")
    paths = save_figure(heatmap, summary, out_dir, "layer_grid_heatmap")

    panels = list(test.groupby("panel", sort=True))
    fig, axes = facets(len(panels))
    dims = sorted(test["dim"].unique(), reverse=True)
    for ax, (panel, rows) in zip(axes, panels, strict=True):
        for index, dim in enumerate(dims):
            line = rows[rows["dim"] == dim]
            ax.errorbar(
                line["layer"],
                line["mean"],
                yerr=interval_errors(line),
                marker="o",
                capsize=2,
                color=f"C{index}",
                label=f"{dim} dims",
            )
        if panel:
            ax.set_title(panel.replace(", ", "\n"))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("encoder layers kept (encoding cost)")
        ax.label_outer()
    axes[0].set_ylabel("STSB test Spearman")
    legend_below(axes[0], "embedding dims kept (index size)")
    return paths + save_figure(fig, test, out_dir, "layer_grid_tradeoff")

"""Figures over grids of two swept values: AnglE weight and scale heatmaps, and the layer x dim heatmap and
speed/quality trade-off. Each writer saves a PNG + the CSV behind the figure into ``out_dir`` and returns
the paths it wrote, or ``[]`` when the trials lack its columns."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.colors import Normalize, TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from sweep.report.axes import (
    COLUMN_SIZE,
    DOUBLE_COLUMN_WIDTH,
    PAPER_RC,
    condition_title,
    facets,
    interval_errors,
    label_outer,
    legend_below,
    n_label,
    new_figure,
    panel_axes,
    panel_shape,
    save_figure,
)
from sweep.report.summaries import (
    ANGLE_SCALES,
    ANGLE_WEIGHTS,
    SPEARMAN_OF_SPLIT,
    condition_columns,
    condition_label,
    layer_grid_panels,
    mean_by,
)


def _label(value: object) -> str:
    """A tick or title label: floats as ``%g``, anything else as ``str``."""
    return f"{value:g}" if isinstance(value, float) else str(value)


NOT_RUN = "not run"  # the legend label (and patch label) of a grid cell with no trial
NOT_RUN_STYLE: dict[str, Any] = {"facecolor": "0.88", "edgecolor": "0.55", "hatch": "////", "linewidth": 0.5}
UNTRAINED = "untrained"  # optional column of a heatmap table: the untrained model's value (one constant)
# AnglE paper's settings, boxed in the heatmaps: w1 = w2 = w3 = 1 (weights) and scales 20 / 20 / 1
PAPER_CELLS = {"w3": (1.0, 1.0, 1.0), "angle_scale": (20.0, 20.0, 1.0)}


def _with_untrained(table: pd.DataFrame, untrained: float | None) -> pd.DataFrame:
    """The table with the untrained model's validation Spearman as a constant ``untrained`` column, if known."""
    return table.assign(**{UNTRAINED: untrained}) if untrained is not None and not table.empty else table


def _norm(table: pd.DataFrame) -> tuple[Normalize, float | None]:
    """A colour norm over ``mean``, diverging at the untrained value when the table has one inside its range
    (cells worse than untraining are then red, better ones blue)."""
    low, high = float(table["mean"].min()), float(table["mean"].max())
    untrained = float(table[UNTRAINED].iloc[0]) if UNTRAINED in table and table[UNTRAINED].notna().any() else None
    if untrained is not None and low < untrained < high:
        return TwoSlopeNorm(untrained, low, high), untrained
    return Normalize(low, high), untrained


def _panel_heatmaps(
    table: pd.DataFrame,
    keys: tuple[str, str, str],
    labels: Mapping[str, str],
    colorbar_label: str,
    paper_cells: Collection[tuple[float, float, object]] = (),
) -> Figure:
    """One annotated heatmap of ``table['mean']`` over (x, y) = ``keys[:2]`` per value of ``keys[2]``, sharing one
    colour scale (diverging at the untrained value, marked on the colour bar); ``labels`` names the axes by key
    and each of ``paper_cells`` (x, y, panel) is outlined."""
    x, y, panel = keys
    xs, ys, panels = (sorted(table[key].unique()) for key in keys)
    rows, columns = panel_shape(len(panels))
    fig = new_figure(min(DOUBLE_COLUMN_WIDTH, max(COLUMN_SIZE[0], 1.2 + 1.9 * columns)), 0.5 + 2.0 * rows)
    grid_axes, axes = panel_axes(fig, len(panels), sharex=False)
    norm, untrained = _norm(table)
    cmap = "RdBu" if isinstance(norm, TwoSlopeNorm) else "viridis"
    for ax, value in zip(axes, panels, strict=True):
        grid = table[table[panel] == value].pivot(index=y, columns=x, values="mean").reindex(index=ys, columns=xs)
        image = ax.imshow(grid.to_numpy(dtype=float), origin="lower", cmap=cmap, norm=norm, aspect="auto")
        for (row, col), cell in np.ndenumerate(grid.to_numpy(dtype=float)):
            if not np.isfinite(cell):  # hatched grey, never a colour of the scale (white is its diverging centre)
                ax.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, label=NOT_RUN, **NOT_RUN_STYLE))
            else:
                dark = abs(norm(cell) - 0.5) > 0.35 if cmap == "RdBu" else norm(cell) < 0.5
                colour = "w" if dark else "k"
                ax.text(col, row, f"{cell:.3f}", ha="center", va="center", fontsize=5, color=colour)
        for cell_x, cell_y, cell_panel in paper_cells:
            if cell_panel == value and cell_x in xs and cell_y in ys:
                corner = (xs.index(cell_x) - 0.5, ys.index(cell_y) - 0.5)
                ax.add_patch(Rectangle(corner, 1, 1, fill=False, edgecolor="k", linewidth=1.2))
        ax.set_xticks(range(len(xs)), [_label(v) for v in xs])
        ax.set_yticks(range(len(ys)), [_label(v) for v in ys])
        ax.set_title(labels[panel] + _label(value).replace(", ", "\n"))
        ax.set_xlabel(labels[x])
        ax.set_ylabel(labels[y])
        label_outer(ax)
    label = f"{colorbar_label} ({n_label(table['n'])} per cell)"
    if untrained is not None:
        label += f"\nblack line: untrained, {untrained:.3f}"
    colorbar = fig.colorbar(image, ax=grid_axes, label=label)
    if untrained is not None:
        colorbar.ax.axhline(untrained, color="k", linewidth=1.2)
    handles = (
        [Patch(label=NOT_RUN, **NOT_RUN_STYLE)]
        if any(p.get_label() == NOT_RUN for a in axes for p in a.patches)
        else []
    )
    if paper_cells:
        handles.append(Patch(facecolor="none", edgecolor="k", linewidth=1.2, label="the AnglE paper's setting"))
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=len(handles))
    return fig


@mpl.rc_context(PAPER_RC)
def write_angle_weights_heatmap(trials: pd.DataFrame, out_dir: Path, untrained: float | None = None) -> list[Path]:
    """Mean validation Spearman over the AnglE weights: a (w1, w2) heatmap per w3 value, and per value of any other
    swept key (a learning rate): cells never pool conditions."""
    table, panel = _by_condition(trials, ANGLE_WEIGHTS, "w3", "w3 (angle) = ")
    table = _with_untrained(table, untrained)
    if table.empty or len(table[list(ANGLE_WEIGHTS.values())].drop_duplicates()) < 2:  # one triple: nothing to compare
        return []
    labels = {"w1": "w1 (cosine)", "w2": "w2 (in-batch)", "w3": "w3 (angle) = ", "panel": ""}
    paper = PAPER_CELLS["w3"]
    cells = {(paper[0], paper[1], value) for value in table.loc[table["w3"] == paper[2], panel]}
    fig = _panel_heatmaps(table, ("w1", "w2", panel), labels, "validation Spearman", cells)
    return save_figure(fig, table, out_dir, "angle_weights_heatmap")


def _by_condition(
    trials: pd.DataFrame, columns: Mapping[str, str], panel_key: str, panel_words: str
) -> tuple[pd.DataFrame, str]:
    """``mean_by`` over ``columns`` and every other swept key except the one ``columns`` encode together (AnglE's
    ``loss.weights`` string); with such a condition the panels are (condition, ``panel_key``) in words, in a
    ``panel`` column. Returns the table and the key its panels are drawn by."""
    others = {c: name for c, name in condition_columns(trials).items() if c != "param.loss.weights"}
    others = {c: name for c, name in others.items() if c not in columns}
    table = mean_by(trials, {**columns, **others}, SPEARMAN_OF_SPLIT["validation"])
    if not others or table.empty:
        return table, panel_key
    names = list(others.values())
    table["panel"] = [
        condition_title(condition_label(names, list(row[names])), ", ") + f"\n{panel_words}{_label(row[panel_key])}"
        for _, row in table.iterrows()
    ]
    return table, "panel"


@mpl.rc_context(PAPER_RC)
def write_angle_scales_heatmap(trials: pd.DataFrame, out_dir: Path, untrained: float | None = None) -> list[Path]:
    """Mean validation Spearman over the AnglE objectives' scales: (cos_scale, ibn_scale) per angle_scale, and per
    value of any other swept key (a learning rate): cells never pool conditions."""
    table, panel = _by_condition(trials, ANGLE_SCALES, "angle_scale", "angle scale = ")
    table = _with_untrained(table, untrained)
    if table.empty or not all(table[key].nunique() > 1 for key in ("cos_scale", "ibn_scale")):
        return []
    labels = {
        "cos_scale": "cosine objective scale",
        "ibn_scale": "in-batch objective scale",
        "angle_scale": "angle scale = ",
        "panel": "",
    }
    paper = PAPER_CELLS["angle_scale"]
    cells = {(paper[0], paper[1], value) for value in table.loc[table["angle_scale"] == paper[2], panel]}
    fig = _panel_heatmaps(table, ("cos_scale", "ibn_scale", panel), labels, "validation Spearman", cells)
    return save_figure(fig, table, out_dir, "angle_scales_heatmap")


@mpl.rc_context(PAPER_RC)
def write_layer_grid_figures(summary: pd.DataFrame, out_dir: Path) -> list[Path]:
    """For layer x dim studies, from a ``layer_grid_summary``: a test-Spearman heatmap per (layer, dim) and
    condition, and the speed/quality trade-off (Spearman vs encoder layers kept, one line per dim; encoding cost
    grows linearly with layers, index size and search cost with dim)."""
    if summary.empty or summary["layer"].nunique() * summary["dim"].nunique() < 2:
        return []
    test = layer_grid_panels(summary)
    test["panel"] = test["panel"].map(condition_title)  # "no wrapper / scale 10", not config keys
    labels = {"dim": "embedding dims kept", "layer": "encoder layers kept", "panel": ""}
    heatmap = _panel_heatmaps(test, ("dim", "layer", "panel"), labels, "STSB test Spearman")
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
                yerr=interval_errors(line) if (line["n"] > 1).all() else None,
                marker="o",
                capsize=2,
                color=f"C{index}",
                label=f"{dim} dims ({n_label(line['n'])})",
            )
        if panel:
            ax.set_title(str(panel))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("encoder layers kept (encoding cost)")
        label_outer(ax)
    axes[0].set_ylabel("STSB test Spearman")
    legend_below(axes[0], "embedding dims kept (index size); bars: 95% t-interval where n > 1")
    return paths + save_figure(fig, test, out_dir, "layer_grid_tradeoff")

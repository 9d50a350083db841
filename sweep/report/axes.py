"""Shared drawing helpers for the paper figures: figure creation and saving, scale/temperature axes, legends,
colour norms and panel grids (column width, Agg, no display)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import Normalize, SymLogNorm
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator, SymmetricalLogLocator
from matplotlib.transforms import Transform

PAPER_RC = {
    "font.size": 7,
    "axes.labelsize": 7,
    "axes.titlesize": 7,
    "legend.fontsize": 6,
    "xtick.labelsize": 6,
    "ytick.labelsize": 6,
    "lines.linewidth": 1.0,
    "lines.markersize": 3,
    "svg.fonttype": "none",  # keep text editable in the SVG
}
COLUMN_SIZE = (3.5, 2.6)  # inches, one column of a two-column paper
DOUBLE_COLUMN_WIDTH = 7.0
DPI = 200
MAX_PANEL_COLUMNS = 3
SCALE_LABEL = "scale"
# round temperatures offered as ticks on the top axis, by priority: decades, then 5 and 2 multiples where room
_NICE_TEMPERATURES = (10.0, 1.0, 0.1, 0.01, 0.001, 5.0, 0.5, 0.05, 0.005, 2.0, 0.2, 0.02, 0.002)


# ---------------------------------------------------------------- figures


def new_figure(width: float = COLUMN_SIZE[0], height: float = COLUMN_SIZE[1]) -> Figure:
    """A constrained-layout Figure, not attached to pyplot."""
    return Figure(figsize=(width, height), layout="constrained")


def save_figure(fig: Figure, data: pd.DataFrame, out_dir: Path, stem: str) -> list[Path]:
    """Write ``stem.png`` (DPI), ``stem.svg`` and ``stem.csv`` (the data behind the figure)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg, csv = (out_dir / f"{stem}.{ext}" for ext in ("png", "svg", "csv"))
    fig.savefig(png, dpi=DPI)
    fig.savefig(svg)
    data.to_csv(csv, index=False)
    return [png, svg, csv]


# ---------------------------------------------------------------- scale and temperature axes


def _reciprocal(x: np.ndarray | float) -> np.ndarray:
    """Elementwise 1/x with 1/0 = 1e300: scale 0 is an infinite temperature, but axis limits must be finite."""
    x = np.asarray(x, dtype=float)
    return np.divide(1.0, x, out=np.full(x.shape, 1e300), where=x != 0)


def plain_number(value: float, _position: int | None = None) -> str:
    """Tick label ``100`` rather than ``10^2``."""
    return f"{value:g}"


def _on_x(transform: Transform) -> Callable[[np.ndarray], np.ndarray]:
    """Apply a 2-D transform to x values only."""

    def apply(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        points = np.column_stack([x.ravel(), np.ones(x.size)])
        return transform.transform(points)[:, 0].reshape(x.shape)

    return apply


def add_temperature_axis(ax: Axes, min_gap: float = 0.09) -> None:
    """Top x-axis labelled with temperature = 1/scale at round values; call once limits are final.

    ``secondary_xaxis`` composes its functions with a linear parent scale only, so the top axis gets its
    own scale, the parent's scale transform after 1/x: ticks then also line up on a symlog axis.
    Round temperatures are taken in priority order unless closer than ``min_gap`` (axes fraction) to a kept one.
    """
    to_scaled, from_scaled = _on_x(ax.transScale), _on_x(ax.transScale.inverted())
    top = ax.secondary_xaxis("top", functions=(_reciprocal, _reciprocal))
    top.set_xscale("function", functions=(lambda t: to_scaled(_reciprocal(t)), lambda u: _reciprocal(from_scaled(u))))
    ax.get_xlim()  # applies pending autoscaling, so that transData below sees the final limits
    to_axes = _on_x(ax.transData + ax.transAxes.inverted())
    kept: dict[float, float] = {}  # temperature -> position
    for temperature in _NICE_TEMPERATURES:
        position = float(to_axes(_reciprocal(temperature)))
        if 0 <= position <= 1 and all(abs(position - other) >= min_gap for other in kept.values()):
            kept[temperature] = position
    top.set_xticks(sorted(kept))
    top.xaxis.set_major_formatter(plain_number)
    top.xaxis.set_minor_locator(NullLocator())
    top.set_xlabel("temperature = 1/scale")


def format_scale_axis(ax: Axes, symlog: bool = True) -> None:
    """Scale on x (symlog with linthresh 1 so that 0 shows, or linear) and temperature on top."""
    if symlog:
        ax.set_xscale("symlog", linthresh=1)
        ax.xaxis.set_major_formatter(plain_number)
        ax.xaxis.set_minor_locator(SymmetricalLogLocator(linthresh=1, base=10, subs=np.arange(2, 10)))
    ax.set_xlabel(SCALE_LABEL)
    add_temperature_axis(ax)


def scale_norm(scales: pd.Series) -> Normalize:
    """Colour norm for scales: symlog (linthresh 1) so that 0 and large scales both get colours."""
    low, high = float(scales.min()), float(scales.max())
    return SymLogNorm(linthresh=1, vmin=low, vmax=max(high, low + 1))


# ---------------------------------------------------------------- legends and error bars


def legend_below(ax: Axes, title: str) -> None:
    """The axes' legend under the figure, so that it hides no data (needs constrained layout)."""
    handles, labels = ax.get_legend_handles_labels()
    columns = 1 if max(map(len, labels), default=0) > 30 else min(len(labels), 2)
    ax.get_figure().legend(handles, labels, title=title, loc="outside lower center", ncols=columns, title_fontsize=6)


def interval_errors(rows: pd.DataFrame) -> np.ndarray:
    """``yerr`` for ``errorbar`` from a summary's ``mean, ci_low, ci_high`` (0 where the interval is NaN)."""
    return np.nan_to_num([rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]])


# ---------------------------------------------------------------- panel grids


def panel_shape(n: int) -> tuple[int, int]:
    """(rows, columns) of a grid of ``n`` panels, at most ``MAX_PANEL_COLUMNS`` wide."""
    columns = min(n, MAX_PANEL_COLUMNS)
    return -(-n // columns), columns


def panel_axes(fig: Figure, n: int, sharex: bool) -> tuple[list[Axes], list[Axes]]:
    """The grid's axes (all, for a shared colour bar) and its first ``n`` (the panels; the rest are hidden)."""
    rows, columns = panel_shape(n)
    axes = list(fig.subplots(rows, columns, sharex=sharex, sharey=True, squeeze=False).ravel())
    for ax in axes[n:]:
        ax.set_visible(False)
    return axes, axes[:n]


def facets(n: int, height: float = 2.0) -> tuple[Figure, list[Axes]]:
    """A figure with ``n`` panels sharing both axes: one column wide for one panel, two otherwise."""
    rows, _ = panel_shape(n)
    fig = new_figure(
        COLUMN_SIZE[0] if n == 1 else DOUBLE_COLUMN_WIDTH, COLUMN_SIZE[1] if n == 1 else height * rows + 0.5
    )
    return fig, panel_axes(fig, n, sharex=True)[1]

"""Shared drawing helpers for the paper figures: figure creation and saving, scale/temperature axes, legends,
colour norms and panel grids (column width, Agg, no display).

A figure is saved at the size a page shows it: `DPI` (a double-column figure, 7 inches, is 840 pixels wide: a
page's width, its 6-7 pt text 10-12 pixels high), as a PNG of `PNG_COLOURS` palette colours (lines, markers and
their anti-aliasing need no more; a third of the bytes of full colour), and at a lower resolution when a figure of
many panels would still exceed `MAX_PNG_BYTES`."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import Normalize, SymLogNorm
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator, SymmetricalLogLocator
from matplotlib.transforms import Transform
from numpy.typing import ArrayLike
from PIL import Image

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType  # matplotlib >= 3.9

log = logging.getLogger(__name__)

PAPER_RC: dict[RcKeyType, Any] = {
    "font.size": 7,
    "axes.labelsize": 7,
    "axes.titlesize": 7,
    "legend.fontsize": 6,
    "xtick.labelsize": 6,
    "ytick.labelsize": 6,
    "lines.linewidth": 1.0,
    "lines.markersize": 3,
}
COLUMN_SIZE = (3.5, 2.6)  # inches, one column of a two-column paper
DOUBLE_COLUMN_WIDTH = 7.0
DPI = 120
PNG_COLOURS = 256
MAX_PNG_BYTES = 150_000  # a figure of many panels is saved at a lower resolution to stay under it
MIN_DPI = 60  # but never below this: a tall figure's text stays readable when zoomed
MAX_PANEL_COLUMNS = 3
SCALE_LABEL = "scale"
# round temperatures offered as ticks on the top axis, by priority: decades, then 5 and 2 multiples where room
# (none above 1: on a linear axis from scale 0 they would crowd its first unit)
_NICE_TEMPERATURES = (1.0, 0.1, 0.01, 0.001, 0.5, 0.05, 0.005, 0.2, 0.02, 0.002)


# ---------------------------------------------------------------- figures


# a condition's ``key=value`` in words on figures (the CSVs keep the keys): the last part of the key -> its words
_CONDITION_WORDS = {
    "learning_rate": "learning rate {}",
    "batch_size": "batch {}",
    "similarity": "{} similarity",
    "static_init": "{} start",
}
ALL_ROWS = (
    100_000  # a data.train.max_samples grid value at or above it stands for every row (a grid value is never null)
)


def _condition_words(key: str, value: str) -> str:
    name = key.rsplit(".", 1)[-1]
    if name == "max_samples":
        return "all training rows" if float(value) >= ALL_ROWS else f"{int(float(value)):,} training rows"
    if key.endswith("wrapper.name"):
        return "no wrapper" if value == "None" else f"{value} wrapper"
    if name == "normalize":
        return "Normalize layer" if value == "True" else "no Normalize layer"
    if key.endswith("scale_schedule.spec"):  # already words: "cosine 5-50"
        return value
    if name == "name_or_path":  # a grid of start models: their own names, not the paths on the machine that ran them
        return f"model {value.rstrip('/').rsplit('/', 1)[-1]}"
    return _CONDITION_WORDS.get(name, name.replace("_", " ") + " {}").format(value)


def condition_title(condition: str, separator: str = "\n") -> str:
    """``train.max_samples=1000, learning_rate=0.01`` -> ``1,000 training rows`` / ``learning rate 0.01``, one part
    per line: a panel's title or row label in words, not config keys."""
    parts = [part.split("=", 1) for part in condition.split(", ") if part]
    return separator.join(_condition_words(*part) if len(part) == 2 else part[0] for part in parts)


def new_figure(width: float = COLUMN_SIZE[0], height: float = COLUMN_SIZE[1]) -> Figure:
    """A constrained-layout Figure, not attached to pyplot."""
    return Figure(figsize=(width, height), layout="constrained")


def png_bytes(fig: Figure, dpi: float) -> bytes:
    """The figure as a palette PNG (`PNG_COLOURS`, no dithering: the same figure gives the same bytes) at ``dpi``.
    The palette is an octree's: every colour lands near its own (a distance of 2 on average, of at most about 60 in
    0-255 RGB); a median cut, which splits by pixel counts, would merge a rare line colour into the anti-aliasing's
    greys."""
    rendered = io.BytesIO()
    fig.savefig(rendered, dpi=dpi, bbox_inches="tight", format="png")  # tight: a wide legend is not cut off
    image = Image.open(rendered).convert("RGB")
    palette = image.quantize(PNG_COLOURS, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    packed = io.BytesIO()
    palette.save(packed, format="PNG", optimize=True, dpi=(dpi, dpi))
    return packed.getvalue()


def small_png(fig: Figure) -> bytes:
    """`png_bytes` at `DPI`, or at the resolution (down to `MIN_DPI`) that brings it under `MAX_PNG_BYTES`."""
    dpi, image = DPI, png_bytes(fig, DPI)
    while len(image) > MAX_PNG_BYTES and dpi > MIN_DPI:  # bytes grow about with the pixels: dpi squared
        dpi = max(MIN_DPI, round(dpi * 0.95 * (MAX_PNG_BYTES / len(image)) ** 0.5))
        image = png_bytes(fig, dpi)
    if len(image) > MAX_PNG_BYTES:
        log.warning("a figure of %d bytes at %d dpi, the lowest kept: more than %d", len(image), dpi, MAX_PNG_BYTES)
    return image


def save_figure(fig: Figure, data: pd.DataFrame, out_dir: Path, stem: str, compress: bool = False) -> list[Path]:
    """Write ``stem.png`` (`small_png`) and ``stem.csv`` (the data behind the figure; ``compress``: ``stem.csv.gz``,
    for a long table). One image format: PNG, which Markdown, MLflow's artifact view and GitHub show as they are; the
    CSV redraws the figure in any other format."""
    out_dir.mkdir(parents=True, exist_ok=True)
    png, csv = out_dir / f"{stem}.png", out_dir / f"{stem}.csv{'.gz' if compress else ''}"
    png.write_bytes(small_png(fig))
    data.to_csv(csv, index=False, compression={"method": "gzip", "mtime": 0} if compress else None)
    return [png, csv]


# ---------------------------------------------------------------- scale and temperature axes


def _reciprocal(x: ArrayLike) -> np.ndarray:
    """Elementwise 1/x with 1/0 = 1e300: scale 0 is an infinite temperature, but axis limits must be finite."""
    x = np.asarray(x, dtype=float)
    return np.divide(1.0, x, out=np.full(x.shape, 1e300), where=x != 0)


def plain_number(value: float, _position: float | None = None) -> str:
    """Tick label ``100`` rather than ``10^2``."""
    return f"{value:g}"


def _on_x(transform: Transform) -> Callable[[ArrayLike], np.ndarray]:
    """Apply a 2-D transform to x values only."""

    def apply(x: ArrayLike) -> np.ndarray:
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
        ax.xaxis.set_minor_locator(SymmetricalLogLocator(linthresh=1, base=10, subs=list(range(2, 10))))
    ax.set_xlabel(SCALE_LABEL)
    add_temperature_axis(ax)


def _spaced(positions: dict[float, float], min_gap: float) -> list[float]:
    """Keys whose positions (axes fraction) are at least ``min_gap`` apart, taken in the mapping's order."""
    kept: dict[float, float] = {}
    for key, position in positions.items():
        if all(abs(position - other) >= min_gap for other in kept.values()):
            kept[key] = position
    return sorted(kept)


def format_swept_axis(
    ax: Axes, scales: Sequence[float], label: str = SCALE_LABEL, min_gap: float = 0.06, temperature: bool = True
) -> None:
    """A log scale axis ticked only at the swept (positive) scales, with their temperatures 1/scale on top.

    Scale 0 has no place on it: the untrained control is drawn as a reference line (``baseline_lines``).
    Ticks closer than ``min_gap`` (axes fraction) to a kept one are dropped, round temperatures kept first;
    ``temperature=False`` leaves out the top axis (inner panels of a grid).
    """
    swept = sorted({float(s) for s in scales if s > 0})
    ax.set_xscale("log")
    if len(swept) > 1:
        span = np.log(swept[-1] / swept[0])
        ax.set_xlim(swept[0] * np.exp(-0.06 * span), swept[-1] * np.exp(0.06 * span))
    ax.xaxis.set_minor_locator(NullLocator())
    to_axes = _on_x(ax.transData + ax.transAxes.inverted())
    round_first = sorted(swept, key=lambda s: (len(f"{1 / s:g}"), swept.index(s)))
    ticks = _spaced({s: float(to_axes(s)) for s in round_first}, min_gap)
    ax.set_xticks(ticks, [plain_number(s) for s in ticks])
    ax.set_xlabel(label)
    if not temperature:
        return
    top = ax.secondary_xaxis("top")  # temperatures need more room than scales: thinned again, round ones first
    top_ticks = _spaced({s: float(to_axes(s)) for s in round_first if s in ticks}, 1.6 * min_gap)
    top.set_xticks(top_ticks, [f"{1 / s:.2g}" for s in top_ticks])
    top.xaxis.set_minor_locator(NullLocator())
    top.set_xlabel("temperature = 1/" + label.split()[-1])


def mark_default(ax: Axes, scale: float | None, text: str) -> None:
    """A dotted vertical line at a library's default scale, labelled in the legend, when it is on the axis."""
    low, high = ax.get_xlim()
    if scale is not None and low <= scale <= high:
        ax.axvline(scale, color="0.35", linestyle=":", linewidth=0.8, label=text, zorder=0)


def baseline_lines(ax: Axes, values: Mapping[str, float], label: str = "untrained") -> None:
    """Horizontal reference lines (grey; validation solid, test dashed) for the untrained model's values."""
    for split, value in values.items():
        style = "--" if split == "test" else "-"
        ax.axhline(value, color="0.55", linestyle=style, linewidth=0.8, label=f"{label}, {split}", zorder=0)


def scale_norm(scales: pd.Series) -> Normalize:
    """Colour norm for scales: symlog (linthresh 1) so that 0 and large scales both get colours."""
    low, high = float(scales.min()), float(scales.max())
    return SymLogNorm(linthresh=1, vmin=low, vmax=max(high, low + 1))


# ---------------------------------------------------------------- legends and error bars


def legend_below(ax: Axes | Sequence[Axes], title: str, columns: int | None = None) -> None:
    """The legend of the axes (of several: each label once, its first handle) under the figure, so that it hides
    no data (needs constrained layout); ``columns`` defaults to 1 for long labels, else 2."""
    panels = [ax] if isinstance(ax, Axes) else list(ax)
    found: dict[str, Artist] = {}
    for panel in panels:
        for handle, label in zip(*panel.get_legend_handles_labels(), strict=True):
            found.setdefault(label, handle)
    handles, labels = list(found.values()), list(found)
    if columns is None:
        columns = 1 if max(map(len, labels), default=0) > 30 else min(len(labels), 2)
    figure = panels[0].get_figure()
    assert figure is not None  # the axes of a figure
    figure.legend(handles, labels, title=title, loc="outside lower center", ncols=columns, title_fontsize=6)


def interval_errors(rows: pd.DataFrame) -> np.ndarray:
    """``yerr`` for ``errorbar`` from a summary's ``mean, ci_low, ci_high`` (0 where the interval is NaN)."""
    return np.nan_to_num([rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]])


# ---------------------------------------------------------------- panel grids


def panel_shape(n: int, max_columns: int = MAX_PANEL_COLUMNS) -> tuple[int, int]:
    """(rows, columns) of a grid of ``n`` panels, at most ``max_columns`` wide."""
    columns = min(n, max_columns)
    return -(-n // columns), columns


def panel_axes(
    fig: Figure, n: int, sharex: bool, sharey: bool = True, max_columns: int = MAX_PANEL_COLUMNS
) -> tuple[list[Axes], list[Axes]]:
    """The grid's axes (all, for a shared colour bar) and its first ``n`` (the panels; the rest are hidden)."""
    rows, columns = panel_shape(n, max_columns)
    axes = list(fig.subplots(rows, columns, sharex=sharex, sharey=sharey, squeeze=False).ravel())
    for ax in axes[n:]:
        ax.set_visible(False)
    for ax in axes[:n]:  # a shared x hides the tick labels of every row but the last, even above an empty slot
        if not panel_below(ax):
            ax.xaxis.set_tick_params(which="both", labelbottom=True)
    return axes, axes[:n]


def panel_below(ax: Axes) -> bool:
    """Whether a visible panel of the same grid lies below ``ax`` in one of its columns."""
    spec, figure = ax.get_subplotspec(), ax.get_figure()
    if spec is None or figure is None:
        return False
    for other in figure.axes:
        below = other.get_subplotspec() if other is not ax and other.get_visible() else None
        if (
            below is not None
            and below.get_gridspec() is spec.get_gridspec()
            and below.rowspan.start >= spec.rowspan.stop
            and set(below.colspan) & set(spec.colspan)
        ):
            return True
    return False


def label_outer(ax: Axes) -> None:
    """``ax.label_outer()`` for a panel of a grid with empty slots: x tick labels and the x label stay on every
    panel with no visible panel below it (the bottom panel of each column), y ones on the first column only."""
    xlabel = ax.get_xlabel()
    ax.label_outer()
    if not panel_below(ax):
        ax.set_xlabel(xlabel)
        ax.xaxis.set_tick_params(which="both", labelbottom=True)


def facets(
    n: int, height: float = 2.0, sharey: bool = True, max_columns: int = MAX_PANEL_COLUMNS
) -> tuple[Figure, list[Axes]]:
    """A figure with ``n`` panels sharing x (and y unless told): one column wide for one panel, two otherwise;
    ``height`` inches per row of panels."""
    rows, _ = panel_shape(n, max_columns)
    fig = new_figure(
        COLUMN_SIZE[0] if n == 1 else DOUBLE_COLUMN_WIDTH, COLUMN_SIZE[1] if n == 1 else height * rows + 0.6
    )
    return fig, panel_axes(fig, n, sharex=True, sharey=sharey, max_columns=max_columns)[1]


def n_label(n: pd.Series | int) -> str:
    """``n=3`` or ``n=1-3`` for the seeds behind a series."""
    low, high = (int(n), int(n)) if isinstance(n, int) else (int(n.min()), int(n.max()))
    return f"n={low}" if low == high else f"n={low}-{high}"

"""Contrasts between scales across studies, paired over seeds, and the forest plot that shows them.

`seed_contrasts` takes the COMPLETE trials of one condition of a study and returns each contrast ``a - b`` (``a`` a
fixed scale, or the best scale the study chose) on the metric a study reads its answer on: per seed, the difference of
that seed's two trials (the same seed sees the same batches at every scale), then the mean and a Student-t interval
over the seeds. A study that swept a learning rate besides the scale compares each scale at its own best rate
(``per="scale"``) or every scale at the rate of the best cell (``per="condition"``), the rates chosen on the metric the
study chooses on, never on the one it reads.

`write_forest` draws rows of such contrasts (one row per study condition, one panel per contrast), with the band of
+-margin (a difference nobody would act on) and, where a row has one seed, the point without an interval. The rows,
their labels and their groups are the caller's: nothing here knows which studies a page reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from io import BytesIO
from pathlib import Path
from typing import cast

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from PIL import Image
from scipy import stats

from sweep.report.axes import PAPER_RC, legend_below, new_figure, plain_number
from sweep.stats import DEFAULT_MARGIN

BEST = "best"  # the contrast's first scale: the scale the study chose
SCALE, SEED = "loss.scale", "trial.seed"
CONTRAST_COLUMNS = ["contrast", "a", "b", "a_value", "b_value", "n", "mean", "ci_low", "ci_high"]
FOREST_COLUMNS = ["row", "group", "contrast", "n", "mean", "ci_low", "ci_high"]
METHOD = "paired over seeds: per seed, a - b of that seed's trials; mean and 95% t-interval over the seeds"


def _values(trials: pd.DataFrame, chosen_on: str, tune: str | None, per: str) -> dict[float, float | None]:
    """Per scale, the value of ``tune`` it is compared at (None without ``tune``)."""
    scales = sorted(float(s) for s in trials[SCALE].unique())
    if tune is None:
        return dict.fromkeys(scales)
    means = trials.groupby([SCALE, tune])[chosen_on].mean()
    if per == "scale":
        return {s: float(means[s].idxmax()) for s in scales}
    if per == "condition":
        best_cell = cast(tuple[float, float], means.idxmax())  # a MultiIndex label: (scale, value)
        return dict.fromkeys(scales, float(best_cell[1]))
    raise ValueError(f"per must be 'scale' or 'condition'; got {per!r}")


def seed_contrasts(
    trials: pd.DataFrame,
    chosen_on: str,
    read_on: str,
    contrasts: Sequence[tuple[float | str, float]],
    tune: str | None = None,
    per: str = "scale",
    level: float = 0.95,
) -> pd.DataFrame:
    """The `CONTRAST_COLUMNS` of each contrast (a, b) whose scales the trials hold (``a`` may be `BEST`): the COMPLETE
    trials of one condition (columns ``loss.scale``, ``trial.seed``, ``chosen_on``, ``read_on`` and ``tune``), scale 0
    (the untrained model) left out. The best scale has the highest mean ``chosen_on`` over seeds (at its ``tune``
    value); ``a_value`` and ``b_value`` are the ``tune`` values compared. Seeds that lack either trial are dropped;
    with one seed the interval is NaN."""
    trained = trials[(trials["state"] == "COMPLETE") & (trials[SCALE] > 0)] if "state" in trials else trials
    trained = trained[trained[SCALE] > 0]
    values = _values(trained, chosen_on, tune, per)
    at_own = trained if tune is None else trained[trained[tune] == trained[SCALE].map(values)]
    chosen = at_own.groupby(SCALE)[chosen_on].mean()
    best = float(chosen.idxmax())
    wide = at_own.pivot_table(index=SEED, columns=SCALE, values=read_on)
    rows = []
    for a, b in contrasts:
        first = best if a == BEST else float(a)
        if first not in wide or b not in wide:
            continue
        differences = (wide[first] - wide[b]).dropna().to_numpy()
        n = len(differences)
        mean = float(differences.mean()) if n else np.nan
        if n > 1:
            spread = differences.std(ddof=1) / np.sqrt(n)
            half = float(stats.t.ppf(0.5 + level / 2, n - 1) * spread)
        else:
            half = np.nan
        label = f"{'best' if a == BEST else plain_number(first)} - {plain_number(b)}"
        rows.append((label, first, b, values[first], values[b], n, mean, mean - half, mean + half))
    return pd.DataFrame(rows, columns=CONTRAST_COLUMNS)


def _row_positions(rows: pd.DataFrame) -> tuple[list[str], dict[str, float], list[tuple[str, float]]]:
    """The rows in order, their y positions (top first) with a gap above each group, and (group, y of its header)."""
    order = list(dict.fromkeys(rows["row"]))
    group_of = dict(zip(rows["row"], rows["group"], strict=True))
    positions, headers, y, current = {}, [], 0.0, None
    for row in order:
        if group_of[row] != current:
            current = group_of[row]
            headers.append((str(current), y))
            y += 1.0
        positions[row] = y
        y += 1.0
    return order, positions, headers


FOREST_DPI = 200  # small text (one row per study condition) stays legible; the palette keeps the file small
PALETTE = 64  # colours of the saved PNG


def write_forest(
    rows: pd.DataFrame,
    out_dir: Path,
    stem: str = "forest",
    margin: float = DEFAULT_MARGIN,
    title: str = "",
    method: str = METHOD,
) -> list[Path]:
    """The forest plot of ``rows`` (`FOREST_COLUMNS`, in the order to draw, top first; more columns are kept in the
    CSV): one panel per contrast, one line per row, rows grouped under their ``group``; the band +-``margin`` and the
    zero line; an interval only where a row has more than one seed; a row whose two scales are one (the best scale is
    the reference: columns ``a`` and ``b`` equal) is a hollow diamond at 0, not a point estimate. A row without a
    contrast leaves its line empty in that panel. Writes ``stem.png`` and ``stem.csv``; nothing for no rows."""
    if rows.empty:
        return []
    missing = set(FOREST_COLUMNS) - set(rows.columns)
    if missing:
        raise ValueError(f"rows lack {sorted(missing)}")
    contrasts = list(dict.fromkeys(rows["contrast"]))
    order, positions, headers = _row_positions(rows)
    same = (rows["a"] == rows["b"]) if {"a", "b"} <= set(rows.columns) else pd.Series(False, index=rows.index)
    height = 0.2 * (len(order) + len(headers)) + 1.3
    with mpl.rc_context(PAPER_RC):
        fig = new_figure(6.6, height)
        axes = fig.subplots(1, len(contrasts), sharey=True, squeeze=False)[0]
        drawn = rows[~same]
        low = float(np.nanmin([drawn["ci_low"].min(), drawn["mean"].min(), -margin]))
        high = float(np.nanmax([drawn["ci_high"].max(), drawn["mean"].max(), margin]))
        pad = 0.06 * (high - low)
        for ax, contrast in zip(axes, contrasts, strict=True):
            ax.axvspan(-margin, margin, color="0.88", zorder=0, linewidth=0, label=f"within +-{margin:g} (the margin)")
            ax.axvline(0.0, color="0.35", linewidth=0.7, zorder=1)
            part = rows[(rows["contrast"] == contrast) & ~same]
            shown, single = part[part["n"] > 1], part[part["n"] <= 1]
            ax.errorbar(
                shown["mean"],
                shown["row"].map(positions),
                xerr=[shown["mean"] - shown["ci_low"], shown["ci_high"] - shown["mean"]],
                fmt="o",
                ms=2.5,
                color="C0",
                capsize=1.2,
                elinewidth=0.8,
                label="mean and 95% interval over seeds",
                zorder=3,
            )
            if not single.empty:
                ax.scatter(
                    single["mean"],
                    single["row"].map(positions),
                    s=10,
                    facecolors="none",
                    edgecolors="C0",
                    label="one seed: no interval",
                    zorder=3,
                )
            itself = rows[(rows["contrast"] == contrast) & same]
            if not itself.empty:
                ax.scatter(
                    [0.0] * len(itself),
                    itself["row"].map(positions),
                    s=14,
                    marker="D",
                    facecolors="none",
                    edgecolors="C3",
                    label="the best scale is the reference: nothing to compare",
                    zorder=3,
                )
            ax.set_xlim(low - pad, high + pad)
            ax.set_title(contrast, size=6.5)
            ax.grid(True, axis="x", color="0.93", linewidth=0.5)
            ax.tick_params(axis="y", length=0)
            ax.tick_params(axis="x", labelsize=5)
            ax.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
        axes[0].set_yticks([positions[row] for row in order], order, fontsize=4.3)
        for group, y in headers:
            axes[0].annotate(
                group,
                xy=(0, y),
                xycoords=("axes fraction", "data"),
                xytext=(-3, 0),
                textcoords="offset points",
                ha="right",
                va="center",
                fontsize=5.2,
                fontweight="bold",
            )
            for ax in axes:
                ax.axhline(y - 0.5, color="0.7", linewidth=0.5, zorder=0)
        axes[0].set_ylim(max(positions.values()) + 0.7, -0.7)
        axes[len(axes) // 2].set_xlabel(
            "difference in the row's metric (positive: the first scale scores higher)", size=5.5
        )
        if title:
            fig.suptitle(title, size=7)
        legend_below(list(axes), method, columns=2)
        out_dir.mkdir(parents=True, exist_ok=True)
        png, csv = out_dir / f"{stem}.png", out_dir / f"{stem}.csv"
        _save_small(fig, png)
        rows.to_csv(csv, index=False)
        return [png, csv]


def _save_small(fig: Figure, png: Path) -> None:
    """The figure as a PNG of at most `PALETTE` colours (a plot of a few flat colours loses nothing to the palette,
    and the file shrinks to a page's size)."""
    buffer = BytesIO()
    fig.savefig(buffer, format="png", dpi=FOREST_DPI, bbox_inches="tight")
    buffer.seek(0)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=PALETTE).save(png, optimize=True)

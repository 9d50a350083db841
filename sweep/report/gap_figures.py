"""The ``gap_vs_condition`` figure: at each value of a study's one numeric condition (batch size, training rows,
learning rate), how far each scale lies below that condition's best, with the verdict method's simultaneous
interval, on the metric the study chose on. It shows whether the gap between scales shrinks with the condition, side
by side for the scales colder and warmer than the best; the interval of a change across conditions is a difference
in differences (`sweep.stats.difference_in_differences`), not the overlap of these bars."""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd

from sweep.report.axes import PAPER_RC, legend_below, n_label, new_figure, plain_number, save_figure
from sweep.report.best_scale_figures import format_condition_axis, key_words, metric_words, numeric_condition
from sweep.report.factor_figures import interval_line

STEM = "gap_vs_condition"


def gap_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per condition value and scale: the gap best - scale (``mean``), its simultaneous interval and the seeds, on
    the table's first metric; empty unless the study has at least two values of one numeric condition."""
    rows = comparison
    if "metric" in rows:
        rows = rows[rows["metric"] == rows["metric"].iloc[0]]
    found = numeric_condition(rows["condition"]) if "condition" in rows and not rows.empty else None
    if found is None or found[1].nunique() < 2:
        return pd.DataFrame()
    key, values = found
    bests = rows[rows["best"].astype(bool)].set_index("condition")["scale"]
    return pd.DataFrame(
        {
            "condition_key": key,
            "condition_value": values.to_numpy(),
            "scale": rows["scale"].to_numpy(dtype=float),
            "best_scale": rows["condition"].map(bests).to_numpy(dtype=float),
            "n": rows["n_seeds"].to_numpy(),
            "mean": rows["diff_to_best"].to_numpy(dtype=float),
            "ci_low": rows["ci_low"].to_numpy(dtype=float),
            "ci_high": rows["ci_high"].to_numpy(dtype=float),
            "metric": rows["metric"].to_numpy() if "metric" in rows else "stsb_validation_spearman",
        }
    )


def side_colours(scales: list[float], best: float) -> dict[float, tuple[float, float, float, float]]:
    """A saturated colour per scale: reds for the scales warmer than the best (lower scale, deeper the further), blues
    for the colder ones; none is grey or near white (the diverging map's middle drew a scale next to the best, the
    library default 20, in light grey)."""
    warm = sorted((s for s in scales if s < best), reverse=True)  # nearest the best first: the lightest red
    cold = sorted(s for s in scales if s >= best)
    colours: dict[float, tuple[float, float, float, float]] = {}
    for side, members in (("Reds", warm), ("Blues", cold)):
        shades = np.linspace(0.45, 0.95, len(members)) if len(members) > 1 else [0.75] * len(members)  # or none
        colours |= {scale: tuple(mpl.colormaps[side](shade)) for scale, shade in zip(members, shades, strict=True)}
    return colours


def write_gap_vs_condition(comparison: pd.DataFrame, out_dir: Path, note: str = "") -> list[Path]:
    """The figure and its CSV from a comparison table (``objective_comparison`` or ``paired_comparison``); ``note``:
    what the conditions hold fixed or let vary, in words (e.g. that the steps are the same at every data size), for
    the title."""
    data = gap_table(comparison)
    if data.empty:
        return []
    key = str(data["condition_key"].iloc[0])
    name = key.rsplit(".", 1)[-1]
    values = sorted(data["condition_value"].unique())
    others = data[data["scale"] != data["best_scale"]]
    scales = sorted(others["scale"].unique())
    best = float(data["best_scale"].median())
    with mpl.rc_context(PAPER_RC):
        fig = new_figure(3.8, 3.2)
        ax = fig.add_subplot()
        colours = side_colours(scales, best)
        for scale in scales:
            line = others[others["scale"] == scale].sort_values("condition_value")
            interval_line(ax, line["condition_value"], line, colours[scale], f"scale {plain_number(scale)}", "o")
        ax.axhline(0.0, color="0.35", lw=0.8, linestyle=":", label="no gap (the best scale)", zorder=0)
        format_condition_axis(ax, values, name)
        ax.set_xlabel(key_words(name))
        ax.set_ylabel(f"best minus this scale\n({metric_words(str(data['metric'].iloc[0]))})")
        bests = ", ".join(sorted({plain_number(b) for b in data["best_scale"]}))
        title = f"Gap to each condition's best scale ({bests})\n{n_label(data['n'])} seeds per scale"
        ax.set_title(f"{title}\n{note}" if note else title)
        bars = "bars: simultaneous 95% interval (verdict method)" if (data["n"] > 1).all() else "one seed: no interval"
        legend_below(ax, f"red: warmer (lower scale), blue: colder (higher scale); {bars}", columns=3)
        return save_figure(fig, data, out_dir, STEM)

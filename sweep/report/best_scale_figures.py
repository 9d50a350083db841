"""The ``best_scale_vs_condition`` figure: at each value of a study's one numeric condition (batch size, training
rows, learning rate), the scale chosen and the 95% confidence set for the best, on the metric the study chose on.

It answers "does the best scale move with the condition" by eye; the interval that answers it in numbers is the
difference in differences of the findings page (`sweep.stats.interactions`). For the batch size the x ticks also give
ln C, the loss of an untrained model (every logit equal) with C = batch in-batch candidates, which is what the
temperature is set against.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import matplotlib as mpl
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, NullLocator

from sweep.report.axes import ALL_ROWS, PAPER_RC, legend_below, n_label, new_figure, plain_number, save_figure
from sweep.report.summaries import METRIC_LABELS

STEM = "best_scale_vs_condition"
DEFAULT_SCALE = 20.0  # sentence-transformers' MNRL default: the reference line
KEY_WORDS = {
    "batch_size": "batch size",
    "max_samples": "training rows",
    "learning_rate": "learning rate",
    "start_scale": "scale the start model was trained at",
}


def numeric_condition(conditions: pd.Series) -> tuple[str, pd.Series] | None:
    """(key, values) when every condition is one ``key=number`` of the same key, else None."""
    parts = conditions.astype(object).fillna("").astype(str).str.split("=", n=1)
    if conditions.empty or not all(len(p) == 2 and "," not in p[1] for p in parts):
        return None
    keys = {p[0] for p in parts}
    if len(keys) != 1:
        return None
    try:
        return keys.pop(), pd.to_numeric(parts.str[1])
    except ValueError:
        return None


def key_words(name: str) -> str:
    """A condition's key (its last part: ``batch_size``) as an axis label in words (``batch size``)."""
    return KEY_WORDS.get(name, name.replace("_", " "))


def tick_label(name: str, value: float) -> str:
    if name == "max_samples" and value >= ALL_ROWS:
        return "all"
    text = f"{value:,.0f}" if name == "max_samples" else plain_number(value)
    return f"{text}\n(ln C {math.log(value):.2f})" if name == "batch_size" else text


def format_condition_axis(ax: Axes, values: Sequence[float], name: str) -> None:
    """An x axis ticked only at a numeric condition's values, in words (``tick_label``): log when they are all
    positive, symlog (linear up to the smallest positive value) when 0 is one of them, so that no value run falls
    off the axis."""
    positive = [v for v in values if v > 0]
    if len(positive) == len(values):
        ax.set_xscale("log")
    else:
        ax.set_xscale("symlog", linthresh=min(positive) if positive else 1.0)
    ax.xaxis.set_major_locator(FixedLocator(values))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([tick_label(name, v) for v in values])


def metric_words(metric: str) -> str:
    """``captions30k_val_ndcg_at_10`` -> ``captions30k validation NDCG@10``, ``sts_ood_spearman`` -> ``sts_ood
    Spearman`` (the set keeps its name); STSB's Spearman by its label."""
    if metric in METRIC_LABELS:
        return METRIC_LABELS[metric]
    words = metric.replace("_val_", " validation ").replace("_test_", " test ")
    words = re.sub(
        r"(^|[ _])(ndcg|mrr|map|recall|precision)_at_(\d+)",
        lambda m: f"{' ' if m[1] else ''}{m[2].upper()}@{m[3]}",
        words,
    )
    return re.sub(r"_(spearman|pearson)$", lambda m: f" {m[1].capitalize()}", words)


def best_scale_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """One row per condition and scale run: the condition value, whether the scale is the best and whether it is in
    the confidence set, and the seeds (the first metric of a table that holds a test split too)."""
    rows = comparison
    if "metric" in rows:
        rows = rows[rows["metric"] == rows["metric"].iloc[0]]
    found = numeric_condition(rows["condition"]) if "condition" in rows else None
    if found is None:
        return pd.DataFrame()
    key, values = found
    return pd.DataFrame(
        {
            "condition_key": key,
            "condition_value": values.to_numpy(),
            "scale": rows["scale"].to_numpy(dtype=float),
            "best": rows["best"].astype(bool).to_numpy(),
            "in_confidence_set": rows["in_confidence_set"].astype(bool).to_numpy(),
            "n_seeds": rows["n_seeds"].to_numpy(),
            "metric": rows["metric"].to_numpy() if "metric" in rows else "stsb_validation_spearman",
        }
    )


def write_best_scale_vs_condition(
    comparison: pd.DataFrame, out_dir: Path, diagonal: bool = False, replicates: str = ""
) -> list[Path]:
    """The figure and its CSV from a comparison table (``objective_comparison`` or ``paired_comparison``); nothing
    unless the study has at least two values of one numeric condition. ``diagonal``: the condition is itself a scale
    (the one a start model was trained at): draw best = condition, the line a best scale that follows it would lie
    on. ``replicates``: what the table's ``n_seeds`` counts, in words for the title, when it is not one training seed
    each (e.g. "3 start models per start scale, 1 fine-tuning seed each"); default "n=K seeds per scale"."""
    data = best_scale_table(comparison)
    if data.empty or data["condition_value"].nunique() < 2:
        return []
    key = str(data["condition_key"].iloc[0])
    name = key.rsplit(".", 1)[-1]
    metric = str(data["metric"].iloc[0])
    with mpl.rc_context(PAPER_RC):
        fig = new_figure(3.6, 3.0)
        ax = fig.add_subplot()
        ax.scatter(data["condition_value"], data["scale"], s=6, color="0.75", label="scale run", zorder=1)
        held = data[data["in_confidence_set"]]
        ax.scatter(
            held["condition_value"],
            held["scale"],
            s=55,
            facecolors="none",
            edgecolors="tab:blue",
            linewidths=0.9,
            label="in the 95% confidence set for the best",
            zorder=2,
        )
        best = data[data["best"]].sort_values("condition_value")
        ax.plot(best["condition_value"], best["scale"], "o-", color="tab:blue", ms=4, lw=0.9, label="best", zorder=3)
        ax.axhline(DEFAULT_SCALE, color="0.35", linestyle=":", linewidth=0.8, label="library default 20", zorder=0)
        values = sorted(data["condition_value"].unique())
        if diagonal:
            ax.plot(values, values, color="tab:red", linestyle="--", linewidth=0.8, label="best = " + key_words(name))
        format_condition_axis(ax, values, name)
        if values[0] > 0:
            ax.set_xlim(values[0] / 1.6, values[-1] * 1.6)
        scales = sorted(data["scale"].unique())
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(FixedLocator(scales))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(plain_number)
        ax.set_xlabel(key_words(name))
        ax.set_ylabel("scale (1/temperature)")
        seeds = replicates or f"{n_label(data['n_seeds'])} seeds per scale"
        ax.set_title(f"Best scale by {key_words(name)}\nchosen on {metric_words(metric)}, {seeds}")
        legend_below(ax, "", columns=2)
        return save_figure(fig, data, out_dir, STEM)

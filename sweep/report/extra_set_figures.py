"""The ``extra_sets_vs_scale`` figure: every ``eval.extra`` metric vs scale next to STSB validation and test.

The sets a study scored are read from its trials' logged ``eval.extra`` param (the resolved list of entries), so
the figure needs no naming convention beyond ``sweep.evaluation.extra_sets.metric_names``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from sweep.evaluation import KINDS, metric_names
from sweep.report.axes import (
    DOUBLE_COLUMN_WIDTH,
    PAPER_RC,
    condition_title,
    format_swept_axis,
    legend_below,
    new_figure,
    save_figure,
)
from sweep.report.best_scale_figures import metric_words
from sweep.report.study_context import UNTRAINED_SCALE
from sweep.report.summaries import (
    METRIC_LABELS,
    SCALE,
    complete_trials,
    condition_columns,
    condition_label,
    t_interval,
)

EXTRA_PARAM = "param.eval.extra"


def extra_metrics(trials: pd.DataFrame) -> list[str]:
    """The ``<name>_<metric>`` columns of the extra sets the trials logged, in config order."""
    if EXTRA_PARAM not in trials:
        return []
    found: list[str] = []
    for text in trials[EXTRA_PARAM].dropna().unique():
        try:
            entries = json.loads(text)  # MLflow's param: JSON
        except (TypeError, ValueError):
            try:  # a results folder's config.yaml, flattened: the list's Python form
                entries = ast.literal_eval(text)
            except (TypeError, ValueError, SyntaxError):
                continue
        for spec in entries if isinstance(entries, list) else []:
            if isinstance(spec, dict) and spec.get("kind") in KINDS and spec.get("name"):
                found += [m for m in metric_names(spec) if m in trials and m not in found]
    return found


def extra_summary(trials: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Per metric, condition and scale: n seeds, mean and 95% t-interval (COMPLETE trials)."""
    complete = complete_trials(trials)
    keys = [*condition_columns(trials).values(), "scale"]
    rows = [
        {"metric": metric, **dict(zip(keys, group_keys, strict=True)), **t_interval(group[metric])}
        for metric in metrics
        if metric in complete
        for group_keys, group in complete.groupby(keys, dropna=False)
    ]
    summary = pd.DataFrame(rows, columns=["metric", *keys, "n", "mean", "ci_low", "ci_high"])
    return summary[summary["n"] > 0].reset_index(drop=True)


def _seeds_label(summary: pd.DataFrame) -> str:
    """``3 seeds`` (or ``1-3 seeds`` when the points differ) for the legend of the trained means."""
    low, high = int(summary["n"].min()), int(summary["n"].max())
    return f"{low} seed{'s' if high != 1 else ''}" if low == high else f"{low}-{high} seeds"


def _show_references(ax: Axes, values: pd.Series) -> None:
    """Widen the y range so that every reference line lies inside it (``axhline`` does not count for autoscaling)."""
    if values.empty:
        return
    low, high = ax.get_ylim()
    pad = 0.05 * (high - low)
    ax.set_ylim(min(low, float(values.min()) - pad), max(high, float(values.max()) + pad))


@mpl.rc_context(PAPER_RC)
def write_extra_sets_vs_scale(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """One panel per metric (STSB validation and test first, then each extra set's metrics) vs scale, mean and
    95% t-interval over seeds (a bare mean with one seed), one colour per condition; the untrained model (scale 0)
    as a dashed reference line in its condition's colour; ``[]`` without extra sets or without a scale sweep."""
    extras = extra_metrics(trials)
    if not extras or SCALE not in trials or trials.loc[trials.state == "COMPLETE", SCALE].nunique() < 2:
        return []
    metrics = [m for m in METRIC_LABELS if m in trials] + extras
    summary = extra_summary(trials, metrics)
    trained = summary[summary["scale"] != UNTRAINED_SCALE]
    conditions = list(condition_columns(trials).values())
    columns = min(len(metrics), 3)
    rows = -(-len(metrics) // columns)
    fig = new_figure(DOUBLE_COLUMN_WIDTH, 2.0 * rows + 0.8)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    seeds = _seeds_label(trained) if not trained.empty else ""
    for ax, metric in zip(axes, metrics, strict=False):
        rows_of_metric = summary[summary.metric == metric]
        groups = rows_of_metric.groupby(conditions, dropna=False) if conditions else [("", rows_of_metric)]
        for colour, (condition, group) in enumerate(groups):
            values = condition if isinstance(condition, tuple) else (condition,) if conditions else ()
            words = condition_title(condition_label(conditions, values), ", ")
            points = group[group["scale"] != UNTRAINED_SCALE]
            errors = [points["mean"] - points["ci_low"], points["ci_high"] - points["mean"]]
            ax.errorbar(
                points["scale"],
                points["mean"],
                yerr=np.nan_to_num(errors),
                marker="o",
                capsize=2,
                color=f"C{colour}",
                label=f"{words + ': ' if words else ''}trained, mean and 95% t-interval ({seeds})",
            )
            untrained = group.loc[group["scale"] == UNTRAINED_SCALE, "mean"]
            if not untrained.empty:
                ax.axhline(
                    float(untrained.iloc[0]),
                    color=f"C{colour}",
                    linestyle="--",
                    linewidth=0.8,
                    label=f"{words + ': ' if words else ''}untrained model (scale 0)",
                    zorder=0,
                )
        _show_references(ax, rows_of_metric.loc[rows_of_metric["scale"] == UNTRAINED_SCALE, "mean"])
        ax.set_title(metric_words(metric))
        format_swept_axis(ax, sorted(trained["scale"].unique()), min_gap=0.1)  # narrow panels: fewer ticks
    legend_below(list(axes[: len(metrics)]), "")
    return save_figure(fig, summary, out_dir, "extra_sets_vs_scale")

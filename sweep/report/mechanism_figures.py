"""The mechanism statistics against the swept scale (``mechanism_vs_scale``): alignment, uniformity, tolerance, the
effective number of negatives, the hardest negative's weight, 1 - AUC of positives against random pairs and the
held-out MNRL loss at every evaluated scale, one panel each, one line per condition.

The table has one row per condition, scale and statistic (the metric's name, see ``sweep.stats.concentration``):
n seeds, the mean, its 95% t-interval over seeds (NaN bounds with one seed) and ``untrained``, the mean of the
metric's ``_init`` value (before training) or, for a statistic that does not depend on the trial's scale, of the
condition's scale-0 trials (zero gradient: the untrained model). Scale 0 stays in the table but, as in the other
figures against scale, is not a point of the log axis; the untrained value is the dashed reference instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from sweep.report.axes import (
    PAPER_RC,
    condition_title,
    facets,
    format_swept_axis,
    interval_errors,
    legend_below,
    mark_default,
    n_label,
    panel_shape,
    save_figure,
)
from sweep.report.study_context import UNTRAINED_SCALE, library_default, scale_axis_label
from sweep.report.summaries import (
    INIT,
    INTERVAL_COLUMNS,
    LOSS_AT_SCALE,
    by_condition,
    complete_trials,
    condition_names,
    identical_title,
    mechanism_metrics,
    merge_identical,
    t_interval,
)

STEM = "mechanism_vs_scale"
MECHANISM_COLUMNS = {"scale", "statistic", *INTERVAL_COLUMNS, "untrained"}  # the table's own columns
SCALE_DEPENDENT = {"sim_effective_negatives", "sim_hardest_negative_weight"}  # measured at the trial's own scale
TITLES = {
    "sim_alignment": "alignment: mean squared distance\nof positive pairs (lower: closer)",
    "sim_pos_mean": "mean cosine of held-out\npositive pairs",
    "sim_uniformity": "uniformity: log mean exp(-2 distance²)\n(lower: more uniform)",
    "sim_tolerance": "tolerance: mean cosine of STSB\npairs with a high gold score",
    "sim_effective_negatives": "effective number of negatives\n(softmax at the trained scale)",
    "sim_hardest_negative_weight": "weight of the hardest negative\n(softmax at the trained scale)",
    "sim_p_rand_above_pos": "1 - AUC: random pairs above\npositive pairs (lower: apart)",
}


def panel_title(statistic: str) -> str:
    """The panel title of a statistic, in words."""
    match = LOSS_AT_SCALE.match(statistic)
    return f"held-out MNRL loss\nevaluated at scale {match[1]}" if match else TITLES[statistic]


def mechanism_statistics(trials: pd.DataFrame) -> list[str]:
    """The statistics to draw, in panel order: the logged mechanism metrics, without the positive pairs' mean
    cosine when their alignment (on unit vectors 2 - 2 x that cosine) is logged."""
    metrics = mechanism_metrics(trials)
    return [m for m in metrics if not (m == "sim_pos_mean" and "sim_alignment" in metrics)]


def _untrained_from_scale_zero(table: pd.DataFrame, conditions: list[str]) -> pd.Series:
    """``untrained``, its gaps filled from the scale-0 mean of the same condition and statistic, where the statistic
    does not depend on the trial's scale."""
    keys = [*conditions, "statistic"]
    zero = table[(table["scale"] == UNTRAINED_SCALE) & ~table["statistic"].isin(SCALE_DEPENDENT)]
    if zero.empty:
        return table["untrained"]
    filled = table[keys].merge(zero[[*keys, "mean"]], on=keys, how="left")["mean"]
    return table["untrained"].fillna(pd.Series(filled.to_numpy(), index=table.index))


def mechanism_summary(trials: pd.DataFrame) -> pd.DataFrame:
    """Per condition, scale and statistic over COMPLETE trials: n, mean, 95% t-interval and the untrained value (see
    the module docstring); rows only where the statistic was logged."""
    complete = complete_trials(trials)
    conditions = condition_names(trials)
    keys = [*conditions, "scale"]
    columns = [*keys, "statistic", *INTERVAL_COLUMNS, "untrained"]
    if "scale" not in complete:
        return pd.DataFrame(columns=columns)
    rows = [
        {**dict(zip(keys, values, strict=True)), "statistic": statistic, **interval}
        | {"untrained": group[statistic + INIT].mean() if statistic + INIT in group else np.nan}
        for statistic in mechanism_statistics(complete)
        for values, group in complete.groupby(keys, dropna=False)
        if (interval := t_interval(group[statistic]))["n"] > 0
    ]
    table = pd.DataFrame(rows, columns=columns)
    return table.assign(untrained=_untrained_from_scale_zero(table, conditions)) if rows else table


def _draw(ax: Axes, rows: pd.DataFrame, colour: str, label: str, reference: tuple[str, str] | None) -> None:
    """One condition's statistic vs scale (markers at the scales run, error bars where n > 1) and its untrained
    value (unless ``reference`` is None): a horizontal dashed line, or a dashed curve where it depends on the scale
    it is measured at."""
    trained = rows[rows["scale"] != UNTRAINED_SCALE].sort_values("scale")
    errors = interval_errors(trained) if (trained["n"] > 1).any() else None
    ax.errorbar(trained["scale"], trained["mean"], yerr=errors, marker="o", capsize=2, color=colour, label=label)
    untrained = trained.dropna(subset=["untrained"])["untrained"]
    if untrained.empty or reference is None:
        return
    reference_colour, text = reference
    style: dict[str, Any] = {"color": reference_colour, "linestyle": "--", "linewidth": 0.8, "label": text, "zorder": 0}
    if np.allclose(untrained, untrained.iloc[0], rtol=1e-9, atol=0):
        ax.axhline(untrained.iloc[0], **style)
    else:
        ax.plot(trained.loc[untrained.index, "scale"], untrained, **style)


def _shared_start(trained: pd.DataFrame, conditions: list[str]) -> set[str]:
    """The statistics whose untrained value every condition has, the same at each scale (the conditions share one
    start model and the statistic does not depend on the condition, e.g. alignment across batch sizes)."""
    known = trained.dropna(subset=["untrained"]).groupby(["statistic", "scale"])["untrained"]
    every = known.count() == len(trained[conditions].drop_duplicates())
    same = (known.max() - known.min() <= 1e-9) & every
    held = same.groupby(level="statistic").all()
    return set(held.index[held])


@mpl.rc_context(PAPER_RC)
def write_mechanism_vs_scale(summary: pd.DataFrame, trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """One panel per statistic of a ``mechanism_summary`` (each its own y range), one line per condition; nothing
    when fewer than two positive scales have a statistic."""
    if summary.empty:
        return []
    trained = summary[summary["scale"] != UNTRAINED_SCALE]
    if trained["scale"].nunique() < 2:
        return []
    statistics = list(dict.fromkeys(trained["statistic"]))
    conditions = [column for column in summary.columns if column not in MECHANISM_COLUMNS]
    fig, axes = facets(len(statistics), height=1.75, sharey=False)
    columns = panel_shape(len(statistics))[1]
    merged = merge_identical(by_condition(summary, conditions), ["scale", "statistic", "n"])  # arms of one loss
    shared = _shared_start(trained, conditions) if len(merged) > 1 else set()
    for index, (labels, rows) in enumerate(merged):
        condition = identical_title(labels, lambda label: condition_title(label, ", "))
        colour = f"C{index % 10}"
        n = rows.loc[rows["scale"] != UNTRAINED_SCALE, "n"]
        label = f"{condition or 'after training'} ({n_label(n)}{', mean, 95% t-CI' if (n > 1).any() else ''})"
        own = ("0.45", "untrained") if not condition else (colour, f"untrained, {condition}")
        for ax, statistic in zip(axes, statistics, strict=True):
            # a start shared by every condition is drawn once, in grey, not once per condition on top of itself
            reference = (None if index else ("0.45", "untrained, every condition")) if statistic in shared else own
            if not (selected := rows[rows["statistic"] == statistic]).empty:
                _draw(ax, selected, colour, label, reference)
    for index, (ax, statistic) in enumerate(zip(axes, statistics, strict=True)):
        format_swept_axis(ax, trained["scale"], scale_axis_label(trials), min_gap=0.1, temperature=index < columns)
        mark_default(ax, *library_default(trials))
        ax.set_title(panel_title(statistic), pad=2)
        ax.grid(True, axis="y", color="0.92", linewidth=0.5)
        if index + columns < len(statistics):  # a panel below shares this x axis: only the bottom one is labelled
            ax.set_xlabel("")
            ax.tick_params(labelbottom=False)
    legend_below(axes, "mean over seeds at each scale run (n = seeds per point); dashed: before training")
    return save_figure(fig, summary, out_dir, STEM, compress=True)  # statistics x scales x conditions: long

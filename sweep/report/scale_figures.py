"""Figures against the swept scale: STSB Spearman and similarity concentration, drawn from their summary tables.

The x axis is logarithmic and ticked only at the swept scales (temperatures on top); scale 0, the untrained
control, is a horizontal reference line, not a point of the curve; the loss's library default is a dotted
vertical line; intervals are drawn only where n > 1. Each writer saves a PNG + the table as CSV into
``out_dir`` and returns the paths it wrote, or ``[]`` when the table is empty.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from sweep.report.axes import (
    DOUBLE_COLUMN_WIDTH,
    PAPER_RC,
    baseline_lines,
    condition_title,
    facets,
    format_swept_axis,
    interval_errors,
    label_outer,
    legend_below,
    mark_default,
    n_label,
    new_figure,
    save_figure,
)
from sweep.report.results_folder import FixedScaleReference
from sweep.report.study_context import UNTRAINED_SCALE, library_default, scale_axis_label, untrained_values
from sweep.report.summaries import (
    IN_CONFIDENCE_SET,
    OPTIMUM_COLUMNS,
    SIM_KINDS,
    SPEARMAN_COLUMNS,
    by_condition,
    identical_title,
    merge_identical,
)
from sweep.stats import Optimum

CONCENTRATION_COLUMNS = {"scale", "kind", "stage", "n", "mean", "q05", "q95"}
SPLIT_STYLES = {"validation": "-", "test": "--"}
# panel titles: SIM_KINDS, shortened to fit five panels in a row
KIND_TITLES = {**SIM_KINDS, "high": "STSB, high gold score", "low": "STSB, low gold score"}


def _conditions(table: pd.DataFrame, own: set[str]) -> list[str]:
    """The condition columns of a summary table: every column that is not one of its own."""
    return [column for column in table.columns if column not in own]


OPTIMUM_METHOD = "parabola in log scale near the peak, 95%"  # how `sweep.stats.optimum` locates it, in words


def _located_optimum(rows: pd.DataFrame) -> Optimum | None:
    """The condition's continuous optimum from its trained validation rows' `OPTIMUM_COLUMNS` (an untrained row
    pooled over conditions carries none); None when they are absent, flagged (the flag is told in the text, not
    drawn) or not finite."""
    validation = rows[(rows["split"] == "validation") & (rows["scale"] != UNTRAINED_SCALE)]
    if validation.empty or not set(OPTIMUM_COLUMNS) <= set(validation.columns):
        return None
    first = validation.iloc[0]
    values = [float(first[column]) for column in OPTIMUM_COLUMNS[:-1]]
    flag = first["optimum_flag"]
    if (isinstance(flag, str) and flag) or not np.isfinite(values).all():
        return None
    estimate, low, high = values
    return Optimum(estimate, low, high)


def _optimum_band(ax: Axes, optimum: Optimum, label: str) -> None:
    """A light band over the optimum's interval and a thin line at its estimate, in the validation colour."""
    ax.axvspan(optimum.low, optimum.high, color="C0", alpha=0.1, linewidth=0, zorder=0, label=label)
    ax.axvline(optimum.estimate, color="C0", linewidth=0.6, alpha=0.7, zorder=1)


def _spearman_panel(
    ax: Axes,
    rows: pd.DataFrame,
    trials: pd.DataFrame,
    reference: FixedScaleReference | None = None,
    optimum_in_legend: bool = True,
) -> None:
    """Validation and test Spearman vs scale of one condition, the untrained lines, the default, the shading, the
    validation optimum's band when located (its numbers in the legend, or in words only when ``optimum_in_legend``
    is False: the caller puts them in the panel's title), and a sibling's fixed-scale validation curve in grey."""
    trained = rows[rows["scale"] != UNTRAINED_SCALE]
    if reference is not None:
        ax.plot(
            reference.rows["scale"],
            reference.rows["mean"],
            marker="s",
            markersize=2.5,
            color="0.6",
            zorder=1,
            label=f"fixed scale ({reference.name}, {n_label(reference.rows['n'])})",
        )
    for split, group in trained.groupby("split", sort=False):
        with_interval = bool((group["n"] > 1).all())
        ax.errorbar(
            group["scale"],
            group["mean"],
            yerr=interval_errors(group) if with_interval else None,
            marker="o",
            capsize=2,
            color="C0" if split == "validation" else "C1",
            linestyle=SPLIT_STYLES.get(str(split), "-"),
            label=f"{split} ({n_label(group['n'])}{', mean, 95% t-CI' if with_interval else ''})",
        )
    label = scale_axis_label(trials) + ("; grey: the fixed scale" if reference is not None else "")
    format_swept_axis(ax, trained["scale"], label)
    baseline_lines(ax, untrained_values(rows))
    validation = trained[trained["split"] == "validation"]
    # ringed run points, never a span over scales that were not run; with one seed nothing is out of the set (seed
    # noise unknown): no rings, rather than a ring on every point
    if IN_CONFIDENCE_SET in trained and (validation["n"] > 1).any():
        members = validation[validation[IN_CONFIDENCE_SET].fillna(False).astype(bool) & (validation["n"] > 1)]
        ax.scatter(
            members["scale"],
            members["mean"],
            s=110,
            facecolors="none",
            edgecolors="C3",
            linewidths=1.2,
            zorder=5,
            label="validation: in the 95% confidence set for the best scale (paired)",
        )
    # a learnable-scale study's axis is the starting scale: an optimum band there would read as a fixed scale's
    if reference is None and (optimum := _located_optimum(trained)) is not None:
        words = optimum.text() if optimum_in_legend else "the optimum in each panel's title"
        _optimum_band(ax, optimum, f"validation: {words} ({OPTIMUM_METHOD})")
    mark_default(ax, *library_default(trials))


def spread_pooled_untrained(summary: pd.DataFrame, conditions: list[str]) -> pd.DataFrame:
    """The summary with each *pooled* untrained row (scale 0, under a combination of the condition columns that has
    no trained row, such as a sibling's value with every condition empty) copied into every trained condition that
    has no untrained row of its split, and dropped itself: one untrained model stands in every panel, and no panel
    holds nothing but a baseline (it drew an empty "learning rate nan" panel, and test points over a validation
    baseline alone)."""
    if not conditions:
        return summary
    keys = summary[conditions].astype("string").fillna("<NA>").apply(tuple, axis=1)
    untrained = summary["scale"] == UNTRAINED_SCALE
    trained_keys = set(keys[~untrained])
    pooled = untrained & ~keys.isin(trained_keys)
    if not pooled.any():
        return summary
    combos = summary.loc[~untrained, conditions].assign(_key=keys[~untrained]).drop_duplicates("_key")
    have = set(zip(keys[untrained & ~pooled], summary.loc[untrained & ~pooled, "split"], strict=True))
    copies = [
        row.to_frame().T.assign(**{c: combo[c] for c in conditions})
        for _, row in summary[pooled].iterrows()
        for _, combo in combos.iterrows()
        if (combo["_key"], row["split"]) not in have
    ]
    kept = summary[~pooled]
    return pd.concat([kept, *copies], ignore_index=True).astype(summary.dtypes.to_dict()) if copies else kept


BELOW_UNTRAINED = "training hurt: every scale below the untrained model (validation)"


def below_untrained(rows: pd.DataFrame) -> bool:
    """Whether every trained scale's mean validation Spearman in ``rows`` (a condition's summary) is below the
    untrained model's: what the figure's title then says first, as the answer line does."""
    validation = rows[rows["split"] == "validation"]
    untrained = validation.loc[validation["scale"] == UNTRAINED_SCALE, "mean"]
    trained = validation.loc[validation["scale"] != UNTRAINED_SCALE, "mean"]
    return not untrained.empty and not trained.empty and bool((trained < untrained.mean()).all())


@mpl.rc_context(PAPER_RC)
def write_spearman_vs_scale(
    summary: pd.DataFrame, trials: pd.DataFrame, out_dir: Path, reference: FixedScaleReference | None = None
) -> list[Path]:
    """STSB Spearman (validation solid, test dashed) vs scale from a ``spearman_summary``: one panel per
    condition; ``trials`` gives the loss (its default) and the axis label; ``reference``: the fixed-scale curve a
    learnable-scale study is compared to (grey, in every panel; not in the CSV)."""
    if summary.empty or summary.loc[summary["scale"] != UNTRAINED_SCALE, "scale"].nunique() < 2:
        return []
    conditions = _conditions(summary, SPEARMAN_COLUMNS)
    drawn = spread_pooled_untrained(summary, conditions)
    groups = [(label, rows) for label, rows in by_condition(drawn, conditions) if (rows["scale"] > 0).any()]
    panels = merge_identical(groups, ["scale", "split", "n", IN_CONFIDENCE_SET])  # arms of one loss: drawn once
    fig, axes = facets(len(panels), height=2.0 + 0.25 * max(len(labels) - 1 for labels, _ in panels), max_columns=2)
    for ax, (conditions, rows) in zip(axes, panels, strict=True):
        _spearman_panel(ax, rows, trials, reference, optimum_in_legend=len(panels) == 1)
        lines = [BELOW_UNTRAINED] if below_untrained(rows) else []
        if conditions != [""]:
            title = identical_title(conditions, lambda condition: condition_title(condition, ", "), "\n")
            optimum = _located_optimum(rows) if len(panels) > 1 else None
            lines = [title, *([optimum.text()] if optimum is not None else []), *lines]
        if lines:
            ax.set_title("\n".join(lines))
        ax.grid(True, axis="y", color="0.92", linewidth=0.5)
        ax.set_ylabel("STSB Spearman (cosine)")  # kept on the first column only
        label_outer(ax)
    legend_below(axes[0], "STSB split (n = seeds per point)", columns=2)
    return save_figure(fig, summary, out_dir, "spearman_vs_scale")


def _concentration_panel(ax: Axes, rows: pd.DataFrame, top_row: bool) -> None:
    """One pair kind: mean and q05-q95 band vs scale after training; the untrained model's mean (dashed) and
    q05/q95 (dotted) as reference lines."""
    final = rows[(rows["stage"] == "final") & (rows["scale"] != UNTRAINED_SCALE)]
    init = rows[rows["stage"] == "init"]
    ax.fill_between(final["scale"], final["q05"], final["q95"], color="C0", alpha=0.2, linewidth=0, label="q05-q95")
    ax.plot(final["scale"], final["mean"], marker="o", color="C0", label=f"mean ({n_label(final['n'])})")
    if not init.empty:
        ax.axhline(init["mean"].mean(), color="0.4", linestyle="--", linewidth=0.8, label="untrained, mean")
        for quantile in ("q05", "q95"):
            label = "untrained, q05 and q95" if quantile == "q05" else None
            ax.axhline(init[quantile].mean(), color="0.6", linestyle=":", linewidth=0.8, label=label)
    format_swept_axis(ax, final["scale"], min_gap=0.12, temperature=top_row)


@mpl.rc_context(PAPER_RC)
def write_concentration_vs_scale(summary: pd.DataFrame, trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Small multiples of cosine similarity vs scale from a ``concentration_summary``: one column per pair kind,
    one row per condition, each panel one mean line, its q05-q95 band and the untrained reference lines."""
    if summary.empty:
        return []
    summary = summary[summary["n"] > 0]
    if summary.loc[summary["scale"] != UNTRAINED_SCALE, "scale"].nunique() < 2:
        return []
    groups = by_condition(summary, _conditions(summary, CONCENTRATION_COLUMNS))
    panels = merge_identical(groups, ["scale", "kind", "stage", "n"])  # arms of one loss: one row
    kinds = [kind for kind in SIM_KINDS if kind in set(summary["kind"])]
    fig = new_figure(DOUBLE_COLUMN_WIDTH, 0.9 + 1.45 * len(panels))
    grid = fig.subplots(len(panels), len(kinds), sharex=True, sharey=True, squeeze=False)
    for row, (conditions, rows) in enumerate(panels):
        separator = ", " if len(conditions) > 1 else "\n"  # merged arms: one line per condition
        condition = identical_title([condition_title(c, separator) for c in conditions], str, "\n")
        for column, kind in enumerate(kinds):
            ax = grid[row][column]
            _concentration_panel(ax, rows[rows["kind"] == kind], top_row=row == 0)
            if row == 0:
                ax.set_title(KIND_TITLES[kind].replace(", ", ",\n") if len(kinds) > 4 else KIND_TITLES[kind])
            if column == 0:
                ax.set_ylabel(f"{condition}\ncosine" if condition else "cosine similarity")
                if len(conditions) > 1:  # arms drawn once: every name, smaller, to fit the row
                    ax.yaxis.label.set_fontsize(5)
            label_outer(ax)
        label = scale_axis_label(trials)
        for ax in grid[-1]:
            ax.set_xlabel(label)
    legend_below(grid[0][0], "cosine similarity after training (n = seeds averaged per scale)")
    return save_figure(fig, summary, out_dir, "concentration_vs_scale", compress=True)  # per trial: long

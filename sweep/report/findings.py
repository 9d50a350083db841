"""The generated part of a results README: every number of a study's finding, written from its CSVs.

A results folder's ``README.md`` holds the command, the setup and the interpretation in prose; the numbers sit in
one block between ``<!-- findings: generated -->`` and ``<!-- findings: end -->`` that ``python -m sweep.report
study`` rewrites from the tables it has just written (``spearman_vs_scale``, ``paired_comparison``,
``concentration_vs_scale``), so a rerun cannot leave a stale number behind, and ``research/tests/test_results.py``
rewrites it from the committed CSVs and compares. Per condition (the swept parameters other than scale and seed) it
gives a table of validation and test Spearman by scale with the paired verdict (`sweep.stats.verdicts`: best,
equivalent, not distinguishable, worse) and P(best), the answer line with the confidence set for the best, the
library default against the best, the untrained model, and the random-pair cosines (mean and band width) a
concentration claim rests on; across conditions, one line of best scales and their confidence sets (whether the
optimum *moves* is an interaction: `sweep.stats.interactions`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from sweep.report.study_context import UNTRAINED_SCALE
from sweep.report.summaries import SPEARMAN_COLUMNS, by_condition
from sweep.stats import ELIMINATED_AFTER, Optimum, PairedComparison, eliminated_after

START, END = "<!-- findings: generated -->", "<!-- findings: end -->"
BLOCK = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)


def _number(value: float) -> str:
    return f"{value:.3f}"


def _interval(row: pd.Series, seeds: bool = False) -> str:
    """``0.732 [0.721, 0.744]`` with the t-interval over seeds, or the mean alone (n = 1 or no interval); with
    ``seeds``, followed by ``(3 seeds)``."""
    text = _number(row["mean"])
    if row["n"] > 1 and pd.notna(row["ci_low"]) and row["ci_low"] != row["ci_high"]:
        text += f" [{_number(row['ci_low'])}, {_number(row['ci_high'])}]"
    return f"{text} ({int(row['n'])} seed{'s' if row['n'] != 1 else ''})" if seeds else text


def _paired_cell(paired: pd.DataFrame, scale: float) -> str:
    """Best minus this scale with its simultaneous interval, the verdict in words and P(best)."""
    rows = paired[paired["scale"] == scale] if not paired.empty else paired
    if rows.empty:
        return " | | "
    row = rows.iloc[0]
    if pd.isna(row["spearman"]):
        return "| not scoreable (collapsed) |"
    share = _number(row["p_best"]) if pd.notna(row["p_best"]) else "n/a"
    if row["best"]:
        return f"| best | {share}"
    if pd.isna(row["diff_to_best"]):  # a raced point dropped before the last round: its own seeds, not compared
        return f"| {row['verdict']} | {share}"
    interval = f"{_number(row['diff_to_best'])} [{_number(row['ci_low'])}, {_number(row['ci_high'])}]"
    held = ", in the confidence set" if row["in_confidence_set"] else ""
    if pd.notna(row.get(ELIMINATED_AFTER)):  # dropped by the race's last round
        held = f", {eliminated_after(int(row[ELIMINATED_AFTER]))}"
    return f"{interval} | {row['verdict']}{held} | {share}"


def _scale_table(rows: pd.DataFrame, paired: pd.DataFrame) -> list[str]:
    """Markdown rows: scale, validation and test Spearman, paired difference to the best, verdict and P(best)."""
    lines = [
        "| scale (1/temperature) | validation Spearman [95% t-CI] | test Spearman | best - this [simultaneous 95% CI] "
        "| verdict | P(best) |",
        "|---|---|---|---|---|---|",
    ]
    trained = rows[rows["scale"] != UNTRAINED_SCALE]
    unequal = trained["n"].nunique() > 1  # a raced study (or an unfinished one): each cell says its seeds
    for scale in sorted(trained["scale"].unique()):
        by_split = {split: group.iloc[0] for split, group in trained[trained["scale"] == scale].groupby("split")}
        validation, test = (_interval(by_split[s], unequal) if s in by_split else "" for s in ("validation", "test"))
        lines.append(f"| {scale:g} | {validation} | {test} | {_paired_cell(paired, scale)} |")
    return lines


def _untrained(rows: pd.DataFrame) -> float | None:
    untrained = rows[(rows["scale"] == UNTRAINED_SCALE) & (rows["split"] == "validation")]
    return float(untrained["mean"].mean()) if not untrained.empty else None


def comparison_of(paired: pd.DataFrame) -> PairedComparison:
    """One condition's rows of ``paired_comparison.csv`` as the comparison they were written from (in a raced study,
    the last round's: the rows with the most seeds)."""
    first = paired.iloc[int(paired["n_seeds"].to_numpy().argmax())]
    return PairedComparison(
        paired.drop(columns=["condition"]).reset_index(drop=True),
        int(first["n_pairs"]),
        int(first["n_seeds"]),
        int(first["n_resamples"]),
        float(first["level"]),
        float(first["margin"]),
        str(first["correction"]) if pd.notna(first["correction"]) else "",
        _optimum(first),
    )


def _optimum(row: pd.Series) -> Optimum | None:
    """The optimum a `paired_comparison.csv` row carries (`sweep.stats.optimum`), None when it has none."""
    if "optimum" not in row or pd.isna(row["optimum"]):
        return None
    flag = str(row["optimum_flag"]) if pd.notna(row["optimum_flag"]) else ""
    return Optimum(float(row["optimum"]), float(row["optimum_low"]), float(row["optimum_high"]), flag)


def _verdict_lines(paired: pd.DataFrame, default: float | None) -> list[str]:
    """The answer line of the paired comparison (`PairedComparison.line`) and the library default's verdict."""
    if paired.empty:
        return ["- no paired comparison (one seed, or one scale only)"]
    comparison = comparison_of(paired)
    lines = [f"- {comparison.line()}", *([f"  - {comparison.detail()}"] if comparison.detail() else [])]
    at_default = paired[(paired["scale"] == default) & paired["spearman"].notna()]
    if default is not None and not at_default.empty and not at_default.iloc[0]["best"]:
        row = at_default.iloc[0]
        lines.append(
            f"- library default scale {default:g} (temperature {1 / default:g}): {_number(row['spearman'])}, "
            f"{_number(row['diff_to_best'])} below the best [{_number(row['ci_low'])}, {_number(row['ci_high'])}]: "
            f"{row['verdict']}"
        )
    return lines


def _concentration_line(rows: pd.DataFrame) -> list[str]:
    """Random-pair cosines, the statistic a concentration claim rests on: their mean and the width of their q05-q95
    band, untrained and at the trained scales where they are lowest / narrowest and widest."""
    rand = rows[(rows["kind"] == "rand") & (rows["scale"] != UNTRAINED_SCALE)] if not rows.empty else rows
    final, init = rand[rand["stage"] == "final"], rand[rand["stage"] == "init"]
    if final.empty:
        return []
    lowest = final.loc[final["mean"].idxmin()]
    before = f"{_number(init['mean'].mean())} untrained, " if not init.empty else ""
    lines = [
        f"- mean cosine of random STSB pairs: {before}lowest {_number(lowest['mean'])} at scale {lowest['scale']:g}"
    ]
    width = (final["q95"] - final["q05"]).dropna() if {"q05", "q95"} <= set(final.columns) else pd.Series()
    if not width.empty:
        narrow, wide = final.loc[width.idxmin()], final.loc[width.idxmax()]
        untrained = f"{_number((init['q95'] - init['q05']).mean())} untrained, " if not init.empty else ""
        lines.append(
            f"- width of the random-pair cosine band (q95 - q05): {untrained}narrowest "
            f"{_number(narrow['q95'] - narrow['q05'])} at scale {narrow['scale']:g}, widest "
            f"{_number(wide['q95'] - wide['q05'])} at scale {wide['scale']:g}"
        )
    return lines


def findings_block(
    spearman: pd.DataFrame,
    paired: pd.DataFrame,
    concentration: pd.DataFrame,
    default: float | None,
    wall_times: pd.Series | None = None,
) -> str:
    """The generated block (markers included) from a study's tables; ``default``: the loss's library default;
    ``wall_times``: the trials' ``trial_wall_time_s`` (their sum is the study's training wall time)."""
    conditions = [c for c in spearman.columns if c not in SPEARMAN_COLUMNS]
    concentration_conditions = [c for c in conditions if c in concentration.columns]
    lines, best_by_condition = [START, ""], []
    for label, rows in by_condition(spearman, conditions):
        own = paired[paired["condition"].astype("string").fillna("") == label] if not paired.empty else paired
        if label:
            lines += [f"**{label}**", ""]
        lines += [*_scale_table(rows, own), ""]
        lines += _verdict_lines(own, default)
        if (untrained := _untrained(rows)) is not None:
            lines.append(f"- untrained model (scale 0): validation {_number(untrained)}")
        if not concentration.empty:
            mine = concentration
            for column, value in zip(concentration_conditions, rows[concentration_conditions].iloc[0], strict=True):
                mine = mine[mine[column] == value]
            lines += _concentration_line(mine)
        lines.append("")
        if label and not own.empty and own["best"].any():
            members = ", ".join(f"{s:g}" for s in own.loc[own["in_confidence_set"].eq(True), "scale"])
            best_by_condition.append(f"{label}: {own[own['best']].iloc[0]['scale']:g} (set {{{members}}})")
    if best_by_condition:
        lines += [f"Best scale per condition (95% confidence set): {'; '.join(best_by_condition)}.", ""]
    if wall_times is not None and wall_times.notna().any():
        total = float(wall_times.sum())
        lines += [
            f"Wall time: {int(wall_times.notna().sum())} trials, {total / 60:.1f} minutes of training and evaluation "
            "in all (the sum of `trial_wall_time_s`, on a shared machine).",
            "",
        ]
    return "\n".join([*lines, END])


def write_findings(readme: Path, block: str, title: str) -> Path:
    """Put ``block`` into ``readme``: replace its generated block, or append one (a new README gets ``title``)."""
    text = readme.read_text() if readme.exists() else f"# {title}\n"
    text = BLOCK.sub(lambda _: block, text) if BLOCK.search(text) else f"{text.rstrip()}\n\n{block}\n"
    readme.parent.mkdir(parents=True, exist_ok=True)
    readme.write_text(text)
    return readme


def generated_block(text: str) -> str | None:
    """The generated block of a README's text, or None."""
    match = BLOCK.search(text)
    return match.group(0) if match else None

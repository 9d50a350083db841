"""The generated part of a results README: every number of a study's finding, written from its CSVs.

A results folder's ``README.md`` holds the command, the setup and the interpretation in prose; the numbers sit in
one block between ``<!-- findings: generated -->`` and ``<!-- findings: end -->`` that ``python -m sweep.report
study`` rewrites from the tables it has just written (``spearman_vs_scale``, ``paired_comparison``,
``concentration_vs_scale``), so a rerun cannot leave a stale number behind, and ``tests/report/test_results.py``
rewrites it from the committed CSVs and compares. Per condition (the swept parameters other than scale and seed) it
gives a table of validation and test Spearman by scale with the paired verdict, the best scale and the set not
distinguishable from it, the library default against the best, the untrained model, and where random-pair cosines
are lowest; across conditions, one line of best scales (does the optimum move with the condition?).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from sweep.report.study_context import UNTRAINED_SCALE
from sweep.report.summaries import SPEARMAN_COLUMNS, by_condition

START, END = "<!-- findings: generated -->", "<!-- findings: end -->"
BLOCK = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)


def _number(value: float) -> str:
    return f"{value:.3f}"


def _interval(row: pd.Series) -> str:
    """``0.732 [0.721, 0.744]`` with the t-interval over seeds, or the mean alone (n = 1 or no interval)."""
    if row["n"] > 1 and pd.notna(row["ci_low"]) and row["ci_low"] != row["ci_high"]:
        return f"{_number(row['mean'])} [{_number(row['ci_low'])}, {_number(row['ci_high'])}]"
    return _number(row["mean"])


def _scoreable(paired: pd.DataFrame) -> pd.Series:
    """Which rows of a paired table were compared: a scale that collapsed has no Spearman (`paired_bootstrap`)."""
    return paired["spearman"].notna()


def _paired_cell(paired: pd.DataFrame, scale: float) -> str:
    """Best minus this scale with its paired interval, and the verdict."""
    rows = paired[paired["scale"] == scale] if not paired.empty else paired
    if rows.empty:
        return " | "
    row = rows.iloc[0]
    if pd.isna(row["spearman"]):
        return "not scoreable (collapsed) | no"
    if row["best"]:
        return "(best) | yes"
    verdict = "yes" if row["indistinguishable"] else "no"
    return f"{_number(row['diff_to_best'])} [{_number(row['ci_low'])}, {_number(row['ci_high'])}] | {verdict}"


def _scale_table(rows: pd.DataFrame, paired: pd.DataFrame) -> list[str]:
    """Markdown rows: scale, validation and test Spearman, paired difference to the best and verdict."""
    lines = [
        "| scale (1/temperature) | validation Spearman [95% t-CI] | test Spearman | best - this [paired 95% CI] "
        "| tied with best |",
        "|---|---|---|---|---|",
    ]
    trained = rows[rows["scale"] != UNTRAINED_SCALE]
    for scale in sorted(trained["scale"].unique()):
        by_split = {split: group.iloc[0] for split, group in trained[trained["scale"] == scale].groupby("split")}
        validation = _interval(by_split["validation"]) if "validation" in by_split else ""
        test = _interval(by_split["test"]) if "test" in by_split else ""
        lines.append(f"| {scale:g} | {validation} | {test} | {_paired_cell(paired, scale)} |")
    return lines


def _untrained(rows: pd.DataFrame) -> float | None:
    untrained = rows[(rows["scale"] == UNTRAINED_SCALE) & (rows["split"] == "validation")]
    return float(untrained["mean"].mean()) if not untrained.empty else None


def _verdict_lines(paired: pd.DataFrame, default: float | None) -> list[str]:
    """The best scale, the scales the paired test cannot tell from it, and the library default's gap."""
    if paired.empty:
        return ["- no paired comparison (the trials logged no per-pair predictions, or one scale only)"]
    collapsed = [f"{s:g}" for s in paired.loc[~_scoreable(paired), "scale"]]
    left_out = [f"- not scoreable, left out of the comparison (collapsed): {', '.join(collapsed)}"] if collapsed else []
    if not paired["best"].any():
        return ["- no best scale: none is scoreable", *left_out]
    best = paired[paired["best"]].iloc[0]
    ties = [f"{s:g}" for s in paired.loc[paired["indistinguishable"] & ~paired["best"], "scale"]]
    n = f"{int(best['n_pairs']):,} pairs x {int(best['n_seeds'])} seeds, {float(best['level']):.0%}"
    lines = [
        f"- best scale {best['scale']:g} (validation {_number(best['spearman'])}); not distinguishable from it: "
        f"{', '.join(ties) or 'none'} (paired bootstrap, {n})"
    ]
    lines += left_out
    at_default = paired[(paired["scale"] == default) & _scoreable(paired)]
    if default is not None and not at_default.empty and not at_default.iloc[0]["best"]:
        row = at_default.iloc[0]
        verdict = "not distinguishable from the best" if row["indistinguishable"] else "worse than the best"
        lines.append(
            f"- library default scale {default:g} (temperature {1 / default:g}): {_number(row['spearman'])}, "
            f"{_number(row['diff_to_best'])} below the "
            f"best [{_number(row['ci_low'])}, {_number(row['ci_high'])}]: {verdict}"
        )
    return lines


def _concentration_line(rows: pd.DataFrame) -> list[str]:
    """Random-pair cosine: untrained, its minimum over the trained scales and the largest scale's."""
    rand = rows[(rows["kind"] == "rand") & (rows["scale"] != UNTRAINED_SCALE)] if not rows.empty else rows
    final, init = rand[rand["stage"] == "final"], rand[rand["stage"] == "init"]
    if final.empty:
        return []
    lowest, largest = final.loc[final["mean"].idxmin()], final.loc[final["scale"].idxmax()]
    before = f"{_number(init['mean'].mean())} untrained, " if not init.empty else ""
    lowest_text = f"lowest {_number(lowest['mean'])} at scale {lowest['scale']:g}"
    if lowest["scale"] == largest["scale"]:
        return [f"- mean cosine of random STSB pairs: {before}{lowest_text}, the largest scale"]
    return [
        f"- mean cosine of random STSB pairs: {before}{lowest_text}, {_number(largest['mean'])} at scale "
        f"{largest['scale']:g}"
    ]


def findings_block(
    spearman: pd.DataFrame, paired: pd.DataFrame, concentration: pd.DataFrame, default: float | None
) -> str:
    """The generated block (markers included) from a study's tables; ``default``: the loss's library default."""
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
            best_by_condition.append(f"{label}: {own[own['best']].iloc[0]['scale']:g}")
    if best_by_condition:
        lines += [f"Best scale per condition: {'; '.join(best_by_condition)}.", ""]
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

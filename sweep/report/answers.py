"""``python -m sweep.report findings --questions FILE``: a findings page for anyone's studies. Each question of the file
(`sweep.report.question_file`) is answered by its comparison, with evidence read from the folders' ``trials.csv``
and the strength of `sweep.report.grading.strength`:

- ``best_scale``: the best scale of one folder per condition, the scales it cannot be told from (the verdict engine
  over seeds, `sweep.stats.seed_paired`), and a ``reference`` scale read against it;
- ``pooled``: scale ``a`` against ``b`` pooled over the distinct conditions of several folders
  (`sweep.report.pooled`);
- ``interaction``: whether the best scale moves with the condition a folder swept, and how the gap ``a - b``
  changes from its first to its last value (difference in differences, `sweep.stats.interactions`);
- ``tuned``: each scale at its own best value of a condition over folders of one set-up, against the best such scale
  on test (`sweep.report.tuned`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from sweep.report.best_scale_figures import metric_words
from sweep.report.evidence import (
    Section,
    by_number,
    folder_facts,
    interval,
    num,
    objective,
    render,
    scope,
    signed,
    test_metric,
    tidy,
)
from sweep.report.grading import strength, strength_rule
from sweep.report.pooled import pooled_report
from sweep.report.question_file import BEST_SCALE, INTERACTION, POOLED, TUNED, Question, read_questions
from sweep.report.tuned import condition_words, tuned_report
from sweep.stats import comparison_line, difference_in_differences, gap_by_condition, seed_paired_comparison

UNTRAINED = 0.0  # a trial at scale 0 is the untrained model, not a candidate for the best scale


def _metric(question: Question) -> str:
    return question.metric or objective(question.folders[0])


def _frame(folder: Path, metric: str) -> pd.DataFrame:
    frame = tidy(folder, metric)
    return frame[frame["scale"] != UNTRAINED]


def _scopes(question: Question) -> tuple[list[str], list]:
    facts = [folder_facts(folder) for folder in question.folders]
    return [scope(f, fact.n_seeds) for f, fact in zip(question.folders, facts, strict=True)], facts


def _named(folder: Path, condition: str) -> str:
    return f"`{folder.name}`" + (f" {condition}" if condition else "")


def best_scale(question: Question) -> Section:
    """The best scale per condition of one folder, its set of scales not told apart, and the reference against it."""
    folder, metric = question.folders[0], _metric(question)
    frame = _frame(folder, metric)
    grid = sorted(float(s) for s in frame["scale"].unique())
    evidence, bests, holds, reference = [], {}, [], []
    for condition in by_number(list(frame["condition"].unique())):
        rows = seed_paired_comparison(frame.loc[frame["condition"] == condition, ["scale", "seed", "value"]])
        best = rows[rows["best"]].iloc[0]
        bests[condition] = float(best["scale"])
        evidence.append(f"{_named(folder, condition)}: {comparison_line(rows, metric_words(metric), 0.95)}")
        if bests[condition] in (grid[0], grid[-1]) and len(grid) > 2:
            edge = "lowest" if bests[condition] == grid[0] else "highest"
            evidence.append(f"{_named(folder, condition)}: the best is the {edge} scale tried; it may lie beyond")
        others = rows[~rows["best"]]
        if question.reference is not None and question.reference != bests[condition]:
            row = others[others["scale"] == question.reference].iloc[0]
            reference.append(str(row["verdict"]))
            holds.append(row["verdict"] == "worse")
            evidence.append(
                f"{_named(folder, condition)}: reference scale {question.reference:g} is {num(row['diff_to_best'])} "
                f"below the best {interval(row['ci_low'], row['ci_high'])}, {row['verdict']}"
            )
        else:
            holds.append(bool(len(others)) and bool((others["verdict"] == "worse").all()))
    if len(set(bests.values())) == 1:
        best = next(iter(bests.values()))
        answer = f"Scale {best:g} is best" + (f" in all {len(bests)} conditions" if len(bests) > 1 else "")
    else:
        answer = "The best scale depends on the condition: " + "; ".join(f"{c}: {b:g}" for c, b in bests.items())
    if question.reference is not None:
        if not reference:
            answer += f"; the reference {question.reference:g} is the best itself"
        elif len(bests) == 1:
            answer += f"; the reference {question.reference:g} is {reference[0]} (paired by seed)"
        else:
            worse = sum(v == "worse" for v in reference)
            answer += f"; the reference {question.reference:g} is worse in {worse} of {len(bests)} conditions"
    scopes, facts = _scopes(question)
    return Section(
        question.question,
        answer + ".",
        strength(facts, all(holds), sum(holds), question.confounds),
        evidence,
        scopes,
        list(question.literature),
        list(question.change),
    )


def pooled(question: Question) -> Section:
    """Scale a against b pooled over the distinct conditions of the folders (deterministic re-runs counted once)."""
    assert question.a is not None and question.b is not None  # the file's check requires both
    a, b, metric = question.a, question.b, _metric(question)
    report = pooled_report(list(question.folders), a, b, metric)
    row = report.table[report.table["role"] == "pooled"].iloc[0]
    n = int((report.table["role"] == "condition").sum())
    separates = bool(row["ci_low"] > 0 or row["ci_high"] < 0)
    difference = f"{signed(row['mean'])} {interval(row['ci_low'], row['ci_high'])}"
    over = f"pooled over {n} distinct condition{'s' if n != 1 else ''}"
    if separates:
        winner, loser = (a, b) if row["mean"] > 0 else (b, a)
        answer = f"Scale {winner:g} beats {loser:g}: {a:g} - {b:g} = {difference} {over}."
    else:
        answer = f"Not distinguishable: {a:g} - {b:g} = {difference} {over}, an interval that includes 0."
    scopes, facts = _scopes(question)
    return Section(
        question.question,
        answer,
        strength(facts, separates, n if separates else 0, question.confounds),
        list(report.lines),
        scopes,
        list(question.literature),
        list(question.change),
    )


def interaction(question: Question) -> Section:
    """Does the best scale move with the swept condition, and does the gap a - b change from its first value to its
    last (difference in differences over seeds)?"""
    assert question.a is not None and question.b is not None  # the file's check requires both
    folder, a, b, metric = question.folders[0], question.a, question.b, _metric(question)
    frame = _frame(folder, metric)
    conditions = by_number(list(frame["condition"].unique()))
    gaps = gap_by_condition(frame, [b]).set_index("condition")
    bests = {c: float(gaps.loc[c, "best"]) for c in conditions if c in gaps.index}
    did = difference_in_differences(frame, a, b, conditions[0], conditions[-1])
    separates = bool(did.ci_low > 0 or did.ci_high < 0)
    evidence = [
        f"`{folder.name}`: best scale per condition {'; '.join(f'{c}: {s:g}' for c, s in bests.items())} "
        f"({metric_words(metric)})",
        f"`{folder.name}`: best minus {b:g} per condition "
        + "; ".join(
            f"{c}: {num(gaps.loc[c, 'gap'])} {interval(gaps.loc[c, 'ci_low'], gaps.loc[c, 'ci_high'])}"
            if bests[c] != b
            else f"{c}: {b:g} is the best"
            for c in bests
        ),
        f"`{folder.name}`: gap {a:g} - {b:g} {signed(did.gap1)} at {did.cond1}, {signed(did.gap2)} at {did.cond2}; "
        f"difference in differences {signed(did.estimate)} {interval(did.ci_low, did.ci_high)} ({did.design} t over "
        f"{did.n1} seeds, {did.level:.0%}); the best scales differ in {num(did.p_argmax_differs)} of the seed "
        "resamples",
    ]
    moves = len(set(bests.values())) > 1
    where = (
        "moves: " + "; ".join(f"{c}: {s:g}" for c, s in bests.items())
        if moves
        else f"stays at {bests[conditions[0]]:g}"
    )
    answer = (
        f"{'Yes' if moves else 'No'}: the best scale {where}"
        f"; the gap {a:g} - {b:g} changes by {signed(did.estimate)} {interval(did.ci_low, did.ci_high)} from "
        f"{did.cond1} to {did.cond2}{'' if separates else ', not distinguishable from no change'}."
    )
    scopes, facts = _scopes(question)
    return Section(
        question.question,
        answer,
        strength(facts, separates, 1, question.confounds),
        evidence,
        scopes,
        list(question.literature),
        list(question.change),
    )


def tuned(question: Question) -> Section:
    """Each scale at its own best value of the condition (chosen on validation), against the best such scale on test,
    which chose nothing (`sweep.report.tuned_report`)."""
    assert question.condition is not None  # the file's check requires it
    validation = _metric(question)
    report = tuned_report(list(question.folders), question.condition, validation, test_metric(validation))
    rows = report.numbers.set_index("scale")
    words = condition_words(question.condition)
    evidence = [
        f"scale {scale:g}: best {words} {row[f'best {words}']:g} ({row[f'place of best {words}']}); on test "
        + (
            str(row["verdict on test"])
            if pd.isna(row["best - this on test"]) or row["verdict on test"] == "best"
            else f"{num(row['best - this on test'])} below the best "
            f"{interval(row['test CI low'], row['test CI high'])}, {row['verdict on test']}"
        )
        for scale, row in rows.iterrows()
    ]
    others = rows[rows["verdict on test"] != "best"]
    if question.reference is not None and question.reference in others.index:
        separates = others.loc[question.reference, "verdict on test"] == "worse"
    else:
        separates = question.reference is None and bool((others["verdict on test"] == "worse").all())
    scopes, facts = _scopes(question)
    return Section(
        question.question,
        report.answer,
        strength(facts, bool(separates), 1 if separates else 0, question.confounds),
        evidence,
        scopes,
        list(question.literature),
        list(question.change),
    )


ANSWERS: dict[str, Callable[[Question], Section]] = {
    BEST_SCALE: best_scale,
    POOLED: pooled,
    INTERACTION: interaction,
    TUNED: tuned,
}


def questions_page(questions: Path, results: Path) -> str:
    """The markdown page answering the questions of the file ``questions`` from the folders under ``results``;
    `sweep.report.question_file.QuestionsError` for a file that cannot be answered, before any number is computed."""
    read = read_questions(questions, results)
    lines = [f"# {read.title}", ""] + ([read.intro, ""] if read.intro else [])
    lines += [
        f"Generated by `python -m sweep.report findings --questions {questions.name}` from the CSVs of the results "
        "folders (no number typed by hand). Scale = 1/temperature.",
        "",
        strength_rule(),
        "",
    ]
    for question in read.questions:
        lines += render(ANSWERS[question.compare](question))
    return "\n".join(lines).rstrip() + "\n"


def write_questions_page(questions: Path, results: Path, out: Path) -> Path:
    """Check the file, answer its questions and write the page to ``out``."""
    text = questions_page(questions, results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out

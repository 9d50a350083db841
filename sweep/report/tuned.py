"""``python -m sweep.report tuned``: each scale at its own best value of a condition (``--condition``, e.g. the
learning rate) over results folders of one set-up. This module reads the folders into `sweep.stats.tuned_condition`'s
tidy frame, refuses folders that cannot be paired by seed, and prints and writes the table
(``own_best_<condition>.csv`` and ``.md``); the statistics are that module's."""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sweep.errors import Refused
from sweep.report.pooled import IGNORED_KEYS, IGNORED_PREFIXES, SEED
from sweep.report.results_folder import TRIALS_CSV, flat_config, load_results_folder
from sweep.report.summaries import METRIC_LABELS, SCALE, complete_trials, condition_columns, markdown_table
from sweep.stats import (
    BETTER,
    CONDITION,
    DEFAULT_MARGIN,
    EDGES,
    EQUIVALENT,
    NOT_DISTINGUISHABLE,
    TEST,
    VALIDATION,
    WORSE,
    TunedComparison,
    tuned_comparison,
    verdict_groups,
)
from sweep.stats import SCALE as SCALE_COLUMN
from sweep.stats import SEED as SEED_COLUMN

PROG = "python -m sweep.report tuned"
VALIDATION_METRIC, TEST_METRIC = "stsb_validation_spearman", "stsb_test_spearman"  # the choice, its confirmation
DEFAULTS = {"--validation": VALIDATION_METRIC, "--test": TEST_METRIC, "--level": 0.95, "--margin": DEFAULT_MARGIN}


def condition_words(condition: str) -> str:
    """``trial.learning_rate`` -> ``learning rate``."""
    return condition.rsplit(".", 1)[-1].replace("_", " ")


def folder_frame(folder: Path, condition: str, validation: str, test: str) -> pd.DataFrame:
    """The COMPLETE trials of ``folder`` as the tidy frame of `sweep.stats.tuned_condition`; Refused when the
    folder, the condition or a metric is missing, or when its trials vary another condition too."""
    if not (folder / TRIALS_CSV).is_file():
        raise Refused(f"{folder}: no results folder there (no {TRIALS_CSV})")
    trials = load_results_folder(folder).trials  # a condition not swept there is a constant from config.yaml
    needed = {SCALE: "loss.scale", f"param.{condition}": condition, validation: validation, test: test}
    missing = [name for column, name in needed.items() if column not in trials]
    if missing:
        raise Refused(f"{folder}: its {TRIALS_CSV} has no column {', '.join(missing)} (nor its config.yaml such a key)")
    columns = condition_columns(trials)
    others = [name for column, name in columns.items() if column != f"param.{condition}"]
    if others:
        raise Refused(f"{folder}: its trials also vary {', '.join(others)}; they would be pooled as seeds")
    complete = complete_trials(trials)
    return pd.DataFrame(
        {
            SCALE_COLUMN: complete["scale"].astype(float),
            CONDITION: complete[columns.get(f"param.{condition}", f"param.{condition}")].astype(float),
            SEED_COLUMN: complete[SEED].astype(float) if SEED in complete else 0.0,
            VALIDATION: complete[validation].astype(float),
            TEST: complete[test].astype(float),
        }
    )


def _set_up(folder: Path, condition: str) -> dict[str, object]:
    """The keys of ``folder``'s config that decide what its trials train (not the study's name, paths, tracking,
    statistics, search space, scale, seed or ``condition``)."""
    skipped = {*IGNORED_KEYS, condition}
    prefixes = (*IGNORED_PREFIXES, "stats.")
    return {k: v for k, v in flat_config(folder).items() if k not in skipped and not k.startswith(prefixes)}


def check_pairable(folders: list[Path], frames: list[pd.DataFrame], condition: str) -> None:
    """Refused unless every folder ran the same seeds and the configs agree on every key they both have."""
    seeds = [sorted(frame[SEED_COLUMN].unique()) for frame in frames]
    if any(these != seeds[0] for these in seeds):
        listed = "; ".join(
            f"{folder}: {', '.join(f'{s:g}' for s in these)}" for folder, these in zip(folders, seeds, strict=True)
        )
        raise Refused(f"the folders' seeds differ ({listed}): scales cannot be paired by seed")
    first = _set_up(folders[0], condition)
    for folder in folders[1:]:
        other = _set_up(folder, condition)
        different = sorted(key for key in first.keys() & other.keys() if first[key] != other[key])
        if different:
            raise Refused(f"{folders[0]} and {folder} differ in {', '.join(different)}: not one set-up")


def _values(values: list[float]) -> str:
    return ", ".join(f"{value:g}" for value in values)


def _interval(diff: float, low: float, high: float) -> str:
    return "0 (reference)" if pd.isna(low) else f"{diff:+.4f} [{low:+.4f}, {high:+.4f}]"


def _chosen(row: pd.Series) -> str:
    """``0.003``, ``0.003 (highest tried)`` or ``0.01 (all tied)``."""
    note = row["position"] if row["position"] != "inside" else ""
    return f"{row['chosen']:g}" + (f" ({note})" if note else "")


def tables(result: TunedComparison, condition: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the CSV's table, numbers in columns named in words; the markdown's, intervals as text)."""
    words = condition_words(condition)
    t = result.table
    numbers = pd.DataFrame(
        {
            "scale": t["scale"],
            f"{words}s tried": t["tried"].map(_values),
            f"best {words}": t["chosen"],
            f"place of best {words}": t["position"],
            "tied with": t["tied_with"].map(_values),
            "validation mean": t["validation_mean"],
            "test mean": t["test_mean"],
            "best - this on validation": t["validation_diff"],
            "validation CI low": t["validation_low"],
            "validation CI high": t["validation_high"],
            "verdict on validation": t["validation_verdict"],
            "best - this on test": t["test_diff"],
            "test CI low": t["test_low"],
            "test CI high": t["test_high"],
            "verdict on test": t["test_verdict"],
            "n seeds": t["n_seeds"],
        }
    )
    shown = pd.DataFrame(
        {
            "scale": t["scale"].map("{:g}".format),
            f"{words}s tried": numbers[f"{words}s tried"],
            f"best {words}": t.apply(_chosen, axis=1),
            "validation mean": t["validation_mean"].map("{:.4f}".format),
            "test mean": t["test_mean"].map("{:.4f}".format),
            "best - this on validation [simultaneous CI]": [
                _interval(*row) for row in t[["validation_diff", "validation_low", "validation_high"]].to_numpy()
            ],
            "best - this on test [CI]": [
                _interval(*row) for row in t[["test_diff", "test_low", "test_high"]].to_numpy()
            ],
            "verdict on test": t["test_verdict"],
            "n seeds": t["n_seeds"].astype(str),
        }
    )
    return numbers, shown


def answer_line(result: TunedComparison, condition: str, metric: str) -> str:
    """One sentence: the best scale at its own best value, the test verdicts of the others, the method, the bias of
    validation and the scales whose chosen value is at the edge of what was tried."""
    words, t, best = condition_words(condition), result.table, result.best
    edge = f", the {best['position']} for it, so not bracketed" if best["position"] in EDGES else ""
    groups = verdict_groups(t, "test_verdict", result.margin, (EQUIVALENT, NOT_DISTINGUISHABLE, BETTER, WORSE))
    not_bracketed = [f"{row['scale']:g} ({row['position']})" for _, row in t.iterrows() if row["position"] in EDGES]
    comparisons = f"{result.n_comparisons} comparison{'s' if result.n_comparisons != 1 else ''}"
    return (
        f"Each scale at its own best {words} (chosen on {metric}): scale {result.best_scale:g} is best "
        f"({best['validation_mean']:.4f} at {words} {best['chosen']:g}{edge}); on test, which chose nothing, "
        f"{'; '.join(groups)} ({len(result.seeds)} seeds as blocks, simultaneous over the {comparisons} with the "
        f"best and every other pair, {result.level:.0%}); the validation means of the chosen {words}s are "
        f"optimistically biased (the {words}s and the best scale were chosen on them), so read test; "
        + (
            f"{words} not bracketed (best at the edge of those tried) for scales {', '.join(not_bracketed)}."
            if not_bracketed
            else f"every scale's best {words} lies inside those tried (bracketed)."
        )
    )


@dataclass(frozen=True)
class TunedReport:
    """The two tables, the answer line and the command that made them."""

    numbers: pd.DataFrame
    shown: pd.DataFrame
    answer: str
    command: str


def tuned_report(
    folders: list[Path],
    condition: str,
    validation: str = VALIDATION_METRIC,
    test: str = TEST_METRIC,
    level: float = 0.95,
    margin: float = DEFAULT_MARGIN,
) -> TunedReport:
    """Read and check the folders and compare the scales; Refused (a ValueError) for what cannot be compared."""
    frames = [folder_frame(folder, condition, validation, test) for folder in folders]
    check_pairable(folders, frames, condition)
    try:
        result = tuned_comparison(pd.concat(frames, ignore_index=True), level, margin)
    except ValueError as error:
        raise Refused(str(error)) from error
    numbers, shown = tables(result, condition)
    options = {"--validation": validation, "--test": test, "--level": level, "--margin": margin}
    given = [str(item) for key, value in options.items() if value != DEFAULTS[key] for item in (key, value)]
    command = shlex.join([*PROG.split(), *map(str, folders), "--condition", condition, *given])
    return TunedReport(
        numbers, shown, answer_line(result, condition, METRIC_LABELS.get(validation, validation)), command
    )


def write_tuned(report: TunedReport, out_dir: Path, condition: str) -> list[Path]:
    """``own_best_<condition>.csv`` (numbers) and ``.md`` (the answer line, the table, the command) in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"own_best_{condition.rsplit('.', 1)[-1]}"
    csv, markdown = out_dir / f"{stem}.csv", out_dir / f"{stem}.md"
    report.numbers.to_csv(csv, index=False)
    made_by = f"Generated by `{report.command} --out {out_dir}` from the folders' trials.csv."
    markdown.write_text("\n".join([report.answer, "", *markdown_table(report.shown), "", made_by, ""]))
    return [csv, markdown]


def tuned_command(args: argparse.Namespace) -> list[Path]:
    """Print the table and the answer line; write the files with ``--out``. What cannot be compared: one line on
    stderr and exit code 2. Returns nothing, so no ``provenance.json`` overwrites that of a results folder written
    into: the markdown names its command."""
    try:
        report = tuned_report(args.folders, args.condition, args.validation, args.test, args.level, args.margin)
    except Refused as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print("\n".join([*markdown_table(report.shown), "", report.answer]))
    if args.tuned_out is not None:
        for path in write_tuned(report, args.tuned_out, args.condition):
            print(path)
    return []

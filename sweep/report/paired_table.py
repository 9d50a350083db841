"""The paired-comparison table of a study: per condition, which scales are not distinguishable from the best (or,
in a study that sweeps other keys instead of the scale, which grid points).

Read from MLflow (each COMPLETE trial's ``predictions/stsb_validation.csv``) and computed by
:func:`sweep.stats.paired_bootstrap.paired_bootstrap`; written by ``python -m sweep.report study`` as
``paired_comparison.csv`` and ``paired_comparison.md``, and logged on the parent run at the end of
``python -m sweep`` (`sweep.report.live_study.log_study_report`). A scale whose model collapsed is left out of its
condition's comparison, its row saying why (``not_scoreable``).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
from mlflow.tracking import MlflowClient

from sweep.evaluation.predictions import load_predictions
from sweep.report.results_folder import PAIRED_FILES, PAIRED_TEST_CSV
from sweep.report.summaries import by_condition, complete_trials, condition_label, condition_names, swept_scales
from sweep.stats.paired_bootstrap import paired_bootstrap
from sweep.stats.scale_verdicts import DEFAULT_MARGIN

log = logging.getLogger(__name__)

SEED = "param.trial.seed"
COLUMNS = [
    "condition",
    "scale",
    "spearman",
    "diff_to_best",
    "ci_low",
    "ci_high",
    "best",
    "indistinguishable",
    "not_scoreable",
]
POINT = "point"  # the column that replaces "scale" when grid points are compared
STSB_VALIDATION_LABEL = "STSB validation Spearman"  # what every line of the comparison is about
SPLIT_LABELS = {"validation": STSB_VALIDATION_LABEL, "test": "STSB test Spearman"}


def _condition_arrays(
    group: pd.DataFrame, client: MlflowClient, split: str
) -> tuple[np.ndarray, np.ndarray, list[float] | list[str]] | None:
    """(gold, predictions (scales, seeds, pairs), scales) over the seeds that every scale of the group has."""
    group = group.assign(seed=group[SEED] if SEED in group else 0)
    seeds = sorted(set.intersection(*(set(g["seed"]) for _, g in group.groupby("scale"))))
    scales = sorted(group["scale"].unique())
    if len(scales) < 2 or not seeds:
        return None
    gold, predictions = None, []
    for scale in scales:
        rows = []
        for seed in seeds:
            run_id = group[(group["scale"] == scale) & (group["seed"] == seed)]["run_id"].iloc[0]
            table = load_predictions(client, run_id, split)
            if table is None or (gold is not None and len(table) != len(gold)):
                log.warning("trial run %s has no usable %s predictions: no paired comparison", run_id, split)
                return None
            gold = table["gold"].to_numpy() if gold is None else gold
            rows.append(table["cosine"].to_numpy())
        predictions.append(rows)
    assert gold is not None  # at least two scales, each with a seed
    labels: list[float] | list[str]  # sorted above, so all grid-point labels or all scales
    labels = [str(s) for s in scales] if isinstance(scales[0], str) else [float(s) for s in scales]
    return gold, np.asarray(predictions), labels


def _comparison_groups(trials: pd.DataFrame) -> tuple[list[tuple[str, pd.DataFrame]], str]:
    """(label, COMPLETE trials with a ``scale`` column) per condition, and what ``scale`` holds: with the scale
    swept, one group per condition; otherwise, when other keys are swept (AnglE's three scales, its weights), one
    group whose ``scale`` is each trial's grid point, ``name=value, ...``: every point against the best one."""
    complete, names = complete_trials(trials), condition_names(trials)
    if swept_scales(trials):
        unlogged = complete["scale"].isna()
        if unlogged.any():  # their params never reached MLflow (the tracking server was down past the limit)
            log.warning(
                "%d COMPLETE trial runs have no logged scale: left out of the paired comparison", unlogged.sum()
            )
            complete = complete[~unlogged]
        return by_condition(complete, names), "scale"
    if not names:
        return [], POINT
    points = [condition_label(names, values) for values in complete[names].itertuples(index=False)]
    return [("", complete.assign(scale=points))], POINT


def paired_comparisons(
    trials: pd.DataFrame,
    client: MlflowClient,
    split: str = "validation",
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    margin: float = DEFAULT_MARGIN,
) -> tuple[pd.DataFrame, list[str]]:
    """The table (one row per condition and scale, or per grid point in a ``point`` column, with n_pairs, n_seeds,
    n_resamples, level, margin) and one summary line per condition; empty when nothing was swept or the trials
    logged no predictions."""
    if trials.empty:
        return pd.DataFrame(columns=COLUMNS), []
    groups, column = _comparison_groups(trials)
    tables, lines = [], []
    for label, group in groups:
        arrays = _condition_arrays(group, client, split)
        if arrays is None:
            continue
        result = paired_bootstrap(*arrays, n_resamples=n_resamples, level=level, seed=seed, margin=margin)
        tables.append(
            result.table.assign(
                condition=label,
                n_pairs=result.n_pairs,
                n_seeds=result.n_seeds,
                n_resamples=n_resamples,
                level=level,
                margin=margin,
            )
        )
        lines.append(result.line(f"{SPLIT_LABELS[split]}, {label}" if label else SPLIT_LABELS[split]))
    if not tables:
        return pd.DataFrame(columns=COLUMNS), []
    table = pd.concat(tables, ignore_index=True)
    table = table[COLUMNS + [c for c in table if c not in COLUMNS]]
    return table.rename(columns={"scale": column}), lines


def confirmation_lines(validation: pd.DataFrame, test: pd.DataFrame) -> list[str]:
    """Per condition, whether STSB test confirms the scale chosen on validation: it does when that scale is in the
    test's confidence set for the best (test was never used to choose)."""
    column = POINT if POINT in validation else "scale"
    lines = []
    for condition, chosen in validation[validation["best"]].groupby("condition", sort=False):
        on_test = test[(test["condition"] == condition) & (test[column] == chosen[column].iloc[0])]
        if on_test.empty or "in_confidence_set" not in on_test:
            continue
        row, name = on_test.iloc[0], _name(chosen[column].iloc[0])
        held = test[(test["condition"] == condition) & test["in_confidence_set"].eq(True)]
        members = ", ".join(_name(v) for v in held.sort_values("p_best", ascending=False)[column])
        verdict = "confirms" if row["in_confidence_set"] else "does not confirm"
        head = f"{SPLIT_LABELS['test']}, {condition}" if condition else SPLIT_LABELS["test"]
        lines.append(
            f"{head}: test {verdict} {name} chosen on validation ({row['verdict']} on test, "
            f"{row['level']:.0%} confidence set for the best on test: {members})"
        )
    return lines


def _name(value: object) -> str:
    return f"scale {value:g}" if isinstance(value, float) else f"point ({value})"


def _markdown(table: pd.DataFrame) -> list[str]:
    """A GitHub markdown table, floats to 4 decimals."""
    cells = [[f"{v:.4f}" if isinstance(v, float) else str(v) for v in row] for row in table.itertuples(index=False)]
    return [
        "| " + " | ".join(table.columns) + " |",
        "|" + "---|" * len(table.columns),
        *("| " + " | ".join(row) + " |" for row in cells),
    ]


def write_paired_comparison(
    table: pd.DataFrame, lines: list[str], out_dir: Path, test: pd.DataFrame | None = None
) -> list[Path]:
    """``paired_comparison.csv`` and ``paired_comparison.md`` (the table and the summary lines of
    :func:`paired_comparisons`), and ``paired_comparison_test.csv`` with STSB test's table when given."""
    if table.empty:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    csv, markdown = (out_dir / name for name in PAIRED_FILES)
    table.to_csv(csv, index=False)
    written = [csv, markdown]
    body = ["", *_markdown(table), ""]
    if test is not None and not test.empty:
        written.append(out_dir / PAIRED_TEST_CSV)
        test.to_csv(written[-1], index=False)
        body += ["STSB test (confirmation; never used to choose):", "", *_markdown(test), ""]
    markdown.write_text("\n".join([*(f"- {line}" for line in lines), *body]))
    return written

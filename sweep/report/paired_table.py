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
from sweep.report.results_folder import PAIRED_FILES
from sweep.report.summaries import (
    by_condition,
    complete_trials,
    condition_label,
    condition_names,
    markdown_table,
    swept_scales,
)
from sweep.stats.paired_bootstrap import paired_bootstrap

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
) -> tuple[pd.DataFrame, list[str]]:
    """The table (one row per condition and scale, or per grid point in a ``point`` column, with n_pairs, n_seeds,
    n_resamples, level) and one summary line per condition; empty when nothing was swept or the trials logged no
    predictions."""
    if trials.empty:
        return pd.DataFrame(columns=COLUMNS), []
    groups, column = _comparison_groups(trials)
    tables, lines = [], []
    for label, group in groups:
        arrays = _condition_arrays(group, client, split)
        if arrays is None:
            continue
        result = paired_bootstrap(*arrays, n_resamples=n_resamples, level=level, seed=seed)
        tables.append(
            result.table.assign(
                condition=label, n_pairs=result.n_pairs, n_seeds=result.n_seeds, n_resamples=n_resamples, level=level
            )
        )
        lines.append(result.line(f"{STSB_VALIDATION_LABEL}, {label}" if label else STSB_VALIDATION_LABEL))
    if not tables:
        return pd.DataFrame(columns=COLUMNS), []
    table = pd.concat(tables, ignore_index=True)
    table = table[COLUMNS + [c for c in table if c not in COLUMNS]]
    return table.rename(columns={"scale": column}), lines


def write_paired_comparison(table: pd.DataFrame, lines: list[str], out_dir: Path) -> list[Path]:
    """``paired_comparison.csv`` and ``paired_comparison.md`` (the table and the summary lines of
    :func:`paired_comparisons`)."""
    if table.empty:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    csv, markdown = (out_dir / name for name in PAIRED_FILES)
    table.to_csv(csv, index=False)
    markdown.write_text("\n".join([*(f"- {line}" for line in lines), "", *markdown_table(table), ""]))
    return [csv, markdown]

"""A results folder redrawn without MLflow, its paired comparison recomputed from shipped predictions or seeds.

``python -m sweep.report study`` from MLflow writes every COMPLETE trial's STSB predictions into the folder as
``predictions.npz`` (`sweep.report.predictions_file`: each trial's ranks of its cosines, what the paired statistics
read), so ``--from-csv`` recomputes the whole comparison (bootstrap, P(best), validation and test) from the folder
alone. A folder published before predictions were shipped has only ``trials.csv``: its comparison is then
recomputed from the per-seed Spearman alone (`sweep.report.paired_table.seed_comparisons`), and its lines say so.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from sweep.evaluation import load_predictions, untrained_part
from sweep.report.objective_table import objective_comparison, run_length, write_objective_comparison
from sweep.report.paired_table import (
    chosen_scales,
    confirmation_lines,
    paired_comparisons,
    seed_comparisons,
    write_paired_comparison,
)
from sweep.report.predictions_file import COLUMNS, PREDICTIONS_FILE, read_predictions, write_predictions
from sweep.report.results_folder import PAIRED_STEM, ResultsFolder, load_results_folder
from sweep.report.study_figures import write_results_folder
from sweep.report.summaries import complete_trials
from sweep.stats import DEFAULT_MARGIN

if TYPE_CHECKING:  # redrawing a folder from its CSVs does not import MLflow
    from mlflow.tracking import MlflowClient

SPLITS = ("validation", "test")


def export_predictions(trials: pd.DataFrame, client: MlflowClient, out_dir: Path) -> list[Path]:
    """``predictions.npz`` (`sweep.report.predictions_file`) of every COMPLETE trial run's logged STSB predictions,
    its untrained model's included (split ``validation_untrained``...); nothing when none logged any."""
    parts = []
    complete = complete_trials(trials)
    for run_id, number in zip(complete["run_id"], complete["trial_number"], strict=True):
        for part in (*SPLITS, *(untrained_part(split) for split in SPLITS)):
            table = load_predictions(client, str(run_id), part)
            if table is not None:
                parts.append(table.assign(trial_number=int(number), split=part))
    if not parts:
        return []
    return [write_predictions(pd.concat(parts, ignore_index=True)[COLUMNS], out_dir / PREDICTIONS_FILE)]


def folder_comparison(folder: ResultsFolder, **options: Any) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """(validation table, test table, answer lines) of the folder, as `sweep.report.live_study.study_comparison`
    gives them from MLflow; ``options``: resamples, level, margin, seed of `paired_comparisons`."""
    if not folder.has_trials:
        return pd.DataFrame(), pd.DataFrame(), []
    fetch = read_predictions(folder.path)
    tables: dict[str, pd.DataFrame] = {}
    lines: list[str] = []
    for split in SPLITS:
        if fetch is not None:
            trials = folder.trials.assign(run_id=folder.trials["trial_number"].astype(int).astype(str))
            chosen = chosen_scales(tables["validation"]) if split == "test" and not tables["validation"].empty else None
            tables[split], split_lines = paired_comparisons(trials, None, split, fetch=fetch, chosen=chosen, **options)
        else:
            seed_options = {k: v for k, v in options.items() if k in ("level", "margin")}
            tables[split], split_lines = seed_comparisons(folder.trials, split, **seed_options)
        if split == "validation":
            lines = split_lines
    validation, test = tables["validation"], tables["test"]
    if not validation.empty and not test.empty:
        lines += confirmation_lines(validation, test)
    return validation, test, lines


def redraw_results_folder(
    path: Path,
    out_dir: Path,
    untrained_from: Path | None = None,
    recompute: bool = True,
    figures: Collection[str] | None = None,
    **options: Any,
) -> list[Path]:
    """``python -m sweep.report study --from-csv``: the folder's figures and findings redrawn from its CSVs, with its
    paired comparison recomputed (`folder_comparison`) rather than copied. ``recompute=False`` reads the folder's own
    ``paired_comparison.csv`` instead (copied with its ``.md``): the same figures in seconds, without the bootstrap
    over the shipped predictions. ``figures``: only the figures of these stems (`write_study_figures`; each figure
    takes a second or more to draw), e.g. the ones a page shows."""
    folder = load_results_folder(path, untrained_from)
    validation, test, lines = folder_comparison(folder, **options) if recompute else (pd.DataFrame(), None, [])
    if not validation.empty:  # recomputed: it replaces the copy read from the folder
        folder.tables[PAIRED_STEM] = validation
    written = write_results_folder(folder, out_dir, figures)  # first: an unknown figure stem writes nothing
    level = options.get("level", 0.95)
    objective = write_objective_comparison(
        *objective_comparison(folder.trials, level, options.get("margin", DEFAULT_MARGIN)),
        out_dir,
        run_length(folder.trials),
        figures,
    )
    return written + write_paired_comparison(validation, lines, out_dir, test) + objective

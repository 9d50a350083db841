"""One study drawn straight from MLflow: its figures, its paired comparison and its config, as
``python -m sweep.report study`` and the notebooks' live mode write them, and as the end of ``python -m sweep`` logs
them on the study's parent run (``report/``), where the MLflow UI shows them beside the runs."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
from mlflow.tracking import MlflowClient

from sweep.config import missing_store
from sweep.errors import ConfigError
from sweep.names import ARTIFACT_PAIRED_COMPARISON, ARTIFACT_REPORT, TAG_PAIRED_COMPARISON, TAG_RUN_DESCRIPTION
from sweep.report.folder_comparison import export_predictions
from sweep.report.objective_table import objective_comparison, run_length, write_objective_comparison
from sweep.report.paired_table import (
    chosen_scales,
    confirmation_lines,
    paired_comparisons,
    write_paired_comparison,
)
from sweep.report.results_folder import PAIRED_STEM
from sweep.report.runs import HISTORY_KEYS, download_study_config, load_metric_history, load_study, load_trials
from sweep.report.study_figures import write_study_figures
from sweep.stats import DEFAULT_MARGIN, bullets

log = logging.getLogger(__name__)


def study_comparison(
    trials: pd.DataFrame, client: MlflowClient, **options: Any
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The paired comparison on STSB validation (the choice), on STSB test (its confirmation), and the answer lines:
    validation's verdicts, then whether test confirms the choice. ``options``: those of `paired_comparisons`."""
    validation, lines = paired_comparisons(trials, client, split="validation", **options)
    if validation.empty:
        return validation, validation, lines
    test, _ = paired_comparisons(trials, client, split="test", chosen=chosen_scales(validation), **options)
    return validation, test, lines + (confirmation_lines(validation, test) if not test.empty else [])


def write_live_study(
    tracking_uri: str | None,
    out_dir: Path,
    experiment: str | None = None,
    parent_run_id: str | None = None,
    **options: Any,
) -> list[Path]:
    """Every figure of the study (its newest parent run in ``experiment``, or ``parent_run_id``) with the paired
    verdict drawn in, ``paired_comparison.csv``/``.md`` (and ``_test.csv``), the trials' predictions
    (`sweep.report.folder_comparison`) and the study's ``config.yaml``, into ``out_dir``. ``options``: those of
    `paired_comparisons` (resamples, level, margin). A SQLite store that does not exist is a `ConfigError` (one
    line, `missing_store`), never created."""
    missing = missing_store(tracking_uri)
    if missing:
        raise ConfigError("tracking_uri", tracking_uri, missing)
    trials, histories = load_study(tracking_uri, experiment_name=experiment, parent_run_id=parent_run_id)
    client = MlflowClient(tracking_uri)
    paired, test, lines = study_comparison(trials, client, **options)
    figures = write_study_figures(trials, histories, out_dir, tables={PAIRED_STEM: paired})
    config = download_study_config(client, out_dir, experiment, parent_run_id)
    shipped = export_predictions(trials, client, out_dir)  # so --from-csv recomputes every statistic
    objective = write_objective_comparison(
        *objective_comparison(trials, options.get("level", 0.95), options.get("margin", DEFAULT_MARGIN)),
        out_dir,
        run_length(trials),
    )
    return figures + write_paired_comparison(paired, lines, out_dir, test) + objective + shipped + config


def log_study_report(
    client: MlflowClient, parent_run_id: str, paired: dict[str, Any] | None, about: str = ""
) -> list[str]:
    """At the end of a study: its paired comparison (``paired``: the options of `paired_comparisons`, None when
    `stats.paired.enabled` is false) as the parent run's tag ``sweep.paired_comparison`` and ``paired_comparison.csv``,
    and every figure with its CSV under the artifact folder ``report/``. Returns the answer lines (`study_comparison`).
    The parent run's Description becomes ``about`` (what the model is, `sweep.training.model_card.model_words`) above
    the answer lines. A figure that cannot be drawn or uploaded is a warning: the study's results are already
    recorded."""
    trials = load_trials(client, parent_run_id=parent_run_id)
    table, test, lines = study_comparison(trials, client, **paired) if paired is not None else (None, None, [])
    if lines and table is not None:
        client.set_tag(parent_run_id, TAG_PAIRED_COMPARISON, "; ".join(line.strip() for line in lines)[:5000])
        # the run page's Description shows the whole answer, where the tag is cut to one line
        answer = bullets(lines)
        client.set_tag(parent_run_id, TAG_RUN_DESCRIPTION, f"{about}\n\n{answer}" if about else answer)
        client.log_text(parent_run_id, table.to_csv(index=False), ARTIFACT_PAIRED_COMPARISON)
    try:
        histories = {key: load_metric_history(client, trials["run_id"], key) for key in HISTORY_KEYS}
        with tempfile.TemporaryDirectory() as folder:
            tables = {PAIRED_STEM: table} if table is not None else None
            write_study_figures(trials, histories, Path(folder), tables=tables)
            if table is not None:
                write_paired_comparison(table, lines, Path(folder), test)
            client.log_artifacts(parent_run_id, folder, ARTIFACT_REPORT)
    except Exception as error:  # matplotlib, a full disk, an unreachable store: the study is done
        log.warning("the study's report figures were not logged on its parent run: %s", error, exc_info=True)
    return lines

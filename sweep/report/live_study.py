"""One study drawn straight from MLflow: its figures, its paired comparison and its config, as both
``python -m sweep.report study`` and the notebooks' live mode write them."""

from __future__ import annotations

from pathlib import Path

from mlflow.tracking import MlflowClient

from sweep.report.paired_table import paired_comparisons, write_paired_comparison
from sweep.report.results_folder import PAIRED_STEM
from sweep.report.runs import download_study_config, load_study
from sweep.report.study_figures import write_study_figures


def write_live_study(
    tracking_uri: str | None,
    out_dir: Path,
    experiment: str | None = None,
    parent_run_id: str | None = None,
    n_resamples: int = 1000,
    level: float = 0.95,
) -> list[Path]:
    """Every figure of the study (its newest parent run in ``experiment``, or ``parent_run_id``) with the paired
    verdict drawn in, ``paired_comparison.csv``/``.md`` and the study's ``config.yaml``, into ``out_dir``."""
    trials, histories = load_study(tracking_uri, experiment_name=experiment, parent_run_id=parent_run_id)
    client = MlflowClient(tracking_uri)
    paired, lines = paired_comparisons(trials, client, n_resamples=n_resamples, level=level)
    figures = write_study_figures(trials, histories, out_dir, tables={PAIRED_STEM: paired})
    config = download_study_config(client, out_dir, experiment, parent_run_id)
    return figures + write_paired_comparison(paired, lines, out_dir) + config

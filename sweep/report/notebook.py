"""What the notebooks call: redraw one results folder (from its CSVs, or from a live MLflow study when
``SWEEP_TRACKING_URI`` is set) into the folder named by ``SWEEP_FIGURES_DIR`` (default: ``results/`` itself)."""

from __future__ import annotations

import os
from pathlib import Path

from sweep.report.results_folder import load_results_folder
from sweep.report.study_figures import write_results_folder, write_study_figures

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"


def output_dir(name: str) -> Path:
    """Where the notebook writes study ``name``: ``$SWEEP_FIGURES_DIR/name``, else ``results/name``."""
    return Path(os.environ.get("SWEEP_FIGURES_DIR", RESULTS)) / name


def regenerate(name: str, untrained_from: str | None = None) -> list[Path]:
    """Redraw ``results/name`` from its CSVs into ``output_dir(name)``; with ``SWEEP_TRACKING_URI`` (and
    ``SWEEP_EXPERIMENT``, default ``name``) draw the live study from MLflow instead."""
    uri = os.environ.get("SWEEP_TRACKING_URI")
    if uri:
        from sweep.report.runs import load_study  # mlflow: only for a live database

        trials, histories = load_study(uri, experiment_name=os.environ.get("SWEEP_EXPERIMENT", name))
        return write_study_figures(trials, histories, output_dir(name))
    sibling = RESULTS / untrained_from if untrained_from else None
    return write_results_folder(load_results_folder(RESULTS / name, sibling), output_dir(name))


def figures(paths: list[Path]) -> list[Path]:
    """The PNGs among written paths, to display."""
    return [path for path in paths if path.suffix == ".png"]

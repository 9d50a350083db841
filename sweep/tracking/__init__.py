"""Layer 7, tracking: MLflow through `MlflowClient`. `MlflowStudyLogger` is the `sweep.study.StudyLogger` a study tracks
itself through (its parent run, a run per trial, which is the `TrialLogger` of `sweep.loggers` the trial logs
through, the kept models' uploads); the outage buffer, the versions that produced a run, the UI addresses users open
and what a study takes on disk.

The public face: each name is imported from its module on first use (`sweep.lazy_face`), so that a command
that only checks its config does not import what only training needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep import lazy_face

if TYPE_CHECKING:
    from sweep.tracking.mlflow_client import TrackingClient, TrialRun, experiment_id, open_tracking, parent_run
    from sweep.tracking.outage_buffer import BufferedWriter
    from sweep.tracking.study_logger import MlflowStudyLogger
    from sweep.tracking.versions import library_versions, version_params

__all__ = [
    "BufferedWriter",
    "MlflowStudyLogger",
    "TrackingClient",
    "TrialRun",
    "experiment_id",
    "library_versions",
    "open_tracking",
    "parent_run",
    "version_params",
]

# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "mlflow_client": ("TrackingClient", "TrialRun", "experiment_id", "open_tracking", "parent_run"),
    "outage_buffer": ("BufferedWriter",),
    "study_logger": ("MlflowStudyLogger",),
    "versions": ("library_versions", "version_params"),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)

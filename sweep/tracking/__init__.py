"""Layer 2, tracking: MLflow through `MlflowClient` (parent and trial runs), the outage buffer, the versions that
produced a run, the UI addresses users open and the SQLite schema lock."""

from sweep.tracking.mlflow_client import TrackingClient, TrialRun, experiment_id, open_tracking, parent_run
from sweep.tracking.outage_buffer import BufferedWriter
from sweep.tracking.sqlite_lock import sqlite_init_lock
from sweep.tracking.versions import library_versions, version_params

__all__ = [
    "BufferedWriter",
    "TrackingClient",
    "TrialRun",
    "experiment_id",
    "library_versions",
    "open_tracking",
    "parent_run",
    "sqlite_init_lock",
    "version_params",
]

"""Layer 2, tracking: MLflow through `MlflowClient` (parent and trial runs; a trial's run is the `TrialLogger` of
`sweep.loggers` it logs through), the outage buffer, the versions that produced a run and the UI addresses users
open."""

from sweep.tracking.mlflow_client import TrackingClient, TrialRun, experiment_id, open_tracking, parent_run
from sweep.tracking.outage_buffer import BufferedWriter
from sweep.tracking.versions import library_versions, version_params

__all__ = [
    "BufferedWriter",
    "TrackingClient",
    "TrialRun",
    "experiment_id",
    "library_versions",
    "open_tracking",
    "parent_run",
    "version_params",
]

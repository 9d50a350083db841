"""Layer 2, tracking: MLflow through `MlflowClient` (parent and trial runs; a trial's run is the `TrialLogger` of
`sweep.loggers` it logs through), the outage buffer, the versions that produced a run and the UI addresses users
open.

The public face: each name is imported from its module on first use (`sweep.lazy_face`), so that a command
that only checks its config does not import what only training needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep import lazy_face

if TYPE_CHECKING:
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

# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "mlflow_client": ("TrackingClient", "TrialRun", "experiment_id", "open_tracking", "parent_run"),
    "outage_buffer": ("BufferedWriter",),
    "versions": ("library_versions", "version_params"),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)

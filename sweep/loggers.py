"""The interface a trial and its evaluations log through, so that the training, the evaluation and the statistics never
import the tracking back end: `TrialLogger`, one trial's run (its params, metrics, tags, inputs and artifacts).
`sweep.tracking` implements it with MLflow (`sweep.tracking.mlflow_client.TrialRun`) and the study hands one to each
trial it runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class TrialLogger(Protocol):
    """Where one trial logs: every call is delivered in order, and waits through a tracking server outage."""

    run_id: str  # the trial's run, as the kept models and the Optuna trial record it

    def log_params(self, params: Mapping[str, Any]) -> None: ...

    def log_metrics(self, metrics: Mapping[str, float], step: int = 0, defer: bool = False) -> None:
        """Log `metrics` at `step`; `defer`: from a background thread, delivered by the trial's next write."""

    def log_inputs(self, datasets: Sequence[Any]) -> None:
        """Record the datasets the trial reads (its training and evaluation data) as the run's inputs."""

    def set_tags(self, tags: Mapping[str, Any]) -> None: ...

    def log_dict(self, data: Any, artifact_file: str) -> None: ...

    def log_text(self, text: str, artifact_file: str) -> None: ...

    def log_figure(self, figure: Any, artifact_file: str) -> None: ...

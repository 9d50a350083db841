"""The interface a study tracks itself through (`StudyLogger`): its parent run, the run of each trial, the models it
keeps and what its race reads back, as optuna-integration's `MLflowCallback` is a study's tracking. The study calls
these hooks and nothing of the tracking back end; `sweep.tracking.MlflowStudyLogger` implements them with MLflow, and
a test double stands in for it where MLflow is not the point."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import optuna
    import pandas as pd
    from optuna.trial import TrialState
    from sentence_transformers import SentenceTransformer

    from sweep.loggers import TrialLogger
    from sweep.training import Keeping, Kept, TrackedData, Verdict


class StudyLogger(Protocol):
    """Where a study logs: one parent run, a run per trial (the `TrialLogger` the trial logs through), the models it
    keeps; every write waits through a tracking server outage until `gave_up` says why it stopped waiting."""

    experiment_id: str
    parent_run_id: str  # "" until `start`
    recorded_end_ms: int | None  # the parent run's end before this run reopened it (None: a new study)

    def start(
        self,
        study: optuna.Study,
        settings: Mapping[str, Any] | None,
        swept: Collection[str] = (),
        config_yaml: str = "",
        description: str = "",
    ) -> None:
        """Open the study's parent run: a new one with its flattened `settings` (a `swept` key's value marked as
        swept), the config as an artifact and its `description`; `settings` None: reopen the one the study has."""

    def start_trial(self, trial_number: int, run_name: str) -> TrialLogger:
        """Create a trial's run under the parent run."""

    def log_trial_params(self, run_id: str, params: Mapping[str, Any]) -> None:
        """Record a trial's resolved config (flattened) and what produced it on its run."""

    def watching_system(self, run_id: str) -> AbstractContextManager[None]:
        """Sample the system into the trial's run while the block runs."""

    def end_trial(self, run_id: str, state: TrialState | None, reason: str | None) -> None:
        """End a trial's run with its Optuna `state` and `reason`; `state` None: the trial was interrupted or its
        worker died (KILLED)."""

    def log_kept(
        self,
        keeping: Keeping,
        kept: Kept,
        model: SentenceTransformer,
        run_id: str,
        trial_number: int,
        *,
        step: int = 0,
        metrics: Iterable[str] = (),
        data: TrackedData | None = None,
    ) -> None:
        """Log a model the study kept on disk to its trial's run (and remove those it supersedes)."""

    def set_tag(self, run_id: str, key: str, value: str) -> None: ...

    @property
    def gave_up(self) -> str | None:
        """Why writes were dropped after a tracking outage outlasted its timeout (None while none was)."""

    def flush(self) -> None:
        """Deliver the writes waiting for the server."""

    def validation_predictions(self, run_id: str) -> pd.DataFrame | None:
        """The per-pair validation predictions a trial logged (None when it has none)."""

    def close(
        self,
        study: optuna.Study,
        summary: Mapping[str, float],
        tags: Mapping[str, str],
        results_csv: str,
        status: str,
        keeping: Keeping,
        keep_recorded_end: bool = False,
    ) -> None:
        """End the parent run with the study's `summary`, `tags` and results table (`keep_recorded_end`: a rerun
        that trained nothing keeps the end it recorded), end the trial runs an outage left open, and settle the
        kept models: the superseded removed, the best marked."""

    def publish_verdict(self, verdict: Verdict, keeping: Keeping) -> None:
        """Put the study's verdict on its best kept model's card into the tracking store too."""

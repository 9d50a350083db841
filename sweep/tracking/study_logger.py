"""The study's side of MLflow (`MlflowStudyLogger`, the `sweep.study.StudyLogger` a study tracks itself through):
the experiment and the study's parent run, a run per trial, the kept models' uploads and removals, the end of the
study; every write through the client's outage buffer (`sweep.tracking.outage_buffer`)."""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import optuna
import pandas as pd
from optuna.trial import TrialState
from sentence_transformers import SentenceTransformer

from sweep.config import TrackingConfig
from sweep.evaluation import load_predictions
from sweep.names import ARTIFACT_CONFIG, TAG_BEST_MODEL_RUN_ID, TAG_RUN_DESCRIPTION
from sweep.tracking import logged_models
from sweep.tracking.mlflow_client import (
    TrackingClient,
    TrialRun,
    close_parent_run,
    end_orphaned_runs,
    experiment_id,
    kill_trial_run,
    log_text,
    open_tracking,
    parent_run,
)
from sweep.tracking.system_metrics import system_metrics
from sweep.tracking.ui_links import mark_model_development
from sweep.tracking.versions import version_params
from sweep.training import Keeping, Kept, TrackedData, Verdict

SWEPT = "swept (see study.search_space)"  # a parent-run param whose base value no trial trains with


@dataclass
class MlflowStudyLogger:
    """A study's tracking in MLflow: `open` it from the ``tracking`` section, then `start` the parent run."""

    client: TrackingClient
    tracking: TrackingConfig
    versions: dict[str, str]  # the library versions and commit, pinned when the study opens
    experiment_id: str = ""
    parent_run_id: str = ""
    study_name: str = ""
    recorded_end_ms: int | None = None
    runs: dict[str, TrialRun] = field(default_factory=dict)  # the trial runs this process has open

    @classmethod
    def open(cls, tracking: TrackingConfig) -> MlflowStudyLogger:
        """The store of `tracking`, answering now (`open_tracking`: an unreachable store is a config error)."""
        return cls(open_tracking(tracking), tracking, version_params())

    def start(
        self,
        study: optuna.Study,
        settings: Mapping[str, Any] | None,
        swept: Collection[str] = (),
        config_yaml: str = "",
        description: str = "",
    ) -> None:
        """Open the experiment (`tracking.experiment_name`, marked as model training) and the study's parent run: a
        new one with `settings` (a swept key's base value, e.g. ``loss.scale`` 20 before a sweep over 0-50, would read
        like the study's scale, so it says `SWEPT`), the library versions, the config as ``config.yaml`` and the
        run page's `description`; `settings` None: the one the study already has, reopened."""
        client, tracking = self.client, self.tracking
        self.study_name = study.study_name
        self.experiment_id = experiment_id(client, tracking.experiment_name, tracking.artifact_location)
        mark_model_development(client, self.experiment_id)
        if settings is None:
            self.parent_run_id, self.recorded_end_ms = parent_run(client, study, self.experiment_id, {})
            return
        params = {key: SWEPT if key in swept else value for key, value in settings.items()}
        parent, self.recorded_end_ms = parent_run(client, study, self.experiment_id, {**params, **self.versions})
        self.parent_run_id = parent
        log_text(client, parent, config_yaml, ARTIFACT_CONFIG)
        self.set_tag(parent, TAG_RUN_DESCRIPTION, description)

    def start_trial(self, trial_number: int, run_name: str) -> TrialRun:
        run = TrialRun(self.client, self.experiment_id, self.parent_run_id, self.study_name, trial_number, run_name)
        self.runs[run.run_id] = run
        return run

    def log_trial_params(self, run_id: str, params: Mapping[str, Any]) -> None:
        """A trial's resolved config, flattened, with the library versions the study pinned when it opened."""
        self.runs[run_id].log_params({**params, **self.versions})

    @contextmanager
    def watching_system(self, run_id: str) -> Iterator[None]:
        with system_metrics(self.runs[run_id], self.tracking):  # stops with the trial, however it ends
            yield

    def end_trial(self, run_id: str, state: TrialState | None, reason: str | None) -> None:
        """End a trial's run: a finished trial's (one this logger started) with its state, delivering what waits for
        the server (`TrialRun.end`); an interrupted one's, or a dead worker's (any run), KILLED with the `reason`."""
        if state is None:
            self.runs.pop(run_id, None)
            kill_trial_run(self.client, run_id, reason or "interrupted")
        else:
            self.runs.pop(run_id).end(state, reason)

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
        run = self.runs[run_id]
        logged_models.log_kept(keeping, kept, model, run, trial_number, step=step, metrics=metrics, data=data)

    def set_tag(self, run_id: str, key: str, value: str) -> None:
        tag = functools.partial(self.client.set_tag, run_id, key, value[:5000])
        self.client.writer.write(f"set the tag {key}", tag)

    @property
    def gave_up(self) -> str | None:
        return self.client.writer.gave_up

    def flush(self) -> None:
        self.client.writer.flush()

    def validation_predictions(self, run_id: str) -> pd.DataFrame | None:
        return load_predictions(self.client, run_id, "validation")

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
        """End the trial runs an outage left RUNNING, then the parent run (`close_parent_run`); remove the
        superseded models a killed worker did not reach, and mark the study's best (its run is the tag
        ``sweep.best_model_run_id``), both through the writer: an outage delays them like any other write."""
        client, writer = self.client, self.client.writer
        end_orphaned_runs(client, study, self.experiment_id, self.parent_run_id)
        end = self.recorded_end_ms if keep_recorded_end else None
        close_parent_run(client, self.parent_run_id, summary, tags, results_csv, status, end)
        writer.write(
            "remove superseded models",
            functools.partial(logged_models.prune_superseded, keeping, client, self.experiment_id),
        )
        if TAG_BEST_MODEL_RUN_ID in tags:
            registered = keeping.registered_model_name
            mark = functools.partial(logged_models.mark_study_best, client, tags[TAG_BEST_MODEL_RUN_ID], registered)
            writer.write("mark the best model", mark)

    def publish_verdict(self, verdict: Verdict, keeping: Keeping) -> None:
        logged_models.publish(self.client, verdict, keeping.registered_model_name)

"""The MLflow side of a study through `MlflowClient`: opening the store, one parent run per study (with its
summary), one nested run per trial, the library versions every run records.

Names (the report module and the README rely on them):
- parent run: tags ``sweep.role=study``, ``sweep.study_name``; its id is kept in the Optuna study's user
  attribute ``mlflow_parent_run_id`` so a resumed or second worker reuses it.
- trial run: tags ``mlflow.parentRunId``, ``sweep.role=trial``, ``sweep.study_name``, ``sweep.trial_number``,
  ``sweep.optuna_state`` (COMPLETE / PRUNED / FAIL); params: the resolved trial config flattened and
  ``version.*``; status FINISHED (complete), KILLED (pruned) or FAILED.
"""

from __future__ import annotations

import functools
import json
import platform
import subprocess
import time
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import optuna
from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from sweep.config import ConfigError
from sweep.names import (
    ATTR_MLFLOW_PARENT_RUN_ID,
    ROLE_STUDY,
    ROLE_TRIAL,
    TAG_END_REASON,
    TAG_OPTUNA_STATE,
    TAG_PARENT_RUN_ID,
    TAG_ROLE,
    TAG_RUN_NAME,
    TAG_STUDY_NAME,
    TAG_TRIAL_NUMBER,
)
from sweep.sqlite_lock import sqlite_init_lock

MAX_PARAMS_PER_BATCH = 100
MAX_PARAM_LENGTH = 6000
PACKAGES = ("torch", "transformers", "sentence-transformers", "optuna", "mlflow", "datasets", "hydra-core", "sweep")
REPO_ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def library_versions() -> dict[str, str]:
    """Versions of the libraries whose behaviour changes results, the Python version and the git commit.

    Read once per process, so a long sweep records the code it started with, not later commits."""
    versions = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5)
        versions["git_commit"] = commit.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        versions["git_commit"] = "unknown"
    return versions


def open_tracking(cfg: DictConfig) -> MlflowClient:
    """An MlflowClient whose store answers (creating a new SQLite database under the lock)."""
    try:
        with sqlite_init_lock(cfg.tracking.uri):
            client = MlflowClient(cfg.tracking.uri)  # creates the store (and a new database's schema) at once
            client.search_experiments(max_results=1)
    except Exception as error:  # noqa: BLE001 - any store or driver error: name the key and stop before training
        raise ConfigError(
            "tracking.uri",
            cfg.tracking.uri,
            f"cannot reach the MLflow tracking store ({type(error).__name__}: {error})",
        ) from None
    return client


def _param_value(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
    return text[:MAX_PARAM_LENGTH]


def log_params(client: MlflowClient, run_id: str, params: Mapping[str, Any]) -> None:
    items = [Param(key, _param_value(value)) for key, value in params.items()]
    for start in range(0, len(items), MAX_PARAMS_PER_BATCH):
        client.log_batch(run_id, params=items[start : start + MAX_PARAMS_PER_BATCH])


def experiment_id(client: MlflowClient, name: str, artifact_location: str | None, attempts: int = 5) -> str:
    """The id of the MLflow experiment `name`, created (with its artifact location) if needed.

    Workers that start together all find no experiment and all create it: every create but one fails
    (RESOURCE_ALREADY_EXISTS, or the SQL store's IntegrityError), and those read the winner's id."""
    if artifact_location:
        Path(artifact_location).mkdir(parents=True, exist_ok=True)
        artifact_location = Path(artifact_location).resolve().as_uri()
    for attempt in range(attempts):
        experiment = client.get_experiment_by_name(name)
        if experiment is not None:
            return experiment.experiment_id
        try:
            return client.create_experiment(name, artifact_location=artifact_location)
        except MlflowException as error:
            lost_the_race = error.error_code == "RESOURCE_ALREADY_EXISTS" or "IntegrityError" in str(error)
            if not lost_the_race or attempt == attempts - 1:
                raise
            time.sleep(0.1 * (attempt + 1))
    raise RuntimeError(f"MLflow experiment {name!r} could be neither read nor created")


def parent_run(client: MlflowClient, study: optuna.Study, exp_id: str, params: Mapping[str, Any]) -> str:
    """The study's parent run: reused (and set RUNNING again) when the study already has one here."""
    run_id = study.user_attrs.get(ATTR_MLFLOW_PARENT_RUN_ID)
    if run_id is not None:
        try:
            run = client.get_run(run_id)
        except Exception:  # noqa: BLE001 - unknown id: the tracking store changed since; start a new parent
            run = None
        if run is not None and run.info.experiment_id == exp_id:
            client.update_run(run_id, status="RUNNING")
            return run_id
    tags = {TAG_ROLE: ROLE_STUDY, TAG_STUDY_NAME: study.study_name, TAG_RUN_NAME: study.study_name}
    run_id = client.create_run(exp_id, tags=tags, run_name=study.study_name).info.run_id
    log_params(client, run_id, params)
    study.set_user_attr(ATTR_MLFLOW_PARENT_RUN_ID, run_id)
    return run_id


def write_shared(write: Callable[[], object], attempts: int = 3) -> None:
    """A write to the study's parent run, which every worker that finishes at the same moment also writes.

    MLflow's SQL store inserts a tag (or latest metric) after checking that it is absent, so two workers can
    collide on the unique key (IntegrityError); a retry then updates the row the other worker inserted.
    """
    for attempt in range(attempts):
        try:
            write()
            return
        except MlflowException as error:
            if "IntegrityError" not in str(error) or attempt == attempts - 1:
                raise
            time.sleep(0.2 * (attempt + 1))


def close_parent_run(
    client: MlflowClient,
    run_id: str,
    summary: Mapping[str, float],
    tags: Mapping[str, str],
    results_csv: str,
    status: str,
) -> None:
    """End the parent run with the study's summary metrics, its tags (best params, best model) and the results
    table as ``results.csv``."""
    for key, value in summary.items():
        write_shared(lambda key=key, value=value: client.log_metric(run_id, key, value))
    for key, value in tags.items():
        write_shared(lambda key=key, value=value: client.set_tag(run_id, key, value))
    client.log_text(run_id, results_csv, "results.csv")
    client.set_terminated(run_id, status=status)


def kill_trial_run(client: MlflowClient, run_id: str, reason: str) -> None:
    """End the run of a trial whose worker died: Optuna state FAIL, MLflow status KILLED."""
    client.set_tag(run_id, TAG_OPTUNA_STATE, "FAIL")
    client.set_tag(run_id, TAG_END_REASON, reason)
    client.set_terminated(run_id, status="KILLED")


class TrialRun:
    """The MLflow run of one Optuna trial."""

    def __init__(
        self, client: MlflowClient, exp_id: str, parent_id: str, study_name: str, trial_number: int, run_name: str
    ) -> None:
        self.client = client
        tags = {
            TAG_PARENT_RUN_ID: parent_id,
            TAG_ROLE: ROLE_TRIAL,
            TAG_STUDY_NAME: study_name,
            TAG_TRIAL_NUMBER: str(trial_number),
            TAG_OPTUNA_STATE: "RUNNING",
        }
        self.run_id = client.create_run(exp_id, tags=tags, run_name=run_name).info.run_id

    def log_params(self, params: Mapping[str, Any]) -> None:
        log_params(self.client, self.run_id, params)

    def log_metrics(self, metrics: Mapping[str, float], step: int = 0) -> None:
        now = int(time.time() * 1000)
        entries = [Metric(key, float(value), now, step) for key, value in metrics.items() if value is not None]
        if entries:
            self.client.log_batch(self.run_id, metrics=entries)

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        self.client.log_batch(self.run_id, tags=[RunTag(key, str(value)) for key, value in tags.items()])

    def log_dict(self, data: Any, artifact_file: str) -> None:
        self.client.log_dict(self.run_id, data, artifact_file)

    def end(self, state: optuna.trial.TrialState, reason: str | None = None) -> None:
        tags = {TAG_OPTUNA_STATE: state.name}
        if reason:
            tags[TAG_END_REASON] = reason
        self.set_tags(tags)
        status = {"COMPLETE": "FINISHED", "PRUNED": "KILLED"}.get(state.name, "FAILED")
        self.client.set_terminated(self.run_id, status=status)

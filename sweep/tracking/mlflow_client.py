"""The MLflow side of a study through `MlflowClient`: opening the store, one parent run per study (with its
summary), one nested run per trial, the library versions every run records (sweep.tracking.versions).

Names (the report module and the README rely on them):
- parent run: tags ``sweep.role=study``, ``sweep.study_name``; its id is kept in the Optuna study's user
  attribute ``mlflow_parent_run_id`` so a resumed or second worker reuses it.
- trial run: tags ``mlflow.parentRunId``, ``sweep.role=trial``, ``sweep.study_name``, ``sweep.trial_number``,
  ``sweep.optuna_state`` (COMPLETE / PRUNED / FAIL), ``sweep.worker`` (hostname:pid); params: the resolved trial
  config flattened and ``version.*``; status FINISHED (complete), KILLED (pruned) or FAILED.

Every call goes through the client's `BufferedWriter` (sweep.tracking.outage_buffer): while a tracking server is
unreachable, writes wait in order and training goes on; a resumed study ends the trial runs that a lost server
left RUNNING although their Optuna trial had finished.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import optuna
from mlflow.entities import DatasetInput, Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from sweep.config import TrackingConfig, require_number, sqlite_init_lock, wait_while_locked
from sweep.errors import ConfigError, TrackingOutage
from sweep.names import (
    ATTR_FAIL_REASON,
    ATTR_MLFLOW_PARENT_RUN_ID,
    ATTR_MLFLOW_RUN_ID,
    ROLE_STUDY,
    ROLE_TRIAL,
    TAG_END_REASON,
    TAG_OPTUNA_STATE,
    TAG_PARENT_RUN_ID,
    TAG_ROLE,
    TAG_RUN_NAME,
    TAG_STUDY_NAME,
    TAG_TRIAL_NUMBER,
    TAG_WORKER,
)
from sweep.tracking.outage_buffer import BufferedWriter, use_http_defaults

log = logging.getLogger(__name__)

MAX_PARAMS_PER_BATCH = 100
MAX_PARAM_LENGTH = 6000


class TrackingClient(MlflowClient):
    """An MlflowClient with the writer that every write of this module goes through."""

    def __init__(self, uri: str, outage_timeout_s: float) -> None:
        super().__init__(uri)
        self.writer = BufferedWriter(uri, outage_timeout_s)


def is_http(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def open_tracking(tracking: TrackingConfig) -> TrackingClient:
    """A TrackingClient for the `tracking` section whose store answers now (creating a new SQLite database under the
    lock; a SQLite database another process holds locked is waited for up to `tracking.outage_timeout_s`); an
    unreachable store at start is a config error, a later outage is buffered (`tracking.outage_timeout_s`)."""
    timeout = require_number("tracking.outage_timeout_s", tracking.outage_timeout_s, low=0, strict=True, note="seconds")
    if is_http(tracking.uri):
        use_http_defaults()

    def opened() -> TrackingClient:
        client = TrackingClient(tracking.uri, timeout)  # creates the store (and a new schema) at once
        client.search_experiments(max_results=1)
        return client

    try:
        with sqlite_init_lock(tracking.uri):
            client = wait_while_locked(opened, tracking.uri, timeout, "tracking.outage_timeout_s")
    except Exception as error:  # noqa: BLE001 - any store or driver error: name the key and stop before training
        raise ConfigError(
            "tracking.uri",
            tracking.uri,
            f"cannot reach the MLflow tracking store ({type(error).__name__}: {error})",
        ) from None
    return client


def _param_value(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
    return text[:MAX_PARAM_LENGTH]


def log_params(client: TrackingClient, run_id: str, params: Mapping[str, Any]) -> None:
    items = [Param(key, _param_value(value)) for key, value in params.items()]
    for start in range(0, len(items), MAX_PARAMS_PER_BATCH):
        batch = items[start : start + MAX_PARAMS_PER_BATCH]
        client.writer.write("log params", functools.partial(client.log_batch, run_id, params=batch))


def experiment_id(client: TrackingClient, name: str, artifact_location: str | None, attempts: int = 5) -> str:
    """The id of the MLflow experiment `name`, created if needed: with `artifact_location` for a local store; a
    tracking server keeps its own (`--artifacts-destination`), which every machine can reach.

    Workers that start together all find no experiment and all create it: every create but one fails
    (RESOURCE_ALREADY_EXISTS, or the SQL store's IntegrityError), and those read the winner's id."""
    if artifact_location and not is_http(client.tracking_uri):
        Path(artifact_location).mkdir(parents=True, exist_ok=True)
        artifact_location = Path(artifact_location).resolve().as_uri()
    else:
        artifact_location = None
    for attempt in range(attempts):
        experiment = client.writer.read("get experiment", lambda: client.get_experiment_by_name(name))
        if experiment is not None:
            return experiment.experiment_id
        try:
            return client.writer.read("create experiment", lambda: client.create_experiment(name, artifact_location))
        except MlflowException as error:
            lost_the_race = error.error_code == "RESOURCE_ALREADY_EXISTS" or "IntegrityError" in str(error)
            if not lost_the_race or attempt == attempts - 1:
                raise
            time.sleep(0.1 * (attempt + 1))
    raise RuntimeError(f"MLflow experiment {name!r} could be neither read nor created")


def _get_run(client: TrackingClient, run_id: str) -> Any:
    """The run, or None when the store does not know the id (an unreachable store waits, up to the limit)."""

    def get() -> Any:
        try:
            return client.get_run(run_id)
        except MlflowException as error:
            if error.error_code != "RESOURCE_DOES_NOT_EXIST":
                raise
            return None

    return client.writer.read("get run", get)


def parent_run(
    client: TrackingClient, study: optuna.Study, exp_id: str, params: Mapping[str, Any]
) -> tuple[str, int | None]:
    """The study's parent run and the end time it had recorded (ms; None for a new run or one never ended): reused
    (set RUNNING again, and the trial runs it left RUNNING ended) when the study already has one here."""
    run_id = study.user_attrs.get(ATTR_MLFLOW_PARENT_RUN_ID)
    if run_id is not None:
        run = _get_run(client, run_id)
        if run is not None and run.info.experiment_id == exp_id:
            client.writer.write("reopen parent run", functools.partial(client.update_run, run_id, status="RUNNING"))
            end_orphaned_runs(client, study, exp_id, run_id)
            return run_id, run.info.end_time
    tags = {TAG_ROLE: ROLE_STUDY, TAG_STUDY_NAME: study.study_name, TAG_RUN_NAME: study.study_name}
    run_id = client.writer.read(
        "create parent run", lambda: client.create_run(exp_id, tags=tags, run_name=study.study_name)
    ).info.run_id
    log_params(client, run_id, params)
    study.set_user_attr(ATTR_MLFLOW_PARENT_RUN_ID, run_id)
    return run_id, None


def end_orphaned_runs(client: TrackingClient, study: optuna.Study, exp_id: str, parent_id: str) -> None:
    """End the trial runs still RUNNING whose Optuna trial has finished: the tracking server was unreachable (past
    `tracking.outage_timeout_s`) when the trial ended. Runs of trials still running elsewhere are left alone."""
    query = f"tags.`{TAG_PARENT_RUN_ID}` = '{parent_id}' and attributes.status = 'RUNNING'"
    try:
        runs = client.writer.read("search runs", lambda: client.search_runs([exp_id], filter_string=query))
    except TrackingOutage as outage:  # the study is stopping for this outage; its rerun ends them (parent_run)
        log.error("trial runs left RUNNING until the study is run again: %s", outage)
        return
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    for run in runs:
        trial = trials.get(int(run.data.tags.get(TAG_TRIAL_NUMBER, -1)))
        recorded = trial.user_attrs.get(ATTR_MLFLOW_RUN_ID) if trial is not None else None
        if recorded not in (None, run.info.run_id):  # a create retried after its answer was lost: a duplicate
            client.writer.write("delete duplicate run", functools.partial(client.delete_run, run.info.run_id))
        elif trial is not None and trial.state.is_finished():
            reason = trial.user_attrs.get(ATTR_FAIL_REASON) or "ended while the tracking server was unreachable"
            end_run(client, run.info.run_id, trial.state.name, reason)


def write_shared(write: Callable[[], object], attempts: int = 3) -> None:
    """A write to rows every worker writes: the study's parent run (tags, latest metrics) when workers finish at the
    same moment, or the experiment's datasets when their first trials start at the same moment.

    MLflow's SQL store inserts such a row after checking that it is absent, so two workers can collide on the
    unique key (IntegrityError); a retry then updates, or links, the row the other worker inserted.
    """
    for attempt in range(attempts):
        try:
            write()
            return
        except MlflowException as error:
            if "IntegrityError" not in str(error) or attempt == attempts - 1:
                raise
            time.sleep(0.2 * (attempt + 1))


def upload_artifact(client: TrackingClient, run_id: str, artifact_file: str, upload: Callable[[], object]) -> None:
    """Run `upload` (writing `artifact_file` of run `run_id`) through the tracking writer: buffered while the server
    is unreachable; a failing file system (disk full) is raised as an OSError naming where."""

    def write() -> None:
        try:
            upload()
        except OSError as error:
            where = f"{client.get_run(run_id).info.artifact_uri}/{artifact_file}"
            raise OSError(error.errno, f"cannot write artifact {where}: {error.strerror or error}") from error

    client.writer.write(artifact_file, write)


def log_text(client: TrackingClient, run_id: str, text: str, artifact_file: str) -> None:
    """Upload `text` as `artifact_file` of run `run_id` (see `upload_artifact`)."""
    upload_artifact(client, run_id, artifact_file, functools.partial(client.log_text, run_id, text, artifact_file))


def close_parent_run(
    client: TrackingClient,
    run_id: str,
    summary: Mapping[str, float],
    tags: Mapping[str, str],
    results_csv: str,
    status: str,
    end_time: int | None = None,
) -> None:
    """End the parent run with the study's summary metrics, its tags (best params, best model) and the results
    table as ``results.csv``; ``end_time`` (ms) keeps a recorded end (a rerun that trained nothing), None: now."""
    write = client.writer.write
    for key, value in summary.items():
        metric = functools.partial(client.log_metric, run_id, key, value)
        write("parent summary", functools.partial(write_shared, metric))
    for tag, text in tags.items():
        write("parent tags", functools.partial(write_shared, functools.partial(client.set_tag, run_id, tag, text)))
    try:
        log_text(client, run_id, results_csv, "results.csv")
    except OSError as error:  # the artifact store's disk is full: the run still ends, the table is printed
        log.error("results.csv not saved: %s", error)
    write("end parent run", lambda: client.set_terminated(run_id, status=status, end_time=end_time))
    client.writer.flush()
    if client.writer.pending:
        log.error("%d MLflow writes were not delivered: %s", len(client.writer.pending), client.writer.gave_up)


def end_run(client: TrackingClient, run_id: str, state: str, reason: str | None, status: str | None = None) -> None:
    """End a trial run: its Optuna state and reason as tags, the MLflow status that goes with the state."""
    tags = [RunTag(TAG_OPTUNA_STATE, state), *([RunTag(TAG_END_REASON, reason)] if reason else [])]
    status = status or {"COMPLETE": "FINISHED", "PRUNED": "KILLED"}.get(state, "FAILED")
    client.writer.write("end tags", lambda: client.log_batch(run_id, tags=tags))
    client.writer.write("end run", lambda: client.set_terminated(run_id, status=status))


def kill_trial_run(client: TrackingClient, run_id: str, reason: str) -> None:
    """End the run of a trial whose worker died: Optuna state FAIL, MLflow status KILLED."""
    end_run(client, run_id, "FAIL", reason, status="KILLED")


class TrialRun:
    """The MLflow run of one Optuna trial (the `sweep.loggers.TrialLogger` the trial logs through)."""

    def __init__(
        self, client: TrackingClient, exp_id: str, parent_id: str, study_name: str, trial_number: int, run_name: str
    ) -> None:
        self.client = client
        tags = {
            TAG_PARENT_RUN_ID: parent_id,
            TAG_ROLE: ROLE_TRIAL,
            TAG_STUDY_NAME: study_name,
            TAG_TRIAL_NUMBER: str(trial_number),
            TAG_OPTUNA_STATE: "RUNNING",
            TAG_WORKER: f"{socket.gethostname()}:{os.getpid()}",
        }
        create = functools.partial(client.create_run, exp_id, tags=tags, run_name=run_name)
        self.run_id = client.writer.read("create trial run", create).info.run_id
        self.experiment_id = exp_id
        self.latest: dict[str, Metric] = {}  # the last value logged under each name (to link to a logged model)

    def log_params(self, params: Mapping[str, Any]) -> None:
        log_params(self.client, self.run_id, params)

    def log_metrics(self, metrics: Mapping[str, float], step: int = 0, defer: bool = False) -> None:
        """Log `metrics` at `step`; `defer`: from a background thread, delivered by the trial's next write."""
        now = int(time.time() * 1000)
        entries = [Metric(key, float(value), now, step) for key, value in metrics.items() if value is not None]
        if entries:
            self.latest.update({entry.key: entry for entry in entries})
            send = self.client.writer.defer if defer else self.client.writer.write
            send("log metrics", lambda: self.client.log_batch(self.run_id, metrics=entries))

    def log_inputs(self, datasets: Sequence[DatasetInput]) -> None:
        """Record the datasets the trial reads (its training and evaluation data, name and digest) as run inputs.
        The dataset rows belong to the experiment, which every worker's first trial writes: `write_shared`."""
        if datasets:
            link = functools.partial(self.client.log_inputs, self.run_id, datasets=list(datasets))
            self.client.writer.write("log inputs", functools.partial(write_shared, link))

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        entries = [RunTag(key, str(value)) for key, value in tags.items()]
        self.client.writer.write("set tags", lambda: self.client.log_batch(self.run_id, tags=entries))

    def log_dict(self, data: Any, artifact_file: str) -> None:
        upload = functools.partial(self.client.log_dict, self.run_id, data, artifact_file)
        upload_artifact(self.client, self.run_id, artifact_file, upload)

    def log_text(self, text: str, artifact_file: str) -> None:
        log_text(self.client, self.run_id, text, artifact_file)

    def log_figure(self, figure: Any, artifact_file: str) -> None:
        upload = functools.partial(self.client.log_figure, self.run_id, figure, artifact_file)
        self.client.writer.write(artifact_file, upload)  # buffered through a tracking outage

    def end(self, state: optuna.trial.TrialState, reason: str | None = None) -> None:
        """End the run and deliver every write waiting for the server, waiting up to `tracking.outage_timeout_s`
        (past it the writes stay undelivered and `client.writer.gave_up` says why: the study stops)."""
        end_run(self.client, self.run_id, state.name, reason)
        self.client.writer.flush()

"""Load a study's trials from MLflow into pandas.

Contract (written by the study runner; the tag names live in ``sweep.names``): one parent run per study tagged
``sweep.role = study``; one child run per trial with tags ``mlflow.parentRunId``, ``sweep.role = trial``,
``sweep.trial_number`` and ``sweep.optuna_state`` (COMPLETE / PRUNED / FAIL), the flattened config as params and
the metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from sweep.errors import MissingInput
from sweep.names import (
    ARTIFACT_CONFIG,
    ATTR_VALIDATION_SPEARMAN,
    ROLE_STUDY,
    TAG_OPTUNA_STATE,
    TAG_PARENT_RUN_ID,
    TAG_RACE_ELIMINATED_AFTER,
    TAG_RACE_ROUNDS,
    TAG_ROLE,
    TAG_TRIAL_NUMBER,
)
from sweep.stats import ELIMINATED_AFTER, RACE_ROUNDS

log = logging.getLogger(__name__)

PARAM_PREFIX = "param."
BASE_COLUMNS = ["run_id", "trial_number", "state", "status"]


def _search_all(client: MlflowClient, experiment_id: str, filter_string: str, order_by: list[str]) -> list[Run]:
    """All runs matching the filter, following MLflow's pagination."""
    runs: list[Run] = []
    token = None
    while True:
        page = client.search_runs(
            [experiment_id], filter_string=filter_string, order_by=order_by, max_results=1000, page_token=token
        )
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _resolve_parent(client: MlflowClient, experiment_name: str | None, parent_run_id: str | None) -> Run:
    """The parent run given by id, or the newest study run of the experiment."""
    if parent_run_id:
        return client.get_run(parent_run_id)
    if not experiment_name:
        raise ValueError("give an experiment name or a parent run id")
    experiment = client.get_experiment_by_name(experiment_name)
    if experiment is None:
        raise MissingInput(f"no MLflow experiment named {experiment_name!r}")
    parents = _search_all(
        client, experiment.experiment_id, f"tags.`{TAG_ROLE}` = '{ROLE_STUDY}'", ["attributes.start_time DESC"]
    )
    if not parents:
        raise MissingInput(f"experiment {experiment_name!r} has no parent run tagged {TAG_ROLE} = {ROLE_STUDY}")
    if len(parents) > 1:
        log.warning(
            "experiment %r has %d study runs; using the newest, %s (pass --parent-run-id to choose)",
            experiment_name,
            len(parents),
            parents[0].info.run_id,
        )
    return parents[0]


def _numeric_or_str(column: pd.Series) -> pd.Series:
    """The column as floats when every value parses as a number ('inf' included), else unchanged."""
    try:
        return pd.to_numeric(column).astype(float)
    except (TypeError, ValueError):
        return column


def _trial_row(run: Run) -> dict[str, object]:
    """One row: identifiers, state, ``param.*`` and the final (last-step) value of each metric."""
    tags = run.data.tags
    number = tags.get(TAG_TRIAL_NUMBER)
    return {
        "run_id": run.info.run_id,
        "trial_number": int(number) if number is not None else None,
        "state": tags.get(TAG_OPTUNA_STATE),
        "status": run.info.status,
        **{PARAM_PREFIX + key: value for key, value in run.data.params.items()},
        **run.data.metrics,
        # a raced study's dropped point (`study.race`): the seeds it had when the race dropped it
        **({ELIMINATED_AFTER: float(tags[TAG_RACE_ELIMINATED_AFTER])} if TAG_RACE_ELIMINATED_AFTER in tags else {}),
        # a raced study's trial: the rounds its race spends the level over (the report compares at its round level)
        **({RACE_ROUNDS: float(tags[TAG_RACE_ROUNDS])} if TAG_RACE_ROUNDS in tags else {}),
    }


def load_trials(
    client: MlflowClient, experiment_name: str | None = None, parent_run_id: str | None = None
) -> pd.DataFrame:
    """One row per child (trial) run of a study, sorted by trial number.

    Columns: ``run_id, trial_number, state`` (Optuna), ``status`` (MLflow), ``param.<key>`` (floats where
    numeric), the final value of every metric and, in a raced study, ``eliminated_after``. ``parent_run_id`` wins
    over ``experiment_name``, whose newest study run is used otherwise.
    """
    parent = _resolve_parent(client, experiment_name, parent_run_id)
    children = _search_all(
        client,
        parent.info.experiment_id,
        f"tags.`{TAG_PARENT_RUN_ID}` = '{parent.info.run_id}'",
        ["attributes.start_time ASC"],
    )
    trials = pd.DataFrame([_trial_row(run) for run in children]) if children else pd.DataFrame(columns=BASE_COLUMNS)
    for column in trials.columns[trials.columns.str.startswith(PARAM_PREFIX)]:
        trials[column] = _numeric_or_str(trials[column])
    return trials.sort_values("trial_number", kind="stable", ignore_index=True)


def load_metric_history(client: MlflowClient, run_ids: Iterable[str], key: str) -> pd.DataFrame:
    """Every logged value of one metric: columns ``run_id, step, value``, sorted by run and step."""
    rows = [
        (run_id, metric.step, metric.value) for run_id in run_ids for metric in client.get_metric_history(run_id, key)
    ]
    history = pd.DataFrame(rows, columns=["run_id", "step", "value"])
    return history.sort_values(["run_id", "step"], kind="stable", ignore_index=True)


HISTORY_KEYS = ("train_loss", "learned_scale", ATTR_VALIDATION_SPEARMAN)  # the last for its step 0: untrained


def download_study_config(
    client: MlflowClient, out_dir: Path, experiment_name: str | None = None, parent_run_id: str | None = None
) -> list[Path]:
    """Copy the study's composed config (the parent run's ``config.yaml``) into ``out_dir``; nothing for a study
    run before the parent logged it."""
    parent = _resolve_parent(client, experiment_name, parent_run_id)
    if not any(item.path == ARTIFACT_CONFIG for item in client.list_artifacts(parent.info.run_id)):
        log.warning("parent run %s has no %s: copy the Hydra config", parent.info.run_id, ARTIFACT_CONFIG)
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    return [Path(client.download_artifacts(parent.info.run_id, ARTIFACT_CONFIG, str(out_dir)))]


def load_study(
    tracking_uri: str | None, experiment_name: str | None = None, parent_run_id: str | None = None
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """A study's trials and the metric histories the figures need (``HISTORY_KEYS``)."""
    client = MlflowClient(tracking_uri=tracking_uri)
    trials = load_trials(client, experiment_name=experiment_name, parent_run_id=parent_run_id)
    log.info("%d trials, %d COMPLETE", len(trials), (trials["state"] == "COMPLETE").sum())
    return trials, {key: load_metric_history(client, trials["run_id"], key) for key in HISTORY_KEYS}

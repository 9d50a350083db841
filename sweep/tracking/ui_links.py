"""Where users look: the MLflow UI addresses of a study's runs, and the optuna-dashboard command (how
runs read there, their names and descriptions, is the study's: `sweep.study.run_words`).

MLflow 3's UI lands on GenAI views (traces, token usage). In MLflow 3.17 what it shows follows a "workflow type"
switch in the side bar (GenAI or model training), kept in the browser and GenAI on a first visit; the experiment tag
``mlflow.experimentKind=custom_model_development`` is read only when that switch is off. The URL parameter
``workflowType=machine_learning`` selects model training for the page it opens, so every printed address carries it
(seen in headless Chromium against MLflow 3.17.2: without it the runs page opens as GenAI "Training runs").
"""

from __future__ import annotations

from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from sweep.names import (
    ARTIFACT_SPEARMAN_FIGURE,
    EXPERIMENT_KIND_MODELS,
    TAG_EXPERIMENT_KIND,
)

LOCAL_UI = "http://127.0.0.1:5000"  # where `mlflow ui` serves by default
MODEL_TRAINING = "workflowType=machine_learning"  # the UI's model-training views, whatever the browser last chose


def is_local_store(uri: str) -> bool:
    """Whether a tracking URI is a local store (opened with `mlflow ui`) rather than a tracking server."""
    return uri.startswith(("sqlite:", "file:", "/"))


def ui_base(uri: str) -> str:
    """The address of the UI for a tracking URI: `mlflow ui`'s default for a local store, else the server."""
    return LOCAL_UI if is_local_store(uri) else uri.rstrip("/")


def runs_page(uri: str, experiment_id: str) -> str:
    """The experiment's runs page (the parent run with its trials nested under it)."""
    return f"{ui_base(uri)}/#/experiments/{experiment_id}/runs?{MODEL_TRAINING}"


def run_page(uri: str, experiment_id: str, run_id: str) -> str:
    """One run's page (the study's parent run: its report figures are among its artifacts)."""
    return f"{ui_base(uri)}/#/experiments/{experiment_id}/runs/{run_id}?{MODEL_TRAINING}"


def artifact_page(uri: str, experiment_id: str, run_id: str, path: str) -> str:
    """One artifact of a run, shown by the UI (a PNG drawn, a CSV as a table): the run page's Artifacts tab opened on
    `path` (seen in headless Chromium against MLflow 3.17.2)."""
    return f"{ui_base(uri)}/#/experiments/{experiment_id}/runs/{run_id}/artifacts/{path}?{MODEL_TRAINING}"


def has_artifact(client: MlflowClient, run_id: str, path: str) -> bool:
    """Whether `run_id` logged the artifact `path` (the report figures are not drawn when the study has no scale
    axis, or when drawing them failed)."""
    folder = path.rpartition("/")[0] or None
    return any(info.path == path for info in client.list_artifacts(run_id, folder))


def mark_model_development(client: MlflowClient, experiment_id: str) -> None:
    """Tag the experiment as model development, so MLflow 3's UI opens on its runs (kept if already set)."""
    if TAG_EXPERIMENT_KIND in client.get_experiment(experiment_id).tags:
        return
    try:
        client.set_experiment_tag(experiment_id, TAG_EXPERIMENT_KIND, EXPERIMENT_KIND_MODELS)
    except MlflowException:  # workers starting together: another one set it first (unique key)
        if TAG_EXPERIMENT_KIND not in client.get_experiment(experiment_id).tags:
            raise


def open_lines(tracking_uri: str, experiment_id: str, parent_run_id: str, storage: str) -> list[str]:
    """The lines the final summary prints on how to open the study in MLflow and in optuna-dashboard."""
    local = is_local_store(tracking_uri)
    port = f" (serves on {LOCAL_UI} by default, as below; with --port P, use port P)" if local else ""
    opener = f"mlflow ui --backend-store-uri {tracking_uri}{port}" if local else tracking_uri
    parent = run_page(tracking_uri, experiment_id, parent_run_id)
    return [
        f"Open the runs: {opener}",
        f"  the study's figures (parent run, artifacts report/): {parent}",
        f"  runs page (trials nested under the study's parent run): {runs_page(tracking_uri, experiment_id)}",
        f"Optuna dashboard (pip install 'sweep[dashboard]'): optuna-dashboard {storage}",
    ]


def answer_line(client: MlflowClient, tracking_uri: str, experiment_id: str, parent_run_id: str) -> str | None:
    """The line printed under the study's answer once its report is logged: the address of the parent run's
    `ARTIFACT_SPEARMAN_FIGURE` itself, STSB Spearman vs scale with the mean over seeds, open with no click (from
    the chart view, a scatter of the trials takes 8 clicks and 2 typed searches, and has no mean). None when the
    parent run has no such figure."""
    if not has_artifact(client, parent_run_id, ARTIFACT_SPEARMAN_FIGURE):
        return None
    figure = artifact_page(tracking_uri, experiment_id, parent_run_id, ARTIFACT_SPEARMAN_FIGURE)
    return f"The answer as a figure (STSB Spearman vs scale, mean over seeds, in the MLflow UI above): {figure}"

"""A kept model in MLflow: logged to its trial's run with the ``sentence_transformers`` flavor and named by its trial,
the trial's final scores linked to it (each with the dataset it was computed on), registered under
``tracking.registered_model_name`` with the alias ``best`` on the study's best version, and, when the study ends, the
best one tagged ``sweep.study_best=true`` and its card (README.md) replaced by the one that carries the study's
verdict. The Description of a logged model (and of its registered version) is its card's title (the study, the trial
and its grid point); the best one's becomes the study's verdict.

Why the logged model is created first and logged without an active run: MLflow's ``log_model`` inside a run links to
the model every metric the run logged at the model's step, without the datasets (a run's metrics do not keep them),
and including whatever else shares that step number (the ``system/*`` samples count their own steps). Here the
trial's final scores are linked with the same timestamps and steps (MLflow keeps one copy in the run's history) and
the name and digest of their dataset, which the model page shows beside each value.
"""

from __future__ import annotations

import functools
import logging
import tempfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from mlflow.entities import LoggedModelOutput, Metric
from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
from mlflow.tracking import MlflowClient
from sentence_transformers import SentenceTransformer

from sweep.names import (
    MODEL_ALIAS_BEST,
    TAG_MODEL_ID,
    TAG_MODEL_LOGGED,
    TAG_MODEL_REMOVED,
    TAG_MODEL_URI,
    TAG_RUN_DESCRIPTION,
    TAG_STUDY_BEST,
    TAG_STUDY_NAME,
)
from sweep.tracking.mlflow_client import TrackingClient, TrialRun
from sweep.training import BEST, Keeping, Kept, TrackedData, Verdict, locked, model_name, read_meta, study_dir

log = logging.getLogger(__name__)

CARD_FOLDER = "model.sentence_transformer"  # where the flavor puts the sentence-transformers folder in the model
TAG_DESCRIPTION = TAG_RUN_DESCRIPTION  # a logged model's Description on its page is the same tag as a run's
LEGACY_ARTIFACT = "model"  # the name every kept model had in MLflow before models were named by trial


def link_metrics(run: TrialRun, model_id: str, keys: Iterable[str], data: TrackedData | None) -> None:
    """Link the last value the run logged under each of `keys` to the logged model, with the dataset it was scored
    on (`TrackedData.scored_on`); same timestamp and step, so the run's history keeps one copy."""
    entries = []
    for key in keys:
        metric = run.latest.get(key)
        split = data.scored_on(key) if data is not None else None
        if metric is not None:
            entries.append(
                Metric(
                    key,
                    metric.value,
                    metric.timestamp,
                    metric.step,
                    model_id=model_id,
                    dataset_name=split.name if split else None,
                    dataset_digest=split.digest if split else None,
                )
            )
    if entries:
        run.client.log_batch(run.run_id, metrics=entries)


def log_to_mlflow(
    tracking_uri: str,
    model: SentenceTransformer,
    run: TrialRun,
    trial_number: int,
    registered_model_name: str | None = None,
    *,
    step: int = 0,
    metrics: Iterable[str] = (),
    data: TrackedData | None = None,
) -> str:
    """Log ``model`` to the trial's run (at `tracking.uri` ``tracking_uri``) with MLflow's sentence_transformers
    flavor, named by its trial, as the run's output at training step `step`, with the run's last values of `metrics`
    linked to it (`link_metrics`); register it under `registered_model_name` (when given) and point the alias
    ``best`` at that version. Returns ``runs:/<id>/trial-NNN``, also recorded as the run's tag ``sweep.model_uri``
    (the model id as ``sweep.model_id``).

    Requirements are given, not inferred (inference reloads the model in a subprocess)."""
    import mlflow
    import mlflow.sentence_transformers

    requirements = [f"{package}=={metadata.version(package)}" for package in ("sentence-transformers", "torch")]
    mlflow.set_tracking_uri(tracking_uri)
    client, name = run.client, model_name(trial_number)
    params = client.get_run(run.run_id).data.params  # what log_model copies onto a model it creates itself
    logged = client.create_logged_model(run.experiment_id, name=name, source_run_id=run.run_id, params=params)
    info = mlflow.sentence_transformers.log_model(
        model,
        name=name,
        model_id=logged.model_id,
        pip_requirements=requirements,
        registered_model_name=registered_model_name,
    )
    client.log_outputs(run.run_id, [LoggedModelOutput(logged.model_id, step)])
    link_metrics(run, logged.model_id, metrics, data)
    title = str(model.model_card_data.model_name or name)  # the card's title: study, trial and grid point
    client.set_logged_model_tags(logged.model_id, {TAG_DESCRIPTION: title})
    if registered_model_name and info.registered_model_version is not None:  # each registered model is a new best
        version = str(info.registered_model_version)
        client.update_model_version(registered_model_name, version, description=title)
        client.set_registered_model_alias(registered_model_name, MODEL_ALIAS_BEST, version)
    uri = f"runs:/{run.run_id}/{name}"
    for key, value in ((TAG_MODEL_URI, uri), (TAG_MODEL_ID, logged.model_id), (TAG_MODEL_LOGGED, "true")):
        client.set_tag(run.run_id, key, value)  # in the same (buffered) call as the upload
    return uri


def study_version(client: MlflowClient, run_id: str, registered_model_name: str | None) -> str | None:
    """The latest version of `registered_model_name` registered from run `run_id` (None when there is none)."""
    if not registered_model_name:
        return None
    versions = client.search_model_versions(f"name='{registered_model_name}' and run_id='{run_id}'")
    return str(max(int(v.version) for v in versions)) if versions else None


def remove_logged(client: MlflowClient, run_id: str, registered_model_name: str | None, superseded_by: str) -> None:
    """Remove the model logged on run `run_id` (superseded as the study's best) from MLflow: its registered version
    deleted, its artifacts deleted the way ``mlflow gc`` deletes them (MLflow's client only marks a logged model
    deleted), the logged model marked deleted, the run's tags naming it removed and its tag ``sweep.model_removed`` set
    to ``superseded by <superseded_by>``."""
    tags = client.get_run(run_id).data.tags
    if (version := study_version(client, run_id, registered_model_name)) is not None:
        client.delete_model_version(str(registered_model_name), version)
    if model_id := tags.get(TAG_MODEL_ID):
        get_artifact_repository(client.get_logged_model(model_id).artifact_location).delete_artifacts()
        client.delete_logged_model(model_id)
    for key in (TAG_MODEL_URI, TAG_MODEL_ID, TAG_MODEL_LOGGED):
        if key in tags:
            client.delete_tag(run_id, key)
    client.set_tag(run_id, TAG_MODEL_REMOVED, f"superseded by {superseded_by}")


def mark_study_best(client: MlflowClient, run_id: str, registered_model_name: str | None) -> None:
    """Tag the study's best kept model, its logged model and its trial run, ``sweep.study_best=true``, and point the
    registered model's alias ``best`` at its version (again: a rerun may have registered others since)."""
    client.set_tag(run_id, TAG_STUDY_BEST, "true")
    model_id = client.get_run(run_id).data.tags.get(TAG_MODEL_ID)
    if model_id:
        client.set_logged_model_tags(model_id, {TAG_STUDY_BEST: "true"})
    if (version := study_version(client, run_id, registered_model_name)) is not None:
        client.set_registered_model_alias(str(registered_model_name), MODEL_ALIAS_BEST, version)


def publish_verdict(
    client: MlflowClient, run_id: str, readme: Path, section: str, registered_model_name: str | None
) -> None:
    """The study's verdict on the model logged on run `run_id` (the study's best): its card (README.md) replaced by
    `readme`, and the card's `section` (without its heading) as the Description of the logged model and of its
    registered version."""
    model_id = client.get_run(run_id).data.tags.get(TAG_MODEL_ID)
    if not model_id:
        return
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / readme.name).write_bytes(readme.read_bytes())
        client.log_model_artifacts(model_id, folder, artifact_path=CARD_FOLDER)
    description = section.partition("\n\n")[2]  # a version's first line is its preview in the versions table
    client.set_logged_model_tags(model_id, {TAG_DESCRIPTION: description})
    if (version := study_version(client, run_id, registered_model_name)) is not None:
        client.update_model_version(str(registered_model_name), version, description=description)


def log_kept(
    keeping: Keeping,
    kept: Kept,
    model: SentenceTransformer,
    run: TrialRun,
    trial_number: int,
    *,
    step: int = 0,
    metrics: Iterable[str] = (),
    data: TrackedData | None = None,
) -> None:
    """Log a model `sweep.training.kept_models.keep` kept to its trial's run (`log_to_mlflow`, registered when it is
    the best), then remove the models it supersedes (`prune_superseded`). Both go through the tracking writer, in
    writes of their own: a tracking server down at this moment delays them, it does not fail the trial, and a retried
    removal does not upload again."""
    registered = keeping.registered_model_name if kept.is_best else None
    upload = functools.partial(
        log_to_mlflow, keeping.tracking_uri, model, run, trial_number, registered, step=step, metrics=metrics, data=data
    )
    run.client.writer.write("model", upload)
    prune = functools.partial(prune_superseded, keeping, run.client, run.experiment_id)
    run.client.writer.write("remove superseded models", prune)


def prune_superseded(keeping: Keeping, client: MlflowClient, experiment_id: str) -> None:
    """In ``best`` mode, remove from MLflow the models logged on the study's trial runs other than the kept best's
    (`remove_logged`). Decided under the kept models' lock against ``best``, so a worker cannot remove the model
    another one just made the best; an upload that finishes after its model was superseded is removed by the prune
    that follows it. Nothing is removed while no model is kept on disk."""
    import mlflow

    directory = study_dir(keeping.root, keeping.study)
    if keeping.save_model != "best" or not directory.is_dir():
        return
    mlflow.set_tracking_uri(keeping.tracking_uri)  # where a proxied artifact location (mlflow-artifacts:/) resolves
    with locked(directory):
        meta = read_meta(directory / BEST)
        if meta is None:
            return
        query = f"tags.`{TAG_STUDY_NAME}` = '{keeping.study}' and tags.`{TAG_MODEL_LOGGED}` = 'true'"
        for found in client.search_runs([experiment_id], query):
            if found.info.run_id != meta["mlflow_run_id"]:
                better = model_name(meta["trial_number"])
                remove_logged(client, found.info.run_id, keeping.registered_model_name, better)
                log.info("removed the superseded model of run %s from MLflow", found.info.run_id)


def model_uri(client: MlflowClient, run_id: str) -> str:
    """The ``runs:/`` URI of the model kept on a trial run (its ``sweep.model_uri`` tag; ``runs:/<id>/model`` for
    runs from before models were named by trial)."""
    return str(client.get_run(run_id).data.tags.get(TAG_MODEL_URI, f"runs:/{run_id}/{LEGACY_ARTIFACT}"))


def publish(client: TrackingClient, verdict: Verdict, registered_model_name: str | None) -> None:
    """Publish the study's `verdict` on its best model in MLflow (`publish_verdict`) through the tracking writer."""
    write = functools.partial(
        publish_verdict, client, verdict.run_id, verdict.readme, verdict.section, registered_model_name
    )
    client.writer.write("model card", write)

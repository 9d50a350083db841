"""Models worth keeping (``trial.save_model``): the study's best model, or every trial's, on disk and in MLflow.

Layout under ``<paths.root>/models/<study name>/``::

    best -> trials/trial-007     a symbolic link to the current best trial's folder
    trials/trial-007/            a normal sentence-transformers folder, plus sweep_model.json (trial, value, run)
    .lock                        held while a worker decides and swaps

Safety across workers and restarts: a model is written to a ``.tmp-*`` folder beside ``trials/`` (same
filesystem), renamed into ``trials/`` once complete, and only then is ``best`` re-pointed by renaming a new link
over it (``os.replace``, atomic on POSIX). A worker killed at any point leaves ``best`` on the old or the new
complete folder, never a half-written one; leftover ``.tmp-*`` folders are removed by the next save. The decision
"better than the current best" compares with the ``sweep_model.json`` of ``best`` under an exclusive file lock, so
two workers finishing together cannot both win, and a restarted study continues from what is on disk.

Each kept model is also logged to its trial's MLflow run (`sweep.training.logged_models`): named by its trial
(``runs:/<run id>/trial-007``, recorded as the run's tag ``sweep.model_uri``), its final scores linked to it, and, when
it becomes the best and ``tracking.registered_model_name`` is set, registered with the alias ``best``. When the study
ends, the best one is tagged ``sweep.study_best=true`` (its logged model and its run), so the UI's model list says
which it is, and its card (README.md, `sweep.training.model_card`) gets the study's verdict, on disk and in MLflow.

In ``best`` mode a superseded best leaves MLflow too: after each upload, and when the study ends, every model logged
on the study's trial runs but the kept best's is removed (`prune_mlflow`), so a study holds one model on disk and one
in MLflow whatever the number of improvements, workers or restarts.

A trial whose model collapsed (`sweep.stats.collapse`: every evaluation pair scored alike) is never the best, whatever
its Spearman: ``best`` mode keeps nothing of it, ``all`` mode keeps it under ``trials/`` (its ``sweep_model.json``
says why) without pointing ``best`` at it.
"""

from __future__ import annotations

import fcntl
import functools
import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlflow
from mlflow.tracking import MlflowClient
from sentence_transformers import SentenceTransformer

from sweep.config.schema import StudyConfig, TrackingConfig
from sweep.names import (
    TAG_BEST_MODEL_PATH,
    TAG_BEST_MODEL_RUN_ID,
    TAG_BEST_MODEL_TRIAL,
    TAG_BEST_MODEL_URI,
    TAG_MODEL_LOGGED,
    TAG_MODEL_URI,
    TAG_STUDY_NAME,
)
from sweep.tracking.mlflow_client import TrackingClient, TrialRun
from sweep.training import model_card
from sweep.training.logged_models import log_to_mlflow, model_name, publish_verdict, remove_logged
from sweep.training.resources import TrackedData

log = logging.getLogger(__name__)

META_FILE = "sweep_model.json"
BEST = "best"
TRIALS = "trials"
TMP_PREFIX = ".tmp-"
LEGACY_ARTIFACT = "model"  # the name every kept model had in MLflow before models were named by trial


def study_dir(root: str | Path, study_name: str) -> Path:
    """Where a study's models live: ``<paths.root>/models/<study name>``."""
    return Path(root).expanduser().resolve() / "models" / study_name


def best_path(root: str | Path, study_name: str) -> Path:
    """The study's best-model folder (a link to a trial's folder; it may not exist yet)."""
    return study_dir(root, study_name) / BEST


def read_meta(folder: Path) -> dict[str, Any] | None:
    """The ``sweep_model.json`` of a kept model, or None when there is none (no model kept yet)."""
    try:
        return json.loads((folder / META_FILE).read_text())
    except (OSError, ValueError):
        return None


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _fsync_tree(folder: Path) -> None:
    """Flush every file of ``folder`` to disk before the rename that publishes it."""
    for path in [*folder.rglob("*"), folder]:
        if path.is_file() or path == folder:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _write_complete(model: SentenceTransformer, meta: dict[str, Any], directory: Path, final: Path) -> None:
    """Save into a temporary folder beside ``final``, then rename it to ``final`` (atomic, same filesystem)."""
    tmp = directory / f"{TMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    model.save(str(tmp))
    (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    _fsync_tree(tmp)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():  # only after a crash between this rename and the link swap of the same trial
        shutil.rmtree(final)
    os.rename(tmp, final)


def _point_best(directory: Path, target: Path) -> None:
    """Re-point ``best`` at ``target`` atomically: a new link under a temporary name, renamed over the old one."""
    link = directory / f"{TMP_PREFIX}link-{uuid.uuid4().hex[:8]}"
    os.symlink(os.path.relpath(target, directory), link)
    os.replace(link, directory / BEST)


def _clean_leftovers(directory: Path, keep: Path | None, mode: str) -> None:
    """Remove temporary folders of killed saves and, in ``best`` mode, trial folders ``best`` no longer uses.

    Runs under the lock, and every writer holds the lock while writing, so nothing here is being written."""
    for path in directory.glob(f"{TMP_PREFIX}*"):
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    if mode == "best":
        for path in (directory / TRIALS).glob("trial-*"):
            if keep is None or path.resolve() != keep.resolve():
                shutil.rmtree(path)


@dataclass(frozen=True)
class Keeping:
    """What the kept models of a study depend on: `paths.root`, `study.name`, `study.direction`,
    `trial.save_model`, `tracking.registered_model_name` and `tracking.uri`."""

    root: str
    study: str
    direction: str
    save_model: str
    registered_model_name: str | None
    tracking_uri: str

    @classmethod
    def of(cls, root: str, study: StudyConfig, save_model: str, tracking: TrackingConfig) -> Keeping:
        """The values of a study's (or a trial's) config: `paths.root`, the `study` section, `trial.save_model` and
        the `tracking` section."""
        return cls(root, study.name, study.direction, save_model, tracking.registered_model_name, tracking.uri)


def _better(value: float, current: dict[str, Any] | None, direction: str) -> bool:
    if current is None:
        return True
    return value > current["value"] if direction == "maximize" else value < current["value"]


def keep(
    keeping: Keeping,
    model: SentenceTransformer,
    value: float,
    metrics: dict[str, float],
    collapsed: str | None = None,
    *,
    trial_number: int,
    run: TrialRun,
    step: int = 0,
    data: TrackedData | None = None,
) -> Path | None:
    """Keep a completed trial's model as ``trial.save_model`` says; return its folder (None when not kept).
    ``collapsed``: why the model collapsed (never the best), or None; `step` (the last training step) and `data`
    (the trial's datasets): what the logged model's linked `metrics` are (`logged_models.log_to_mlflow`)."""
    mode = keeping.save_model
    if mode == "none":
        return None
    directory = study_dir(keeping.root, keeping.study)
    meta = {"trial_number": trial_number, "value": value, "mlflow_run_id": run.run_id, "metrics": metrics}
    if collapsed is not None:
        meta["collapsed"] = collapsed
    final = directory / TRIALS / model_name(trial_number)
    with _locked(directory):
        current_target = (directory / BEST).resolve() if (directory / BEST).exists() else None
        is_best = collapsed is None and _better(value, read_meta(directory / BEST), keeping.direction)
        if mode == "best" and not is_best:
            _clean_leftovers(directory, current_target, mode)
            return None
        _write_complete(model, meta, directory, final)
        if is_best:
            _point_best(directory, final)
        _clean_leftovers(directory, final if is_best else current_target, mode)
    log.info("trial %d: model kept in %s%s", trial_number, final, " (the study's best)" if is_best else "")
    registered = keeping.registered_model_name if is_best else None
    # through the tracking writer: a tracking server down at this moment delays the upload, it does not fail the trial;
    # the superseded models are removed after it, in a write of their own (a retried removal does not upload again)
    upload = functools.partial(
        log_to_mlflow,
        keeping.tracking_uri,
        model,
        run,
        trial_number,
        registered,
        step=step,
        metrics=list(metrics),
        data=data,
    )
    run.client.writer.write("model", upload)
    prune = functools.partial(prune_mlflow, keeping, run.client, run.experiment_id)
    run.client.writer.write("remove superseded models", prune)
    return final


def prune_mlflow(keeping: Keeping, client: MlflowClient, experiment_id: str) -> None:
    """In ``best`` mode, remove from MLflow the models logged on the study's trial runs other than the kept best's
    (`logged_models.remove_logged`). Decided under the folder's lock against ``best``, so a worker cannot remove the
    model another one just made the best; an upload that finishes after its model was superseded is removed by the
    prune that follows it. Nothing is removed while no model is kept on disk."""
    directory = study_dir(keeping.root, keeping.study)
    if keeping.save_model != "best" or not directory.is_dir():
        return
    mlflow.set_tracking_uri(keeping.tracking_uri)  # where a proxied artifact location (mlflow-artifacts:/) resolves
    with _locked(directory):
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


def parent_tags(keeping: Keeping) -> dict[str, str]:
    """Tags linking the study's parent run to its best kept model (empty when none is kept)."""
    best = best_path(keeping.root, keeping.study)
    meta = read_meta(best) if keeping.save_model != "none" else None
    if meta is None:
        return {}
    return {
        TAG_BEST_MODEL_PATH: str(best),
        TAG_BEST_MODEL_RUN_ID: meta["mlflow_run_id"],
        TAG_BEST_MODEL_URI: f"runs:/{meta['mlflow_run_id']}/{model_name(meta['trial_number'])}",
        TAG_BEST_MODEL_TRIAL: str(meta["trial_number"]),
    }


def record_verdict(keeping: Keeping, client: TrackingClient, lines: list[str]) -> Path | None:
    """At the end of a study, put its verdict `lines` into the card of its best kept model (`model_card`), on disk
    and in MLflow, and into its Description there (`logged_models.publish_verdict`); return that README (None when no
    model is kept)."""
    directory = study_dir(keeping.root, keeping.study)
    if keeping.save_model == "none" or not directory.is_dir():
        return None
    with _locked(directory):
        meta = read_meta(directory / BEST)
        if meta is None:
            return None
        section = model_card.study_section(keeping.study, meta["trial_number"], meta["value"], lines)
        readme = model_card.write_study_section((directory / BEST).resolve(), section)
    registered = keeping.registered_model_name
    publish = functools.partial(publish_verdict, client, meta["mlflow_run_id"], readme, section, registered)
    client.writer.write("model card", publish)
    return readme

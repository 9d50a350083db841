"""Models worth keeping (``trial.save_model``): the study's best model, or every trial's, on disk (the study logs them
to MLflow too: `sweep.tracking.logged_models`).

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

The study logs each kept model to its trial's MLflow run (`sweep.tracking.logged_models`): named by its trial
(``runs:/<run id>/trial-007``, recorded as the run's tag ``sweep.model_uri``), its final scores linked to it, and, when
it becomes the best and ``tracking.registered_model_name`` is set, registered with the alias ``best``. When the study
ends, the best one is tagged ``sweep.study_best=true`` (its logged model and its run), so the UI's model list says
which it is, and its card (README.md, `sweep.training.model_card`) gets the study's verdict, on disk and in MLflow.

In ``best`` mode a superseded best leaves MLflow too: after each upload, and when the study ends, every model logged
on the study's trial runs but the kept best's is removed (`sweep.tracking.logged_models.prune_superseded`, under this
folder's lock, `locked`), so a study holds one model on disk and one in MLflow whatever the number of improvements,
workers or restarts.

A trial whose model collapsed (`sweep.stats.collapse`: every evaluation pair scored alike) is never the best, whatever
its Spearman: ``best`` mode keeps nothing of it, ``all`` mode keeps it under ``trials/`` (its ``sweep_model.json``
says why) without pointing ``best`` at it.
"""

from __future__ import annotations

import fcntl
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

from sentence_transformers import SentenceTransformer

from sweep.config import StudyConfig, TrackingConfig
from sweep.names import TAG_BEST_MODEL_PATH, TAG_BEST_MODEL_RUN_ID, TAG_BEST_MODEL_TRIAL, TAG_BEST_MODEL_URI
from sweep.training import model_card

log = logging.getLogger(__name__)

META_FILE = "sweep_model.json"
BEST = "best"
TRIALS = "trials"
TMP_PREFIX = ".tmp-"


def model_name(trial_number: int) -> str:
    """A kept model's name: its folder under ``trials/`` and its logged model in MLflow (``trial-007``)."""
    return f"trial-{trial_number:03d}"


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
def locked(directory: Path) -> Iterator[None]:
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


@dataclass(frozen=True)
class Kept:
    """A model `keep` kept: its folder under ``trials/`` and whether ``best`` now points at it."""

    path: Path
    is_best: bool


def keep(
    keeping: Keeping,
    model: SentenceTransformer,
    value: float,
    metrics: dict[str, float],
    collapsed: str | None = None,
    *,
    trial_number: int,
    run_id: str,
) -> Kept | None:
    """Keep a completed trial's model on disk as ``trial.save_model`` says (None when not kept). ``collapsed``: why
    the model collapsed (never the best), or None; `run_id`: the trial's run, which its ``sweep_model.json`` names
    (the study logs the kept model there: `sweep.tracking.logged_models`)."""
    mode = keeping.save_model
    if mode == "none":
        return None
    directory = study_dir(keeping.root, keeping.study)
    meta = {"trial_number": trial_number, "value": value, "mlflow_run_id": run_id, "metrics": metrics}
    if collapsed is not None:
        meta["collapsed"] = collapsed
    final = directory / TRIALS / model_name(trial_number)
    with locked(directory):
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
    return Kept(final, is_best)


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


@dataclass(frozen=True)
class Verdict:
    """The study's verdict written into its best kept model's card: the card (README.md), its new section and the
    run the model was logged on."""

    readme: Path
    section: str
    run_id: str


def record_verdict(keeping: Keeping, lines: list[str]) -> Verdict | None:
    """At the end of a study, put its verdict `lines` into the card of its best kept model (`model_card`) on disk;
    None when no model is kept. The study publishes it in MLflow (`sweep.tracking.logged_models.publish_verdict`)."""
    directory = study_dir(keeping.root, keeping.study)
    if keeping.save_model == "none" or not directory.is_dir():
        return None
    with locked(directory):
        meta = read_meta(directory / BEST)
        if meta is None:
            return None
        section = model_card.study_section(keeping.study, meta["trial_number"], meta["value"], lines)
        readme = model_card.write_study_section((directory / BEST).resolve(), section)
    return Verdict(readme, section, meta["mlflow_run_id"])

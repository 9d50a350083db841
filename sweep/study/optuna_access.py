"""The one place sweep reaches past Optuna's public API, with what it relies on there (tested with optuna 4.x and
5.0; pyproject.toml caps optuna below 5.1, and tests/study/test_library_internals.py fails when an upgrade moves one).

Optuna's public API gives no way to do these; each is used by the module named:

- ``Study._storage``: the storage of a study (``packing``: heartbeats for trials asked outside ``study.optimize``;
  ``grid_queue``: a live trial's stored record).
- ``Trial._trial_id``: the storage id of a live ``optuna.Trial`` (same uses).
- ``optuna.storages._rdb.models`` and ``optuna.storages._rdb.storage._create_scoped_session``: the RDB storage's
  tables and sessions (``storage_retry``: trials RUNNING without any heartbeat).
- ``Study.ask`` replaced by a wrapper (``run_loop``: every ask holds a stop signal until the objective checks it).

When an Optuna upgrade breaks one of these, this module is what to change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optuna
from optuna.storages._rdb import models as rdb_models
from optuna.storages._rdb.storage import _create_scoped_session as rdb_session
from optuna.trial import FrozenTrial

__all__ = ["rdb_models", "rdb_session", "record_heartbeat", "storage_of", "stored_trial", "wrap_ask"]


def storage_of(study: optuna.Study) -> optuna.storages.BaseStorage:
    """The storage `study` reads and writes."""
    return study._storage


def stored_trial(study: optuna.Study, trial: optuna.Trial | FrozenTrial) -> FrozenTrial:
    """`trial` as the storage has it now (for a live trial: with the attributes set since it was asked)."""
    return study._storage.get_trial(trial._trial_id)


def record_heartbeat(storage: optuna.storages.BaseStorage, trial: optuna.Trial) -> None:
    """One heartbeat for a live trial (Optuna beats only for the trial `study.optimize` runs)."""
    storage.record_heartbeat(trial._trial_id)  # type: ignore[attr-defined]


def wrap_ask(study: optuna.Study, wrapper: Callable[[Callable[..., Any]], Callable[..., optuna.Trial]]) -> None:
    """Replace `study.ask` by `wrapper(study.ask)`: Optuna's optimize and the packer both ask through it."""
    study.ask = wrapper(study.ask)  # type: ignore[method-assign]

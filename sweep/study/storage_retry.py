"""Optuna's RDB storage that survives its database server restarting (PostgreSQL restarted, a network blip): every
storage call that loses its connection is retried, on a fresh connection, until `study.outage_timeout_s`.

SQLAlchemy's ``pool_pre_ping`` (set for server databases in `study_setup.open_storage`) replaces connections that
died while idle in the pool; a call caught mid-way by the restart still fails once, and an outage longer than the
restart fails every call. Optuna does not retry: a failed heartbeat ends the heartbeat thread (the trial then looks
dead and is trained again by another worker) and a failed ``tell`` leaves the trial RUNNING. So the calls are
retried here, in every thread (the heartbeat thread included). A retried write is safe: Optuna's writes are
upserts or checked state changes; a state change whose first try was committed but not acknowledged is seen as
done (below).

A trial RUNNING without any heartbeat (its worker died between claiming the queued trial and its first heartbeat,
or the claim was committed but not acknowledged, which reads as "another worker took it") is never stale to
Optuna: its point would be lost and a grid's workers would wait for it forever. Here such a trial is stale once
this process has seen it without a heartbeat for the grace period (measured on this process's clock: the claim's
``datetime_start`` comes from the claiming machine's clock and time zone).

Relies on RDBStorage's private ``_get_stale_trial_ids(study_id)``, ``scoped_session``, its tables (`optuna_access`)
and the method names of `RETRIED` (tested with optuna 4.x and 5.0: tests/study/test_library_internals.py).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

import optuna
from optuna.trial import TrialState
from sqlalchemy import exc as sqlalchemy_exc

from sweep.config import is_sqlite_busy
from sweep.signals import deferred
from sweep.study.optuna_access import rdb_models, rdb_session

log = logging.getLogger(__name__)

RETRY_EVERY_S = (0.5, 10.0)  # the wait between tries grows from the first to the second value
# The RDBStorage methods that talk to the database.
RETRIED = (
    "create_new_study",
    "set_study_user_attr",
    "set_study_system_attr",
    "get_study_id_from_name",
    "get_study_name_from_id",
    "get_study_directions",
    "get_study_user_attrs",
    "get_study_system_attrs",
    "get_trial_user_attrs",
    "get_trial_system_attrs",
    "get_all_studies",
    "create_new_trial",
    "set_trial_param",
    "get_trial_param",
    "set_trial_state_values",
    "set_trial_intermediate_value",
    "set_trial_user_attr",
    "set_trial_system_attr",
    "get_trial_id_from_study_id_trial_number",
    "get_trial",
    "get_all_trials",
    "get_best_trial",
    "record_heartbeat",
)


def is_connection_error(error: BaseException) -> bool:
    """Whether `error` (or the SQLAlchemy error Optuna wrapped in StorageInternalError) is a lost or refused
    connection, not a wrong query."""
    cause = error.__cause__ if isinstance(error, optuna.exceptions.StorageInternalError) else error
    if isinstance(cause, sqlalchemy_exc.DBAPIError) and cause.connection_invalidated:
        return True
    return isinstance(cause, (sqlalchemy_exc.OperationalError, sqlalchemy_exc.InterfaceError))


class RetryingRDBStorage(optuna.storages.RDBStorage):
    """RDBStorage whose database calls are retried while the connection is lost, up to `outage_timeout_s`."""

    def __init__(self, *args: Any, outage_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outage_timeout_s = outage_timeout_s
        self._beatless_since: dict[int, float] = {}  # trial id -> when this process first saw it without one

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        """Optuna's stale trials (heartbeat older than the grace period) and the trials RUNNING without any
        heartbeat that this process has seen so for longer than the grace period."""
        call = functools.partial(optuna.storages.RDBStorage._get_stale_trial_ids, self, study_id)
        stale = self._retry("_get_stale_trial_ids", call, (study_id,))
        beatless = self._retry("_running_without_heartbeat", lambda: self._running_without_heartbeat(study_id), ())
        now, grace = time.monotonic(), self.grace_period or 2 * (self.heartbeat_interval or 0)
        self._beatless_since = {trial_id: self._beatless_since.get(trial_id, now) for trial_id in beatless}
        return stale + [trial_id for trial_id, since in self._beatless_since.items() if now - since > grace]

    def _running_without_heartbeat(self, study_id: int) -> list[int]:
        # Optuna has no public query for these; its own stale query skips them (`len(trial.heartbeats) == 0`).
        with rdb_session(self.scoped_session) as session:
            rows = (
                session.query(rdb_models.TrialModel.trial_id)
                .filter(rdb_models.TrialModel.study_id == study_id)
                .filter(rdb_models.TrialModel.state == TrialState.RUNNING)
                .filter(~rdb_models.TrialModel.heartbeats.any())
                .all()
            )
        return [trial_id for (trial_id,) in rows]

    def _retry(self, name: str, call: Callable[[], Any], args: tuple[Any, ...]) -> Any:
        started, tries = time.monotonic(), 0
        while True:
            try:
                with deferred():
                    result = call()
            except optuna.exceptions.UpdateFinishedTrialError:
                if tries and name == "set_trial_state_values" and self._already_set(*args):
                    return True  # the try that lost its connection had committed
                raise
            except (optuna.exceptions.StorageInternalError, sqlalchemy_exc.SQLAlchemyError) as error:
                waited = time.monotonic() - started
                if not is_connection_error(error) or waited > self.outage_timeout_s:
                    raise
                if not tries:
                    why = "database locked by another process" if is_sqlite_busy(error) else "connection lost"
                    log.warning("storage %s (%s); retrying up to %g s", why, name, self.outage_timeout_s)
                tries += 1
                time.sleep(min(RETRY_EVERY_S[1], RETRY_EVERY_S[0] * 2 ** min(tries, 10)))
                continue
            if tries:
                log.warning("storage answers again (%s after %d tries)", name, tries)
            return result

    def _already_set(self, trial_id: int, state: TrialState, values: Any = None) -> bool:
        return optuna.storages.RDBStorage.get_trial(self, trial_id).state == state


def _retrying(name: str) -> Callable[..., Any]:
    method = getattr(optuna.storages.RDBStorage, name)

    @functools.wraps(method)
    def call(self: RetryingRDBStorage, *args: Any, **kwargs: Any) -> Any:
        return self._retry(name, lambda: method(self, *args, **kwargs), args)

    return call


for _name in RETRIED:
    setattr(RetryingRDBStorage, _name, _retrying(_name))

"""The grid queue: every grid point queued once as a WAITING Optuna trial, and queued again after a failure or an
interruption, never twice.

Grids run through Optuna's trial queue so that every point is trained exactly once, whatever the number of
worker processes or machines sharing the storage: the process that creates the study (creation is atomic,
the study name is unique) enqueues every grid point; workers pop WAITING trials (an atomic state change in
the RDB storage). Optuna's GridSampler cannot give that guarantee: concurrent workers may draw the same point.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, TrialState

from sweep.config import search_space
from sweep.names import (
    ATTR_ATTEMPT,
    ATTR_CONFIG_ERROR,
    ATTR_DISCARDED,
    ATTR_FAIL_REASON,
    ATTR_GRID_POINT,
    ATTR_NOT_RETRIED,
    PARAM_SEED,
)
from sweep.study.optuna_access import stored_trial

HOLDING_STATES = (TrialState.WAITING, TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED)


def is_holding(trial: FrozenTrial) -> bool:
    """Whether `trial` holds its point: queued, being trained, or done. A FAIL releases it, and so does a discarded
    second copy (recorded as PRUNED without training)."""
    return trial.state in HOLDING_STATES and not trial.user_attrs.get(ATTR_DISCARDED)


def holding(study: optuna.Study) -> list[FrozenTrial]:
    """The trials that hold their point (`is_holding`)."""
    return [t for t in study.get_trials(deepcopy=False, states=HOLDING_STATES) if is_holding(t)]


def enqueue_point(study: optuna.Study, point: dict[str, Any]) -> None:
    """Queue one grid point as attempt 1."""
    study.enqueue_trial(point, user_attrs={ATTR_GRID_POINT: True, ATTR_ATTEMPT: 1})


def queue_order(
    space: search_space.Space, seed: int | None, seeds: Sequence[Any] | None = None
) -> list[dict[str, Any]]:
    """The grid points in the order `enqueue_grid` queues them: a seeded shuffle, so that a pruner compares trials
    from across the grid and a partial study covers it evenly instead of only its first axis values. `seeds`: only
    the points of these `trial.seed` values (a race's first round, `sweep.study.race`), shuffled without their seed
    and each with its seeds back to back, so that a race over steps (`sweep.study.race_steps`) soon has points with
    every seed to estimate the seed-to-seed noise from. The benchmark's replays queue in the same order."""
    grid = search_space.grid_points(space if seeds is None else {k: v for k, v in space.items() if k != PARAM_SEED})
    random.Random(seed).shuffle(grid)
    return grid if seeds is None else [{**point, PARAM_SEED: s} for point in grid for s in seeds]


def enqueue_grid(
    study: optuna.Study, space: search_space.Space, seed: int | None, seeds: Sequence[Any] | None = None
) -> None:
    """Queue every grid point once (of `seeds` only, when given), as attempt 1, in `queue_order`."""
    for point in queue_order(space, seed, seeds):
        enqueue_point(study, point)


def grid_point(trial: FrozenTrial) -> dict[str, Any]:
    """A trial's grid point: its params, or for a queued (WAITING) trial the params it was enqueued with."""
    return trial.params or trial.system_attrs.get("fixed_params", {})


def queued_point(study: optuna.Study, trial: optuna.Trial | FrozenTrial) -> dict[str, Any]:
    """The grid point of a live trial, as the storage has it (also a trial stopped before its suggest)."""
    return grid_point(stored_trial(study, trial))


def categorical_params(study: optuna.Study) -> frozenset[str]:
    """The parameters the study's trials asked as categorical choices: in a study begun before grids were numeric
    (`search_space.grid_distribution`), its grid keys, which must stay categorical (Optuna refuses another kind of
    distribution for a parameter of the same study)."""
    return frozenset(
        name
        for trial in study.get_trials(deepcopy=False)
        for name, distribution in trial.distributions.items()
        if isinstance(distribution, CategoricalDistribution)
    )


def requeue(
    study: optuna.Study, trial: optuna.Trial | FrozenTrial, max_retries: int, next_attempt: bool = True
) -> None:
    """Queue a failed or interrupted trial's grid point again: a failure as the next attempt (at most `max_retries`
    times), an interruption as the same attempt. Idempotent: a point already queued, running in another trial or
    done is not queued again (a process killed between this and Optuna's FAIL leaves its trial RUNNING, and the
    heartbeat path then calls this a second time)."""
    attempt = int(trial.user_attrs.get(ATTR_ATTEMPT, 1))
    point = queued_point(study, trial)
    if not point or (next_attempt and attempt > max_retries):
        return
    if any(t.number != trial.number and grid_point(t) == point for t in holding(study)):
        return
    study.enqueue_trial(point, user_attrs={ATTR_GRID_POINT: True, ATTR_ATTEMPT: attempt + next_attempt})


def holder(study: optuna.Study, trial: optuna.Trial) -> int | None:
    """The number of an earlier trial that holds `trial`'s grid point (queued, running or done), if any: then
    `trial` is a second copy of its point and must not train. Only the lowest-numbered holder trains, so two
    processes that queued the same point at once (two reruns starting together) still train it once."""
    point = queued_point(study, trial)
    return min((t.number for t in holding(study) if t.number < trial.number and grid_point(t) == point), default=None)


def requeue_exhausted(study: optuna.Study) -> list[dict[str, Any]]:
    """Queue again, as attempt 1, every grid point whose failed attempts used up `study.max_retries` in an earlier
    run and that nothing holds now: rerunning the command is the user's decision to try again (the retry limit
    bounds one run, so that a failure that recurs cannot loop). That includes a point that failed on an invalid
    config found inside its trial (a data file with an empty cell): the rerun's checks passed, so the user fixed it.
    Divergences stay failed: the same config diverges again. Returns the points queued."""
    held = [grid_point(t) for t in holding(study)]
    queued: list[dict[str, Any]] = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        point = grid_point(trial)
        if not point or (trial.user_attrs.get(ATTR_NOT_RETRIED) and not trial.user_attrs.get(ATTR_CONFIG_ERROR)):
            continue
        if not trial.user_attrs.get(ATTR_GRID_POINT) or point in held or point in queued:
            continue
        enqueue_point(study, point)
        queued.append(point)
    return queued


def unresolved_points(study: optuna.Study) -> list[tuple[dict[str, Any], str]]:
    """(point, why) for every grid point that failed and that nothing holds now (no result, not queued): a diverged
    point, or one whose retries this run used up. The end of a run names them, since the answer leaves them out."""
    held = [grid_point(t) for t in holding(study)]
    found: dict[str, tuple[dict[str, Any], str]] = {}
    for trial in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        point = grid_point(trial)
        if point and trial.user_attrs.get(ATTR_GRID_POINT) and point not in held:
            found[repr(sorted(point.items()))] = (point, str(trial.user_attrs.get(ATTR_FAIL_REASON, "unknown")))
    return list(found.values())

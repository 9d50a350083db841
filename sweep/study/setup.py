"""Setting a study up before it runs: validation, the sampler and pruner, the Optuna storage (under the SQLite init
lock), create-or-load and the declared search space (its grid queue: `sweep.study.grid_queue`)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import optuna
from omegaconf import DictConfig, OmegaConf
from optuna.trial import FrozenTrial, TrialState

from sweep.config import search_space
from sweep.config.checks import ConfigError, require_auto_or_int, require_choice, validate_study, with_values
from sweep.config.schema import check_known_keys
from sweep.names import ATTR_READY, ATTR_SEARCH_SPACE
from sweep.study.preflight import validate_space
from sweep.study.storage_retry import RetryingRDBStorage
from sweep.tracking.sqlite_lock import sqlite_init_lock

SAMPLERS = ("auto", "grid", "tpe", "random")
PRUNERS = ("none", "median", "successive_halving", "hyperband")


class QueuedGridSampler(optuna.samplers.GridSampler):
    """GridSampler for a grid run through the trial queue. Every point is enqueued once, so GridSampler's own
    stopping rule is not used: it assumes each trial carries a grid_id (enqueued trials do not) and would
    hand a point that another worker is still running to an idle worker."""

    def after_trial(
        self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        return None


def make_sampler(sampler: DictConfig, space: search_space.Space) -> optuna.samplers.BaseSampler:
    name = sampler.name
    require_choice("study.sampler.name", name, SAMPLERS)
    if name == "auto":
        name = "grid" if space and search_space.is_grid(space) else "tpe"
    if name == "grid":
        if not search_space.is_grid(space) or not space:
            raise ConfigError(
                "study.sampler.name", "grid", "needs every study.search_space entry to be a list of values"
            )
        return QueuedGridSampler(space, seed=sampler.seed)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=sampler.seed)
    return optuna.samplers.RandomSampler(seed=sampler.seed)


def make_pruner(pruner: DictConfig, eval_steps: int) -> optuna.pruners.BasePruner:
    """Optuna's pruner by name. Resources are training steps (trials report at every `eval_steps`)."""
    name = pruner.name
    require_choice("study.pruner.name", name, PRUNERS)
    min_resource = pruner.min_resource
    require_auto_or_int("study.pruner.min_resource", min_resource, note="training steps")
    if name == "none":
        return optuna.pruners.NopPruner()
    if name == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=pruner.n_startup_trials, n_warmup_steps=pruner.n_warmup_steps
        )
    if name == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=min_resource, reduction_factor=pruner.reduction_factor
        )
    # HyperbandPruner has no "auto" minimum: the first report (one evaluation) is the smallest budget.
    return optuna.pruners.HyperbandPruner(
        min_resource=eval_steps if min_resource == "auto" else min_resource, reduction_factor=pruner.reduction_factor
    )


def absolute_paths(cfg: DictConfig) -> DictConfig:
    """A copy of `cfg` with `paths.root` anchored at the current directory (created), so that every derived path and
    URI is absolute."""
    root = Path(cfg.paths.root).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    return with_values(cfg, {"paths.root": str(root)})


def validate(cfg: DictConfig, space: search_space.Space) -> list[DictConfig]:
    """Check the study keys, sampler, pruner, every grid point (or distribution bound) and the data files, before
    training. Returns the distinct model configs of those points (for the availability check before training)."""
    check_known_keys(cfg)
    validate_study(cfg.study)
    make_sampler(cfg.study.sampler, space)
    make_pruner(cfg.study.pruner, cfg.trial.eval_steps)
    return validate_space(cfg, space)


def declared_space(cfg: DictConfig) -> dict[str, Any]:
    """`study.search_space` with `study.seeds` (replicates) added as a `trial.seed` axis."""
    declared = OmegaConf.to_container(cfg.study.search_space, resolve=True)
    if cfg.study.seeds:
        if "seed" in declared.get("trial", {}):
            raise ConfigError(
                "study.seeds", list(cfg.study.seeds), "conflicts with study.search_space.trial.seed: give one of them"
            )
        declared.setdefault("trial", {})["seed"] = list(cfg.study.seeds)
    return declared


StaleTrialCallback = Callable[[optuna.Study, FrozenTrial], None]


def open_storage(cfg: DictConfig, on_stale: StaleTrialCallback) -> optuna.storages.RDBStorage:
    """The RDB storage with heartbeats (a killed worker's trial is failed and re-queued by another process), whose
    calls are retried while its database restarts (`study.outage_timeout_s`)."""
    url = cfg.study.storage
    interval = cfg.study.heartbeat_interval
    engine_kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {"pool_pre_ping": True}
    try:
        with sqlite_init_lock(url), warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            storage = RetryingRDBStorage(
                url,
                engine_kwargs=engine_kwargs,
                heartbeat_interval=interval,
                grace_period=3 * interval,
                heartbeat_stale_trial_callback=on_stale,
                outage_timeout_s=cfg.study.outage_timeout_s,
            )
            return storage
    except Exception as error:  # noqa: BLE001 - any driver error: name the key and stop before training
        raise ConfigError("study.storage", url, f"cannot open the storage ({type(error).__name__}: {error})") from None


def create_or_load(
    cfg: DictConfig, storage: optuna.storages.RDBStorage, space: search_space.Space
) -> tuple[optuna.Study, bool]:
    """The study `study.name` in `storage` and whether this process created it."""
    kwargs = dict(
        study_name=cfg.study.name,
        storage=storage,
        sampler=make_sampler(cfg.study.sampler, space),
        pruner=make_pruner(cfg.study.pruner, cfg.trial.eval_steps),
    )
    try:
        return optuna.create_study(direction=cfg.study.direction, **kwargs), True
    except optuna.exceptions.DuplicatedStudyError:
        return optuna.load_study(**kwargs), False


def wait_until_ready(study: optuna.Study, timeout: float = 300.0) -> None:
    """Wait until the process that created the study has queued its grid and opened its parent run."""
    deadline = time.monotonic() + timeout
    while ATTR_READY not in study.user_attrs:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"study {study.study_name} was created by another process that never finished setting it up"
            )
        time.sleep(1.0)


def check_declared_space(study: optuna.Study, declared: dict[str, Any], storage: str) -> None:
    """A study keeps its search space: refuse a different one under the same name."""
    recorded = study.user_attrs.get(ATTR_SEARCH_SPACE)
    if recorded != declared:
        raise ConfigError(
            "study.search_space",
            declared,
            f"study {study.study_name!r} in {storage} was created with {recorded}; "
            "use a new name=... to sweep a different space",
        )


def fail_stale_trials(study: optuna.Study) -> None:
    """Fail (and, through the storage's callback, re-queue) trials whose worker stopped sending heartbeats."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)

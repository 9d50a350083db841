"""The Optuna study: storage, sampler, pruner, the grid queue, workers, and the objective that runs trials.

Grids run through Optuna's trial queue so that every point is trained exactly once, whatever the number of
worker processes or machines sharing the storage: the process that creates the study (creation is atomic,
the study name is unique) enqueues every grid point; workers pop WAITING trials (an atomic state change in
the RDB storage). A trial that fails, or whose worker dies (its heartbeat stops), is re-queued once by the
process that marks it failed. Optuna's GridSampler cannot give that guarantee: concurrent workers may draw
the same point.
"""

from __future__ import annotations

import fcntl
import functools
import json
import logging
import math
import os
import random
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
import pandas as pd
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig, OmegaConf
from optuna.trial import FrozenTrial, TrialState
from tqdm.auto import tqdm

from sweep import data as data_module
from sweep import extra_eval, model_store, search_space, tracking, ui_links
from sweep.config import ConfigError, check_auto_or_positive_int, flatten, resolve_trial_config, validate_trial_config
from sweep.data import resolve_source
from sweep.model import check_available
from sweep.trial import DivergenceError, StudyResources, train_and_evaluate

log = logging.getLogger(__name__)

SAMPLERS = ("auto", "grid", "tpe", "random")
PRUNERS = ("none", "median", "successive_halving", "hyperband")
DEFAULT_N_TRIALS = 20
DONE_STATES = (TrialState.COMPLETE, TrialState.PRUNED)
READY_ATTR = "sweep.ready"  # set by the creating process once the grid is queued and the parent run exists
GRID_POINT_ATTR = "sweep.grid_point"
ATTEMPT_ATTR = "sweep.attempt"


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
    if name not in SAMPLERS:
        raise ConfigError("study.sampler.name", name, f"must be one of {', '.join(SAMPLERS)}")
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
    if name not in PRUNERS:
        raise ConfigError("study.pruner.name", name, f"must be one of {', '.join(PRUNERS)}")
    min_resource = pruner.min_resource
    check_auto_or_positive_int("study.pruner.min_resource", min_resource, unit="training steps")
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


def absolute_paths(cfg: DictConfig) -> None:
    """Anchor `paths.root` at the current directory so every derived path and URI is absolute."""
    root = Path(cfg.paths.root).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    cfg.paths.root = str(root)


def validate(cfg: DictConfig, space: search_space.Space) -> list[DictConfig]:
    """Check the base config, every grid point (or distribution bound) and the data files, before training.

    Returns the distinct model configs of those points (for the availability check before training)."""
    study = cfg.study
    if not isinstance(study.name, str) or not study.name:
        raise ConfigError("name", study.name, "must be a non-empty string (quote numbers: name='\"2024\"')")
    if study.direction not in ("maximize", "minimize"):
        raise ConfigError("study.direction", study.direction, "must be maximize or minimize")
    if study.metric != "stsb_validation_spearman":
        raise ConfigError("study.metric", study.metric, "must be stsb_validation_spearman")
    for key in ("n_trials", "n_workers", "max_failures"):
        value = study[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"study.{key}", value, "must be null or an integer >= 1")
    if not isinstance(study.max_retries, int) or study.max_retries < 0:
        raise ConfigError("study.max_retries", study.max_retries, "must be an integer >= 0")
    if not (isinstance(study.heartbeat_interval, int) and study.heartbeat_interval >= 1):
        raise ConfigError("study.heartbeat_interval", study.heartbeat_interval, "must be an integer >= 1 (seconds)")
    make_sampler(study.sampler, space)
    make_pruner(study.pruner, cfg.trial.eval_steps)
    models: dict[str, DictConfig] = {}
    for point in search_space.candidate_points(space) or [{}]:
        trial_cfg = search_space.apply(cfg, point)
        try:
            validate_trial_config(trial_cfg)
        except ConfigError as error:
            where = ", ".join(f"{k}={v}" for k, v in point.items())
            raise ConfigError(
                error.key, error.value, error.allowed + (f" (grid point {where})" if where else "")
            ) from None
        models.setdefault(json.dumps(OmegaConf.to_container(trial_cfg.model), sort_keys=True), trial_cfg.model)
    for split in ("train", "validation", "test"):
        resolve_source(cfg.data, split)
    return list(models.values())


@contextmanager
def sqlite_init_lock(url: str) -> Iterator[None]:
    """Hold an exclusive file lock beside a SQLite database while its schema may be created: processes that
    start together would otherwise run the same schema migration at once and corrupt it. Server databases
    (PostgreSQL, an MLflow server) serialise this themselves."""
    if not url.startswith("sqlite:///"):
        yield
        return
    lock_path = Path(url.removeprefix("sqlite:///") + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def open_storage(cfg: DictConfig, on_stale: Any) -> optuna.storages.RDBStorage:
    """The RDB storage with heartbeats (a killed worker's trial is failed and re-queued by another process)."""
    url = cfg.study.storage
    interval = cfg.study.heartbeat_interval
    engine_kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {"pool_pre_ping": True}
    try:
        with sqlite_init_lock(url), warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.storages.RDBStorage(
                url,
                engine_kwargs=engine_kwargs,
                heartbeat_interval=interval,
                grace_period=3 * interval,
                heartbeat_stale_trial_callback=on_stale,
            )
    except Exception as error:  # noqa: BLE001 - any driver error: name the key and stop before training
        raise ConfigError("study.storage", url, f"cannot open the storage ({type(error).__name__}: {error})") from None


def open_tracking(cfg: DictConfig) -> MlflowClient:
    """An MlflowClient whose store answers (creating a new SQLite database under the lock)."""
    try:
        with sqlite_init_lock(cfg.tracking.uri):
            client = MlflowClient(cfg.tracking.uri)  # creates the store (and a new database's schema) at once
            client.search_experiments(max_results=1)
    except Exception as error:  # noqa: BLE001
        raise ConfigError(
            "tracking.uri",
            cfg.tracking.uri,
            f"cannot reach the MLflow tracking store ({type(error).__name__}: {error})",
        ) from None
    return client


@dataclass
class Sweep:
    """A study being run by this process: its config, search space, Optuna study and MLflow parent run."""

    cfg: DictConfig
    space: search_space.Space
    study: optuna.Study
    client: MlflowClient
    experiment_id: str
    parent_run_id: str
    resources: StudyResources = field(default_factory=StudyResources)
    failures: int = 0
    stopped_reason: str | None = None

    @property
    def is_grid(self) -> bool:
        return bool(self.space) and search_space.is_grid(self.space)

    def objective(self, trial: optuna.Trial) -> float:
        if self.is_grid and GRID_POINT_ATTR not in trial.user_attrs:
            # The queue emptied between this worker's check and its next trial: do not train a duplicate.
            trial.set_user_attr("sweep.discarded", True)
            self.study.stop()
            raise optuna.TrialPruned("grid queue empty")
        params = search_space.suggest(trial, self.space)
        cfg = search_space.apply(self.cfg, params)
        resolve_trial_config(cfg)
        run_name = f"trial-{trial.number:03d} " + " ".join(f"{k.split('.')[-1]}={v}" for k, v in params.items())
        run = tracking.TrialRun(
            self.client, self.experiment_id, self.parent_run_id, self.study.study_name, trial.number, run_name.strip()
        )
        trial.set_user_attr("mlflow_run_id", run.run_id)
        if "scale" in cfg.loss:
            trial.set_user_attr("scale", cfg.loss.scale)
            trial.set_user_attr("temperature", cfg.loss.temperature)
        run.log_params({**flatten(cfg), **{f"version.{k}": v for k, v in tracking.library_versions().items()}})
        start = time.perf_counter()
        try:
            value = train_and_evaluate(
                trial,
                cfg,
                self.resources,
                run,
                quiet=self.cfg.quiet,
                on_trained=functools.partial(model_store.keep, cfg, trial_number=trial.number, run=run),
            )
        except optuna.TrialPruned as pruned:
            self._end(trial, run, start, TrialState.PRUNED, str(pruned))
            raise
        except DivergenceError as error:  # deterministic: recorded, not retried
            trial.set_user_attr("fail_reason", f"diverged: {error}")
            self._end(trial, run, start, TrialState.FAIL, f"diverged: {error}")
            raise
        except BaseException as error:  # includes Ctrl-C: the point is queued again for the next run
            trial.set_user_attr("fail_reason", f"{type(error).__name__}: {error}")
            self._end(trial, run, start, TrialState.FAIL, f"{type(error).__name__}: {error}")
            self.requeue(trial.user_attrs, trial.params)
            raise
        self._end(trial, run, start, TrialState.COMPLETE, None)
        log.info(
            "trial %d %s: validation %.4f, test %.4f, %.1f s",
            trial.number,
            params,
            value,
            trial.user_attrs.get("stsb_test_spearman", math.nan),
            time.perf_counter() - start,
        )
        return value

    def _end(
        self, trial: optuna.Trial, run: tracking.TrialRun, start: float, state: TrialState, reason: str | None
    ) -> None:
        wall = time.perf_counter() - start
        trial.set_user_attr("wall_time_s", wall)
        run.log_metrics({"trial_wall_time_s": wall})
        run.end(state, reason)

    def requeue(self, user_attrs: dict[str, Any], params: dict[str, Any]) -> None:
        """Queue a failed grid point again, at most `study.max_retries` times."""
        attempt = int(user_attrs.get(ATTEMPT_ATTR, 1))
        if not self.is_grid or not params or attempt > self.cfg.study.max_retries:
            return
        self.study.enqueue_trial(params, user_attrs={GRID_POINT_ATTR: True, ATTEMPT_ATTR: attempt + 1})

    def on_stale_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """A worker died mid-trial (no heartbeat): end its MLflow run as KILLED and queue the point again."""
        run_id = trial.user_attrs.get("mlflow_run_id")
        if run_id:
            self.client.set_tag(run_id, "sweep.optuna_state", "FAIL")
            self.client.set_tag(run_id, "sweep.end_reason", "worker stopped without finishing (no heartbeat)")
            self.client.set_terminated(run_id, status="KILLED")
        self.requeue(trial.user_attrs, trial.params)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if trial.state == TrialState.FAIL:
            self.failures += 1
            if self.cfg.study.max_failures and self.failures >= self.cfg.study.max_failures:
                self.stopped_reason = (
                    f"{self.failures} trials failed (study.max_failures={self.cfg.study.max_failures})"
                )
                study.stop()
        if self.is_grid and not self._trials(TrialState.WAITING):
            study.stop()

    def _trials(self, *states: TrialState) -> list[FrozenTrial]:
        return self.study.get_trials(deepcopy=False, states=states)

    def _done_count(self) -> int:
        return len([t for t in self._trials(*DONE_STATES) if not t.user_attrs.get("sweep.discarded")])

    def run(self) -> None:
        """Train until the grid queue is empty (waiting for other workers' running trials, failing those whose
        worker died), or until `study.n_trials` trials are done for distributions."""
        if self.is_grid and not self._trials(TrialState.WAITING, TrialState.RUNNING):
            log.info("study %s is complete: nothing to train", self.study.study_name)
            return
        total = (
            search_space.grid_size(self.space)
            if self.is_grid
            else self.cfg.study.n_trials or (DEFAULT_N_TRIALS if self.space else 1)
        )
        progress = tqdm(
            total=total,
            initial=min(total, self._done_count()),
            desc=f"study {self.study.study_name}",
            unit="trial",
            disable=self.cfg.quiet,
        )
        callbacks = [self.after_trial, lambda study, trial: progress.update(1) if trial.state in DONE_STATES else None]
        if not self.is_grid:
            callbacks.append(optuna.study.MaxTrialsCallback(total, states=DONE_STATES))
        deadline = time.monotonic() + self.cfg.study.timeout if self.cfg.study.timeout else None
        try:
            while self.stopped_reason is None and (deadline is None or time.monotonic() < deadline):
                if self.is_grid and not self._trials(TrialState.WAITING):
                    if not self._trials(TrialState.RUNNING):
                        break
                    time.sleep(self.cfg.study.heartbeat_interval)  # other workers' trials, or a dead worker's
                    fail_stale_trials(self.study)
                    continue
                if not self.is_grid and self._done_count() >= total:
                    break
                timeout = None if deadline is None else max(1.0, deadline - time.monotonic())
                self.study.optimize(self.objective, timeout=timeout, catch=(Exception,), callbacks=callbacks)
                if not self.is_grid:
                    break
        finally:
            progress.close()
        if self.stopped_reason:
            log.error("study %s stopped: %s", self.study.study_name, self.stopped_reason)
        elif not self._trials(TrialState.WAITING, TrialState.RUNNING) and self.is_grid:
            log.info("study %s: every grid point is done", self.study.study_name)


def fail_stale_trials(study: optuna.Study) -> None:
    """Fail (and, through the storage's callback, re-queue) trials whose worker stopped sending heartbeats."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


def _create_or_load(
    cfg: DictConfig, storage: optuna.storages.RDBStorage, space: search_space.Space
) -> tuple[optuna.Study, bool]:
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


def _wait_until_ready(study: optuna.Study, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while READY_ATTR not in study.user_attrs:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"study {study.study_name} was created by another process that never finished setting it up"
            )
        time.sleep(1.0)


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


def open_sweep(cfg: DictConfig) -> Sweep:
    """Validate the config, then open (or create) the Optuna study, its grid queue and MLflow parent run."""
    absolute_paths(cfg)
    declared = declared_space(cfg)
    space = search_space.parse(declared)
    for model in validate(cfg, space):
        check_available(model)
    data_module.check_available(cfg.data)
    extra_eval.check_sets(cfg)
    client = open_tracking(cfg)
    versions = {f"version.{k}": v for k, v in tracking.library_versions().items()}  # pinned at start
    holder: dict[str, Sweep] = {}
    storage = open_storage(cfg, on_stale=lambda study, trial: holder["sweep"].on_stale_trial(study, trial))
    study, created = _create_or_load(cfg, storage, space)
    exp_id = tracking.experiment_id(client, cfg.tracking.experiment_name, cfg.tracking.artifact_location)
    ui_links.mark_model_development(client, exp_id)
    if created:
        study.set_user_attr("search_space", declared)
        parent = tracking.parent_run(
            client, study, exp_id, {**flatten(cfg), "study.search_space": declared, **versions}
        )
        if space and search_space.is_grid(space):
            # A seeded shuffle: a pruner then compares trials from across the grid, and a partial study
            # covers it evenly instead of only its first axis values.
            points = search_space.grid_points(space)
            random.Random(cfg.study.sampler.seed).shuffle(points)
            for point in points:
                study.enqueue_trial(point, user_attrs={GRID_POINT_ATTR: True, ATTEMPT_ATTR: 1})
        study.set_user_attr(READY_ATTR, True)
    else:
        _wait_until_ready(study)
        recorded = study.user_attrs.get("search_space")
        if recorded != declared:
            raise ConfigError(
                "study.search_space",
                declared,
                f"study {study.study_name!r} in {cfg.study.storage} was created with {recorded}; "
                "use a new name=... to sweep a different space",
            )
        parent = tracking.parent_run(client, study, exp_id, {})
    sweep = Sweep(cfg, space, study, client, exp_id, parent)
    holder["sweep"] = sweep
    fail_stale_trials(study)
    return sweep


def results_table(study: optuna.Study) -> pd.DataFrame:
    """One row per trial: its parameters, scale, temperature, validation/test Spearman, wall time, state."""
    rows: list[dict[str, Any]] = []
    for t in study.get_trials(deepcopy=False):
        if t.state in (TrialState.WAITING,) or t.user_attrs.get("sweep.discarded"):
            continue
        rows.append(
            {
                "trial": t.number,
                **{k: v for k, v in t.params.items() if k not in ("loss.scale", "loss.temperature")},
                "scale": t.user_attrs.get("scale"),
                "temperature": t.user_attrs.get("temperature"),
                "stsb_val": t.value,
                "stsb_test": t.user_attrs.get("stsb_test_spearman"),
                **extra_eval.table_columns(t.user_attrs, t.value),
                "wall_s": t.user_attrs.get("wall_time_s"),
                "state": t.state.name,
            }
        )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    return table.sort_values([c for c in ("scale", "trial") if c in table.columns]).reset_index(drop=True)


def write_shared(write: Callable[[], object], attempts: int = 3) -> None:
    """A write to the study's parent run, which every worker that finishes at the same moment also writes.

    MLflow's SQL store inserts a tag (or latest metric) after checking that it is absent, so two workers can
    collide on the unique key (IntegrityError); a retry then updates the row the other worker inserted.
    """
    for attempt in range(attempts):
        try:
            write()
            return
        except MlflowException as error:
            if "IntegrityError" not in str(error) or attempt == attempts - 1:
                raise
            time.sleep(0.2 * (attempt + 1))


def finish(sweep: Sweep, interrupted: bool = False) -> pd.DataFrame:
    """Close the parent run with the study's best value and the results table as an artifact."""
    table = results_table(sweep.study)
    client, run_id = sweep.client, sweep.parent_run_id
    complete = sweep.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if complete:
        best = sweep.study.best_trial
        write_shared(lambda: client.log_metric(run_id, f"best_{sweep.cfg.study.metric}", best.value))
        write_shared(lambda: client.set_tag(run_id, "sweep.best_params", str(best.params)))
    for key, value in model_store.parent_tags(sweep.cfg).items():
        write_shared(lambda key=key, value=value: client.set_tag(run_id, key, value))
    write_shared(lambda: client.log_metric(run_id, "n_complete_trials", len(complete)))
    client.log_text(run_id, table.to_csv(index=False), "results.csv")
    status = "KILLED" if interrupted else "FAILED" if sweep.stopped_reason else "FINISHED"
    client.set_terminated(run_id, status=status)
    return table


def worker_threads(n_workers: int) -> int:
    """Torch threads per worker process: the cores shared evenly."""
    return max(1, (os.cpu_count() or 1) // n_workers)

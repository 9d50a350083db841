"""Running a study: the `Sweep` run loop, the objective that trains one trial and records it, re-queueing failed
grid points, and opening (`open_sweep`) and closing (`finish`) a study with its MLflow parent run."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

import optuna
import pandas as pd
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig
from optuna.trial import FrozenTrial, TrialState
from tqdm.auto import tqdm

from sweep import data as data_module
from sweep import pack, search_space, tracking
from sweep.config import flatten
from sweep.model import check_available
from sweep.names import (
    ATTR_ATTEMPT,
    ATTR_DISCARDED,
    ATTR_FAIL_REASON,
    ATTR_GRID_POINT,
    ATTR_MLFLOW_RUN_ID,
    ATTR_READY,
    ATTR_SCALE,
    ATTR_SEARCH_SPACE,
    ATTR_TEMPERATURE,
    ATTR_TEST_SPEARMAN,
    ATTR_WALL_TIME_S,
)
from sweep.results import parent_summary, results_table
from sweep.study_setup import (
    absolute_paths,
    check_declared_space,
    create_or_load,
    declared_space,
    enqueue_grid,
    fail_stale_trials,
    open_storage,
    validate,
    wait_until_ready,
)
from sweep.trial import DivergenceError, StudyResources, train_and_evaluate
from sweep.validation import resolve_trial_config

log = logging.getLogger(__name__)

DEFAULT_N_TRIALS = 20
DONE_STATES = (TrialState.COMPLETE, TrialState.PRUNED)


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
        if self.is_grid and ATTR_GRID_POINT not in trial.user_attrs:
            # The queue emptied between this worker's check and its next trial: do not train a duplicate.
            trial.set_user_attr(ATTR_DISCARDED, True)
            self.study.stop()
            raise optuna.TrialPruned("grid queue empty")
        params = search_space.suggest(trial, self.space)
        cfg = search_space.apply(self.cfg, params)
        resolve_trial_config(cfg)
        run_name = f"trial-{trial.number:03d} " + " ".join(f"{k.split('.')[-1]}={v}" for k, v in params.items())
        run = tracking.TrialRun(
            self.client, self.experiment_id, self.parent_run_id, self.study.study_name, trial.number, run_name.strip()
        )
        trial.set_user_attr(ATTR_MLFLOW_RUN_ID, run.run_id)
        if "scale" in cfg.loss:
            trial.set_user_attr(ATTR_SCALE, cfg.loss.scale)
            trial.set_user_attr(ATTR_TEMPERATURE, cfg.loss.temperature)
        run.log_params({**flatten(cfg), **{f"version.{k}": v for k, v in tracking.library_versions().items()}})
        start = time.perf_counter()
        try:
            value = train_and_evaluate(trial, cfg, self.resources, run, quiet=self.cfg.quiet)
        except optuna.TrialPruned as pruned:
            self._end(trial, run, start, TrialState.PRUNED, str(pruned))
            raise
        except DivergenceError as error:  # deterministic: recorded, not retried
            trial.set_user_attr(ATTR_FAIL_REASON, f"diverged: {error}")
            self._end(trial, run, start, TrialState.FAIL, f"diverged: {error}")
            raise
        except BaseException as error:  # includes Ctrl-C: the point is queued again for the next run
            trial.set_user_attr(ATTR_FAIL_REASON, f"{type(error).__name__}: {error}")
            self._end(trial, run, start, TrialState.FAIL, f"{type(error).__name__}: {error}")
            self.requeue(trial.user_attrs, trial.params)
            raise
        self._end(trial, run, start, TrialState.COMPLETE, None)
        log.info(
            "trial %d %s: validation %.4f, test %.4f, %.1f s",
            trial.number,
            params,
            value,
            trial.user_attrs.get(ATTR_TEST_SPEARMAN, math.nan),
            time.perf_counter() - start,
        )
        return value

    def _end(
        self, trial: optuna.Trial, run: tracking.TrialRun, start: float, state: TrialState, reason: str | None
    ) -> None:
        wall = time.perf_counter() - start
        trial.set_user_attr(ATTR_WALL_TIME_S, wall)
        run.log_metrics({"trial_wall_time_s": wall})
        run.end(state, reason)

    def requeue(self, user_attrs: dict[str, Any], params: dict[str, Any]) -> None:
        """Queue a failed grid point again, at most `study.max_retries` times."""
        attempt = int(user_attrs.get(ATTR_ATTEMPT, 1))
        if not self.is_grid or not params or attempt > self.cfg.study.max_retries:
            return
        self.study.enqueue_trial(params, user_attrs={ATTR_GRID_POINT: True, ATTR_ATTEMPT: attempt + 1})

    def on_stale_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """A worker died mid-trial (no heartbeat): end its MLflow run as KILLED and queue the point again."""
        run_id = trial.user_attrs.get(ATTR_MLFLOW_RUN_ID)
        if run_id:
            tracking.kill_trial_run(self.client, run_id, "worker stopped without finishing (no heartbeat)")
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
        return len([t for t in self._trials(*DONE_STATES) if not t.user_attrs.get(ATTR_DISCARDED)])

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
        packed = pack.is_packed(self.cfg)  # study.pack > 1, or CUDA (memory guard): sweep/pack.py
        objective = pack.Packer(self, callbacks, None if self.is_grid else total) if packed else self.objective
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
                self.study.optimize(objective, timeout=timeout, catch=(Exception,), callbacks=callbacks)
                if not self.is_grid:
                    break
        finally:
            progress.close()
        if self.stopped_reason:
            log.error("study %s stopped: %s", self.study.study_name, self.stopped_reason)
        elif not self._trials(TrialState.WAITING, TrialState.RUNNING) and self.is_grid:
            log.info("study %s: every grid point is done", self.study.study_name)


def open_sweep(cfg: DictConfig) -> Sweep:
    """Validate the config, then open (or create) the Optuna study, its grid queue and MLflow parent run."""
    absolute_paths(cfg)
    declared = declared_space(cfg)
    space = search_space.parse(declared)
    for model in validate(cfg, space):
        check_available(model)
    data_module.check_available(cfg.data)
    client = tracking.open_tracking(cfg)
    versions = {f"version.{k}": v for k, v in tracking.library_versions().items()}  # pinned at start
    holder: dict[str, Sweep] = {}
    storage = open_storage(cfg, on_stale=lambda study, trial: holder["sweep"].on_stale_trial(study, trial))
    study, created = create_or_load(cfg, storage, space)
    exp_id = tracking.experiment_id(client, cfg.tracking.experiment_name, cfg.tracking.artifact_location)
    if created:
        study.set_user_attr(ATTR_SEARCH_SPACE, declared)
        parent = tracking.parent_run(
            client, study, exp_id, {**flatten(cfg), "study.search_space": declared, **versions}
        )
        if space and search_space.is_grid(space):
            enqueue_grid(study, space, cfg.study.sampler.seed)
        study.set_user_attr(ATTR_READY, True)
    else:
        wait_until_ready(study)
        check_declared_space(study, declared, cfg.study.storage)
        parent = tracking.parent_run(client, study, exp_id, {})
    sweep = Sweep(cfg, space, study, client, exp_id, parent)
    holder["sweep"] = sweep
    fail_stale_trials(study)
    return sweep


def finish(sweep: Sweep, interrupted: bool = False) -> pd.DataFrame:
    """Close the parent run with the study's best value and the results table as an artifact."""
    table = results_table(sweep.study)
    summary, best_params = parent_summary(sweep.study, sweep.cfg.study.metric)
    status = "KILLED" if interrupted else "FAILED" if sweep.stopped_reason else "FINISHED"
    tracking.close_parent_run(
        sweep.client, sweep.parent_run_id, summary, best_params, table.to_csv(index=False), status
    )
    return table

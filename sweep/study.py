"""The Optuna study: sampler, pruner, storage, resuming, and the objective that runs trials."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import pandas as pd
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig, OmegaConf

from sweep import search_space, tracking
from sweep.config import ConfigError, flatten, resolve_scale, validate_trial_config
from sweep.data import resolve_source
from sweep.trial import StudyResources, train_and_evaluate

log = logging.getLogger(__name__)

SAMPLERS = ("auto", "grid", "tpe", "random")
PRUNERS = ("none", "median", "successive_halving", "hyperband")
DEFAULT_N_TRIALS = 20
DONE_STATES = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)


def make_sampler(sampler: DictConfig, space: search_space.Space) -> optuna.samplers.BaseSampler:
    name = sampler.name
    if name not in SAMPLERS:
        raise ConfigError("study.sampler.name", name, f"must be one of {', '.join(SAMPLERS)}")
    if name == "auto":
        name = "grid" if space and search_space.is_grid(space) else "tpe"
    if name == "grid":
        if not search_space.is_grid(space) or not space:
            raise ConfigError("study.sampler.name", "grid", "needs every study.search_space entry to be a list of values")
        return optuna.samplers.GridSampler(space, seed=sampler.seed)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=sampler.seed)
    return optuna.samplers.RandomSampler(seed=sampler.seed)


def make_pruner(pruner: DictConfig) -> optuna.pruners.BasePruner:
    name = pruner.name
    if name not in PRUNERS:
        raise ConfigError("study.pruner.name", name, f"must be one of {', '.join(PRUNERS)}")
    if name == "none":
        return optuna.pruners.NopPruner()
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=pruner.n_startup_trials, n_warmup_steps=pruner.n_warmup_steps)
    if name == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=pruner.min_resource, reduction_factor=pruner.reduction_factor)
    return optuna.pruners.HyperbandPruner(min_resource=pruner.min_resource, reduction_factor=pruner.reduction_factor)


def absolute_paths(cfg: DictConfig) -> None:
    """Anchor `paths.root` at the current directory so every derived path and URI is absolute."""
    root = Path(cfg.paths.root).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    cfg.paths.root = str(root)


def validate(cfg: DictConfig, space: search_space.Space) -> None:
    """Check the base config, every grid point (or distribution bound) and the data files, before training."""
    if cfg.study.direction not in ("maximize", "minimize"):
        raise ConfigError("study.direction", cfg.study.direction, "must be maximize or minimize")
    if cfg.study.metric != "stsb_validation_spearman":
        raise ConfigError("study.metric", cfg.study.metric, "must be stsb_validation_spearman")
    if cfg.study.n_trials is not None and (not isinstance(cfg.study.n_trials, int) or cfg.study.n_trials < 1):
        raise ConfigError("study.n_trials", cfg.study.n_trials, "must be null (the whole grid) or an integer >= 1")
    make_sampler(cfg.study.sampler, space)
    make_pruner(cfg.study.pruner)
    for point in search_space.candidate_points(space) or [{}]:
        trial_cfg = search_space.apply(cfg, point)
        try:
            validate_trial_config(trial_cfg)
        except ConfigError as error:
            where = ", ".join(f"{k}={v}" for k, v in point.items())
            raise ConfigError(error.key, error.value, error.allowed + (f" (grid point {where})" if where else "")) from None
    for split in ("train", "validation", "test"):
        resolve_source(cfg.data, split)


@dataclass
class Sweep:
    """A study being run: its config, search space, Optuna study and MLflow parent run."""

    cfg: DictConfig
    space: search_space.Space
    study: optuna.Study
    client: MlflowClient
    experiment_id: str
    parent_run_id: str
    resources: StudyResources

    def objective(self, trial: optuna.Trial) -> float:
        params = search_space.suggest(trial, self.space)
        cfg = search_space.apply(self.cfg, params)
        resolve_scale(cfg)
        run_name = f"trial-{trial.number:03d} " + " ".join(f"{k.split('.')[-1]}={v}" for k, v in params.items())
        run = tracking.TrialRun(self.client, self.experiment_id, self.parent_run_id, self.study.study_name, trial.number, run_name.strip())
        trial.set_user_attr("mlflow_run_id", run.run_id)
        if "scale" in cfg.loss:
            trial.set_user_attr("scale", cfg.loss.scale)
            trial.set_user_attr("temperature", cfg.loss.temperature)
        run.log_params({**flatten(cfg), **{f"version.{k}": v for k, v in tracking.library_versions().items()}})
        start = time.perf_counter()
        try:
            value = train_and_evaluate(trial, cfg, self.resources, run, quiet=self.cfg.quiet)
        except optuna.TrialPruned as pruned:
            self._finish(trial, run, start, optuna.trial.TrialState.PRUNED, str(pruned))
            raise
        except BaseException as error:
            self._finish(trial, run, start, optuna.trial.TrialState.FAIL, f"{type(error).__name__}: {error}")
            raise
        self._finish(trial, run, start, optuna.trial.TrialState.COMPLETE, None)
        log.info(
            "trial %d %s: validation %.4f, test %.4f, %.1f s",
            trial.number, params, value, trial.user_attrs.get("stsb_test_spearman", math.nan), time.perf_counter() - start,
        )
        return value

    def _finish(self, trial: optuna.Trial, run: tracking.TrialRun, start: float, state: optuna.trial.TrialState, reason: str | None) -> None:
        wall = time.perf_counter() - start
        trial.set_user_attr("wall_time_s", wall)
        run.log_metrics({"trial_wall_time_s": wall})
        run.end(state, reason)

    def remaining_trials(self) -> int:
        """Trials still to run: unfinished grid points, or n_trials minus finished trials."""
        finished = [t for t in self.study.trials if t.state in DONE_STATES]
        if search_space.is_grid(self.space) and self.space:
            done = {tuple(t.params.get(k) for k in self.space) for t in finished}
            total = self.cfg.study.n_trials or search_space.grid_size(self.space)
            return max(0, min(total, search_space.grid_size(self.space)) - len(done))
        total = self.cfg.study.n_trials or (DEFAULT_N_TRIALS if self.space else 1)
        return max(0, total - len(finished))

    def retry_failed_grid_points(self) -> None:
        """Queue again the grid points whose only trials failed, so a rerun finishes them (GridSampler treats
        a failed point as visited)."""
        if not (search_space.is_grid(self.space) and self.space):
            return
        key = lambda t: tuple(t.params.get(k) for k in self.space)  # noqa: E731
        done = {key(t) for t in self.study.trials if t.state in DONE_STATES}
        queued = {key(t) for t in self.study.trials if t.state == optuna.trial.TrialState.WAITING}
        for trial in self.study.trials:
            point = key(trial)
            if trial.state == optuna.trial.TrialState.FAIL and point not in done and point not in queued and len(trial.params) == len(self.space):
                self.study.enqueue_trial(dict(zip(self.space, point)))
                queued.add(point)

    def run(self) -> None:
        remaining = self.remaining_trials()
        if remaining == 0:
            log.info("study %s is complete: nothing to train", self.study.study_name)
            return
        self.study.optimize(
            self.objective,
            n_trials=remaining,
            timeout=self.cfg.study.timeout,
            catch=(Exception,),
            show_progress_bar=not self.cfg.quiet,
        )


def open_sweep(cfg: DictConfig) -> Sweep:
    """Validate the config, then open (or create) the Optuna study and its MLflow parent run."""
    absolute_paths(cfg)
    space = search_space.parse(cfg.study.search_space)
    validate(cfg, space)
    storage = cfg.study.storage
    study = optuna.create_study(
        study_name=cfg.study.name,
        storage=storage,
        sampler=make_sampler(cfg.study.sampler, space),
        pruner=make_pruner(cfg.study.pruner),
        direction=cfg.study.direction,
        load_if_exists=True,
    )
    recorded = study.user_attrs.get("search_space")
    declared = OmegaConf.to_container(cfg.study.search_space, resolve=True)
    if recorded is not None and recorded != declared:
        raise ConfigError(
            "study.search_space", declared,
            f"study {study.study_name!r} in {storage} was created with {recorded}; use a new name=... to sweep a different space",
        )
    study.set_user_attr("search_space", declared)
    client = MlflowClient(cfg.tracking.uri)
    exp_id = tracking.experiment_id(client, cfg.tracking.experiment_name, cfg.tracking.artifact_location)
    parent = tracking.parent_run(client, study, exp_id, {**flatten(cfg), "study.search_space": declared})
    sweep = Sweep(cfg, space, study, client, exp_id, parent, StudyResources())
    sweep.retry_failed_grid_points()
    return sweep


def results_table(study: optuna.Study) -> pd.DataFrame:
    """One row per trial: its parameters, scale, temperature, validation/test Spearman, wall time, state."""
    rows: list[dict[str, Any]] = []
    for t in study.trials:
        rows.append({
            "trial": t.number,
            **{k: v for k, v in t.params.items() if k not in ("loss.scale", "loss.temperature")},
            "scale": t.user_attrs.get("scale"),
            "temperature": t.user_attrs.get("temperature"),
            "stsb_val": t.value,
            "stsb_test": t.user_attrs.get("stsb_test_spearman"),
            "wall_s": t.user_attrs.get("wall_time_s"),
            "state": t.state.name,
        })
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    return table.sort_values([c for c in ("scale", "trial") if c in table.columns]).reset_index(drop=True)


def finish(sweep: Sweep) -> pd.DataFrame:
    """Close the parent run with the study's best value and the results table as an artifact."""
    table = results_table(sweep.study)
    client, run_id = sweep.client, sweep.parent_run_id
    complete = [t for t in sweep.study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if complete:
        best = sweep.study.best_trial
        client.log_metric(run_id, f"best_{sweep.cfg.study.metric}", best.value)
        client.set_tag(run_id, "sweep.best_params", str(best.params))
    client.log_metric(run_id, "n_complete_trials", len(complete))
    client.log_text(run_id, table.to_csv(index=False), "results.csv")
    client.set_terminated(run_id, status="FINISHED")
    return table

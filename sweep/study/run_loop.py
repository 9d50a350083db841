"""Running a study: the `StudyRunner` run loop, the objective that trains one trial and records it, and re-queueing
failed grid points. Opening and closing a study with its parent run: `sweep.study.lifecycle`."""

from __future__ import annotations

import functools
import logging
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import optuna
from optuna.trial import FrozenTrial, TrialState
from sentence_transformers import SentenceTransformer
from tqdm.auto import tqdm

from sweep.config import SweepConfig, flatten, search_space, trial_records
from sweep.loggers import TrialLogger
from sweep.names import (
    ATTR_DISCARDED,
    ATTR_GRID_POINT,
    ATTR_MLFLOW_RUN_ID,
    ATTR_RACE_STOPPED,
    ATTR_SCALE,
    ATTR_TEMPERATURE,
    ATTR_TEST_SPEARMAN,
    ATTR_TIME_PHASES,
    ATTR_VALIDATION_SPEARMAN,
    ATTR_WALL_TIME_S,
    TAG_RACE_ROUNDS,
    TAG_RUN_DESCRIPTION,
)
from sweep.signals import check_stop, holding_stop_signals, is_spawned_worker
from sweep.stats import loss_scales
from sweep.study import grid_queue, packing
from sweep.study import race as seed_race
from sweep.study.failures import FailureWatch, record_failure
from sweep.study.optuna_access import wrap_ask
from sweep.study.progress import PROGRESS_TAG, StudyProgress, plan_line
from sweep.study.race_steps import RaceStopper
from sweep.study.run_words import trial_description, trial_outcome, trial_run_name
from sweep.study.setup import fail_stale_trials
from sweep.study.study_logger import StudyLogger
from sweep.study.validation import trial_config
from sweep.training import StepClock, StudyResources, TrackedData, TrialSettings, kept_models, train_and_evaluate

log = logging.getLogger(__name__)

DEFAULT_N_TRIALS = 20
FOLLOW_POLL_S = 5.0  # how often a coordinator that trains nothing reads the study's done count (`StudyRunner.follow`)
DONE_STATES = (TrialState.COMPLETE, TrialState.PRUNED)


@dataclass
class StudyRunner:
    """A study being run by this process: its config (from which each trial's own is derived), search space, Optuna
    study and the tracking it logs through (its parent run started)."""

    cfg: SweepConfig
    space: search_space.Space
    study: optuna.Study
    tracker: StudyLogger
    resources: StudyResources = field(default_factory=StudyResources)
    failures: int = 0
    stopped_reason: str | None = None
    failures_seen: FailureWatch = field(init=False)
    done_at_open: int = field(init=False)  # trials done before this run: a rerun that trains none changes no time
    categorical: frozenset[str] = field(init=False)  # grid keys this study asks as categorical (`suggest`)
    race: seed_race.Race | None = field(init=False)  # `study.race`: the seeds raced (sweep/study/race.py)
    stopper: RaceStopper | None = field(init=False)  # `study.race.stop_early` (sweep/study/race_steps.py)

    def __post_init__(self) -> None:
        self.failures_seen = FailureWatch(self.cfg.study.max_failures, self.cfg.study.max_repeated_failures)
        self.done_at_open = self.done_count()
        self.categorical = grid_queue.categorical_params(self.study)
        cfg = self.cfg
        raced = cfg.study.race.enabled and self.is_grid
        race = (cfg.eval.objective, cfg.study.direction, self.space, self.study, self.tracker)
        self.race = seed_race.Race(*race) if raced else None
        self.stopper = RaceStopper(self.race) if self.race is not None and self.race.settings.stop_early else None
        if self.stopper is not None:
            self.study.pruner = self.stopper  # Optuna asks the study's pruner at each trial.report
        # Every ask, Optuna's in optimize and the packer's, holds a stop signal for the objective's check_stop.
        wrap_ask(self.study, holding_stop_signals)

    @property
    def experiment_id(self) -> str:
        return self.tracker.experiment_id

    @property
    def parent_run_id(self) -> str:
        return self.tracker.parent_run_id

    @property
    def is_grid(self) -> bool:
        return bool(self.space) and search_space.is_grid(self.space)

    @property
    def keeping(self) -> kept_models.Keeping:
        """What the study's kept models depend on."""
        cfg = self.cfg
        return kept_models.Keeping.of(cfg.paths.root, cfg.study, cfg.trial.save_model, cfg.tracking)

    def objective(self, trial: optuna.Trial) -> float:
        try:
            return self._train_trial(trial)
        except optuna.TrialPruned:
            raise
        except BaseException as error:  # also before the trial's MLflow run exists (a signal held by the ask)
            self.record_failure(trial, error)
            raise

    def record_failure(self, trial: optuna.Trial, error: BaseException) -> str:
        """Record why `trial` failed and queue its point again where a retry can help (`failures.record_failure`)."""
        return record_failure(trial, error, self.requeue)

    def _train_trial(self, trial: optuna.Trial) -> float:
        check_stop()  # a stop signal whose first raise was swallowed: no new trial
        self.resources.settle()  # what earlier trials loaded leaves the trainer's garbage collection
        if self.is_grid and ATTR_GRID_POINT not in trial.user_attrs:
            # The queue emptied between this worker's check and its next trial: do not train a duplicate.
            trial.set_user_attr(ATTR_DISCARDED, True)
            self.study.stop()
            raise optuna.TrialPruned("grid queue empty")
        if self.is_grid and (earlier := grid_queue.holder(self.study, trial)) is not None:
            trial.set_user_attr(ATTR_DISCARDED, True)  # its point was queued twice: trial `earlier` trains it
            raise optuna.TrialPruned(f"grid point already held by trial {earlier}")
        point = grid_queue.queued_point(self.study, trial) if self.is_grid else None
        if self.race is not None and point and (how := self.race.dropped(point)) is not None:
            trial.set_user_attr(ATTR_DISCARDED, True)  # queued before the race dropped its point
            raise optuna.TrialPruned(f"grid point dropped by the race {how}")
        params = search_space.suggest(trial, self.space, point, self.categorical)
        cfg = trial_config(self.cfg, params)  # the trial's own config, its derived keys set and checked
        settings = TrialSettings(
            cfg.model,
            cfg.data,
            cfg.loss,
            cfg.trial,
            cfg.stats,
            cfg.eval,
            title=f"{cfg.study.name}, trial {trial.number}: {trial_description(cfg.loss, trial.params)}",
            loss_scales=loss_scales(cfg.stats, cfg.study.search_space, cfg.loss),
        )
        # A tracking outage here is recorded by `objective`; after_trial then stops the study.
        run = self.tracker.start_trial(trial.number, trial_run_name(trial.number, params))
        description = trial_description(cfg.loss, params)
        clock = StepClock()
        try:  # from the run's creation on, however the trial ends, its run ends with it
            placement = trial_records(cfg.trial.device)  # its device (and SLURM task): attributes and tags alike
            for name, where in placement.items():
                trial.set_user_attr(name, where)
            trial.set_user_attr(ATTR_MLFLOW_RUN_ID, run.run_id)
            if "scale" in cfg.loss:
                trial.set_user_attr(ATTR_SCALE, cfg.loss.scale)
                trial.set_user_attr(ATTR_TEMPERATURE, cfg.loss.temperature)
            raced = {TAG_RACE_ROUNDS: str(self.race.planned_rounds)} if self.race is not None else {}
            run.set_tags({TAG_RUN_DESCRIPTION: description, **raced})
            run.set_tags(placement)
            self.tracker.log_trial_params(run.run_id, flatten(cfg))
            with self.tracker.watching_system(run.run_id):  # stops with the trial, however it ends
                value = train_and_evaluate(
                    trial,
                    settings,
                    self.resources,
                    run,
                    quiet=self.cfg.quiet,
                    clock=clock,
                    on_trained=functools.partial(
                        self.keep,
                        kept_models.Keeping.of(cfg.paths.root, cfg.study, cfg.trial.save_model, cfg.tracking),
                        trial_number=trial.number,
                        run_id=run.run_id,
                    ),
                )
        except optuna.TrialPruned as pruned:
            reason = str(pruned)
            if self.stopper is not None and (why := self.stopper.reasons.get(trial.number)):
                reason = f"{reason}: stopped by the race, {why}"
                trial.set_user_attr(ATTR_RACE_STOPPED, why)
                run.set_tags({ATTR_RACE_STOPPED: why[:5000]})
            self._end(trial, run, clock, TrialState.PRUNED, reason, description)
            raise
        except BaseException as error:  # an interrupted trial's run ends KILLED, a failed one's FAILED
            reason = self.record_failure(trial, error)
            state = None if isinstance(error, KeyboardInterrupt) else TrialState.FAIL
            self._end(trial, run, clock, state, reason, description)
            raise
        self._end(trial, run, clock, TrialState.COMPLETE, None, description)
        validation, test = (
            trial.user_attrs.get(key, math.nan) for key in (ATTR_VALIDATION_SPEARMAN, ATTR_TEST_SPEARMAN)
        )
        scores = f"validation {validation:.4f}, test {test:.4f}"
        if cfg.eval.objective != "full":  # the objective is not the validation Spearman: say which is which
            scores = f"objective ({cfg.eval.objective}) {value:.4f}, {scores}"
        log.info("trial %d %s: %s, %.1f s", trial.number, params, scores, clock.elapsed())
        return value

    def _end(
        self,
        trial: optuna.Trial,
        run: TrialLogger,
        clock: StepClock,
        state: TrialState | None,
        reason: str | None,
        description: str,
    ) -> None:
        """Record the wall time, end the trial's MLflow run (`state` None: interrupted, the run is KILLED) and say
        how it ended after its grid point (`description`) in the run's Description; the wall time goes with its
        parts before, in and after the training steps (`StepClock`)."""
        wall = clock.elapsed()
        phases = clock.phases(wall)
        trial.set_user_attr(ATTR_WALL_TIME_S, wall)
        trial.set_user_attr(ATTR_TIME_PHASES, phases)
        run.log_metrics({"trial_wall_time_s": wall, **phases})
        outcome = trial_outcome(state.name if state else "KILLED", reason, trial.user_attrs)
        run.set_tags({TAG_RUN_DESCRIPTION: f"{description}\n\n{outcome}"})
        self.tracker.end_trial(run.run_id, state, reason)

    def keep(
        self,
        keeping: kept_models.Keeping,
        model: SentenceTransformer,
        value: float,
        metrics: dict[str, float],
        collapsed: str | None = None,
        *,
        trial_number: int,
        run_id: str,
        step: int = 0,
        data: TrackedData | None = None,
    ) -> None:
        """A completed trial's model kept as ``trial.save_model`` says (`kept_models.keep`), then logged to its run
        (`StudyLogger.log_kept`); `step` (the last training step) and `data` (the trial's datasets): what the logged
        model's linked `metrics` are."""
        kept = kept_models.keep(keeping, model, value, metrics, collapsed, trial_number=trial_number, run_id=run_id)
        if kept is not None:
            self.tracker.log_kept(
                keeping, kept, model, run_id, trial_number, step=step, metrics=list(metrics), data=data
            )

    def requeue(self, trial: optuna.Trial | FrozenTrial, next_attempt: bool = True) -> None:
        """Queue `trial`'s grid point again (`grid_queue.requeue`); distribution studies sample new trials."""
        if self.is_grid:
            grid_queue.requeue(self.study, trial, self.cfg.study.max_retries, next_attempt)

    def on_stale_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """A worker died mid-trial (no heartbeat): end its MLflow run as KILLED and queue the point again."""
        run_id = trial.user_attrs.get(ATTR_MLFLOW_RUN_ID)
        if run_id:
            self.tracker.end_trial(run_id, None, "worker stopped without finishing (no heartbeat)")
        self.requeue(trial)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if self.tracker.gave_up and self.stopped_reason is None:
            self.stopped_reason = self.tracker.gave_up
            study.stop()
        if trial.state == TrialState.FAIL:
            self.failures += 1
            self.stopped_reason = self.failures_seen.stop_reason(trial, self.failures)
            if self.stopped_reason:
                study.stop()
        elif trial.state in DONE_STATES:
            self.failures_seen.succeeded()
        if self.is_grid and not self.trials_in(TrialState.WAITING):
            study.stop()

    def report_progress(self, text: str) -> None:
        """Say how far the study is, on the console and on the parent run (`sweep.study.progress`)."""
        log.info("study %s: %s", self.study.study_name, text)
        self.tracker.set_tag(self.parent_run_id, PROGRESS_TAG, text)

    def total_trials(self) -> int:
        """The trials this study trains in all: its grid (seeds included), else `study.n_trials`."""
        if self.is_grid:
            return search_space.grid_size(self.space)
        return self.cfg.study.n_trials or (DEFAULT_N_TRIALS if self.space else 1)

    def is_complete(self) -> bool:
        """Whether nothing is left to train: no trial waiting or running, and for distributions every trial done."""
        unfinished = self.trials_in(TrialState.WAITING, TrialState.RUNNING)
        return not unfinished and (self.is_grid or self.done_count() >= self.total_trials())

    def report_plan(self, total: int) -> None:
        """Say what the study will train, before any training (`sweep.study.progress.plan_line`)."""
        seeds, steps, root = len(self.cfg.study.seeds or [0]), self.cfg.trial.max_steps, self.cfg.paths.root
        log.info("%s", plan_line(self.study.study_name, total, self.done_count(), seeds, steps, root))

    def follow(self, running: Callable[[], bool], poll_s: float = FOLLOW_POLL_S) -> None:
        """Report a study that other processes train (`study.devices`: a worker pinned to each GPU, this process
        only coordinating): the plan, then a progress line whenever more trials are done, until `running()` is
        false (no worker runs)."""
        total = self.total_trials()
        self.report_plan(total)
        timing = StudyProgress(total)  # the workers' trials together: the study's own rate
        seen = self.done_count()
        while True:
            still_running = running()
            done = self.done_count()
            if done > seen:
                self.report_progress(timing.line(done, finished=done - seen))
                seen = done
            if not still_running:
                return
            time.sleep(poll_s)

    def trials_in(self, *states: TrialState) -> list[FrozenTrial]:
        return self.study.get_trials(deepcopy=False, states=states)

    def done_count(self) -> int:
        return len([t for t in self.trials_in(*DONE_STATES) if not t.user_attrs.get(ATTR_DISCARDED)])

    def run(self) -> None:
        """Train until the grid queue is empty (waiting for other workers' running trials, failing those whose
        worker died), or until `study.n_trials` trials are done for distributions."""
        if self.is_grid and not self.trials_in(TrialState.RUNNING):  # no other worker is in this run
            for point in grid_queue.requeue_exhausted(self.study):
                log.warning("grid point %s failed in an earlier run and was not trained since: queued again", point)
            if self.race is not None:  # a round a stopped run left undecided, or decided but not queued
                self.race.advance()
        if self.is_grid and not self.trials_in(TrialState.WAITING, TrialState.RUNNING):
            log.info("study %s is complete: nothing to train", self.study.study_name)
            return
        total = self.total_trials()
        progress = tqdm(
            total=total,
            initial=min(total, self.done_count()),
            desc=f"study {self.study.study_name}",
            unit="trial",
            disable=self.cfg.quiet or not sys.stderr.isatty(),  # in a log file a bar is a line per redraw
        )
        reporting = not is_spawned_worker()  # the process that started the workers speaks for the study
        if reporting:
            self.report_plan(total)
        timing = StudyProgress(total, workers=self.cfg.study.n_workers)

        def count(study: optuna.Study, trial: FrozenTrial) -> None:
            if trial.state in DONE_STATES:
                progress.update(1)
                if reporting:
                    self.report_progress(timing.line(self.done_count()))

        callbacks: list[Callable[[optuna.Study, FrozenTrial], None]] = [self.after_trial, count]
        if not self.is_grid:
            callbacks.append(optuna.study.MaxTrialsCallback(total, states=DONE_STATES))
        deadline = time.monotonic() + self.cfg.study.timeout if self.cfg.study.timeout else None
        # study.pack > 1, or CUDA (memory guard): sweep/packing.py
        packed = packing.is_packed(self.cfg.study.pack, self.cfg.trial.device)
        objective = packing.Packer(self, callbacks, None if self.is_grid else total) if packed else self.objective
        try:
            while self.stopped_reason is None and (deadline is None or time.monotonic() < deadline):
                if self.is_grid and not self.trials_in(TrialState.WAITING):
                    if not self.trials_in(TrialState.RUNNING):
                        if self.race is not None and self.race.advance():  # the next round's seed, for the survivors
                            continue
                        break
                    time.sleep(self.cfg.study.heartbeat_interval)  # other workers' trials, or a dead worker's
                    fail_stale_trials(self.study)
                    continue
                if not self.is_grid and self.done_count() >= total:
                    break
                timeout = None if deadline is None else max(1.0, deadline - time.monotonic())
                self.study.optimize(objective, timeout=timeout, catch=(Exception,), callbacks=callbacks)
                if not self.is_grid:
                    break
        finally:
            progress.close()
            self.resources.release()
        if self.stopped_reason:
            log.error("study %s stopped: %s", self.study.study_name, self.stopped_reason)
        elif not self.trials_in(TrialState.WAITING, TrialState.RUNNING) and self.is_grid:
            log.info("study %s: every grid point is done", self.study.study_name)

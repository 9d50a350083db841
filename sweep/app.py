"""The top layer: the Hydra application behind `python -m sweep` (the one validation pass before Hydra creates any
folder, workers, the printed summary, exit codes). The composed config stops here: it is typed by its schema once
(`SweepConfig`), checked once, and what runs below takes its sections."""

from __future__ import annotations

import copy
import functools
import logging
import os
import sys
from pathlib import Path
from typing import Any, cast

import datasets
import hydra
import optuna
import pandas as pd
import transformers
import yaml
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from sweep.config import multirun
from sweep.config.checks import CONFIG_DIR, with_values
from sweep.config.composition import config_error, yaml_error
from sweep.config.devices import place_workers
from sweep.config.schema import StudyConfig, SweepConfig
from sweep.errors import ConfigError
from sweep.names import ATTR_VERDICT, TAG_BEST_MODEL_PATH, TAG_OBJECTIVE_COMPARISON
from sweep.report.live_study import log_study_report
from sweep.report.paired_table import STSB_VALIDATION_LABEL
from sweep.signals import (
    StopSignals,
    Worker,
    check_stop,
    exit_code,
    follow_parent,
    is_spawned_worker,
    quiet_interrupt_tracebacks,
    signal_name,
    spawn_workers,
    stop_workers,
    worker_threads,
)
from sweep.study import grid_queue
from sweep.study.lifecycle import finish, open_sweep
from sweep.study.run_loop import StudyRunner
from sweep.study.setup import unwritable
from sweep.study.summary import (
    COLLAPSED,
    OBJECTIVE,
    STSB_TEST,
    STSB_VALIDATION,
    objective_is_stsb_validation,
    objective_lines,
    per_scale_table,
)
from sweep.study.validation import check_config
from sweep.tracking import ui_links
from sweep.training import disk_use, kept_models, model_card

log = logging.getLogger("sweep")

# Hydra prints an error it meets while composing the config (a value the schema refuses, an unknown key) itself, over
# several lines, and exits 1, unless HYDRA_FULL_ERROR is set: `main` sets it while Hydra composes, so that the error
# reaches it as an exception, and gives the user's setting back as the run starts (`_composed`).
FULL_ERROR = "HYDRA_FULL_ERROR"
_composing: dict[str, str | None] = {}  # {FULL_ERROR: the user's value} while Hydra composes


def _quiet_libraries() -> None:
    """Keep the console to sweep's own lines and progress bars."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for name in ("transformers", "sentence_transformers", "datasets", "mlflow", "alembic", "httpx"):
        logging.getLogger(name).setLevel(logging.ERROR)
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    datasets.disable_progress_bars()


def summary(sweep: StudyRunner, table: pd.DataFrame) -> str:
    """The final report: the table, the best trial (never one whose model collapsed), a raced study's eliminations,
    where the Optuna storage and MLflow database are, and how to open them.

    The `objective` column is shown only when it differs from `stsb_val` (`eval.objective` other than full)."""
    same = objective_is_stsb_validation(table)
    hidden = [c for c in ("temperature",) if c in table and table[c].isna().all()] + ([OBJECTIVE] if same else [])
    shown = table.drop(columns=[c for c in hidden if c in table])
    n_complete = sum(table.state == "COMPLETE") if not table.empty else 0
    lines = [f"study {sweep.study.study_name}: {n_complete} complete trials"]
    level = sweep.cfg.stats.paired.level
    per_scale = per_scale_table(table, OBJECTIVE, level)
    if not per_scale.empty:
        metric = STSB_VALIDATION_LABEL if same else f"objective ({sweep.cfg.eval.objective})"
        lines += [
            f"per scale: {metric}, mean over seeds [{level:.0%} t-interval over seeds; n/a: one seed, no interval]",
            per_scale.to_string(
                index=False, formatters={"scale": "{:g}".format}, float_format=lambda v: f"{v:.4f}", na_rep="n/a"
            ),
            "per trial:",
        ]
    lines.append(shown.to_string(index=False, float_format=lambda v: f"{v:.4f}") if not table.empty else "(no trials)")
    complete = table[table.state == "COMPLETE"] if not table.empty else table
    if COLLAPSED in complete:
        collapsed = complete[complete[COLLAPSED]]
        lines.append(
            f"collapsed (every validation pair scored alike: Spearman is noise; never the best, not kept as the best "
            f"model): trial{'s' if len(collapsed) > 1 else ''} {', '.join(str(t) for t in collapsed.trial)}"
        )
        complete = complete[~complete[COLLAPSED]]
        if complete.empty:
            lines.append("best: none, every complete trial collapsed (a learning rate too high for the model?)")
    if not complete.empty:
        minimize = sweep.cfg.study.direction == "minimize"
        label = complete[OBJECTIVE].idxmin() if minimize else complete[OBJECTIVE].idxmax()
        best = complete.loc[cast(int, label)]  # results_table's index is a RangeIndex (reset_index)
        scores = f"validation {best[STSB_VALIDATION]:.4f}, test {best[STSB_TEST]:.4f}"
        lines.append(
            f"best single trial by STSB validation: trial {best.trial} (scale {best.scale}), {scores}"
            if same
            else f"best single trial by objective ({sweep.cfg.eval.objective}): trial {best.trial} "
            f"(scale {best.scale}), objective {best[OBJECTIVE]:.4f}, {scores}"
        )
    if sweep.race is not None:  # which points the race dropped after how many seeds: the table's unequal seeds
        lines += sweep.race.lines()
    uri = sweep.cfg.tracking.uri
    lines += [
        f"Optuna storage: {sweep.cfg.study.storage} (study {sweep.study.study_name})",
        f"MLflow tracking: {uri} (experiment {sweep.cfg.tracking.experiment_name}, parent run {sweep.parent_run_id})",
        *ui_links.open_lines(uri, sweep.experiment_id, sweep.parent_run_id, sweep.cfg.study.storage),
    ]
    cfg = sweep.cfg
    keeping = kept_models.Keeping.of(cfg.paths.root, cfg.study, cfg.trial.save_model, cfg.tracking)
    best_model = kept_models.parent_tags(keeping).get(TAG_BEST_MODEL_PATH)
    if best_model:
        lines.append(f"Best model: {best_model} (SentenceTransformer(path); rescore: python -m sweep.evaluate)")
    return "\n".join(lines)


def paired_summary(sweep: StudyRunner, table: pd.DataFrame) -> list[str]:
    """Log the study's report on its parent run (its figures under ``report/``, `log_study_report`, the Description
    naming the model) and return the answer lines, each naming its metric, also logged there and kept as the Optuna
    study's user attribute ``verdict``; no lines when nothing was swept or `stats.paired.enabled` is false:

    - the STSB validation Spearman's paired bootstrap over pairs and seeds (best scale and the scales not
      distinguishable from it; the grid points instead of scales when other keys were swept);
    - when `eval.objective` is something else, the same question for the objective itself, paired by seed
      (`sweep.study.summary.objective_lines`): the scale Optuna's best trial was chosen by."""
    stats = sweep.cfg.stats
    options = {
        "n_resamples": stats.paired.resamples,
        "level": stats.paired.level,
        "margin": stats.paired.margin,
        "seed": stats.seed,
    }
    about = model_card.model_words(sweep.cfg.model, sweep.cfg.trial.learning_rate)
    lines = log_study_report(sweep.client, sweep.parent_run_id, options if stats.paired.enabled else None, about)
    if not stats.paired.enabled:
        return []
    if not objective_is_stsb_validation(table):
        minimize = sweep.cfg.study.direction == "minimize"
        metric = f"objective ({sweep.cfg.eval.objective})"
        race = sweep.race
        level = race.round_level if race is not None else stats.paired.level
        objective = objective_lines(table, metric, level=level, minimize=minimize, raced=race is not None)
        if objective:
            sweep.client.set_tag(sweep.parent_run_id, TAG_OBJECTIVE_COMPARISON, "; ".join(objective)[:5000])
        lines += objective
    if lines:
        sweep.study.set_user_attr(ATTR_VERDICT, lines)  # optuna-dashboard shows it with the study's other attributes
    return lines


# The task configs (`_task_config`) the callback validated, as YAML: `run` does not validate them again.
_validated: set[str] = set()


def _task_config(config: DictConfig) -> DictConfig:
    """A composed config without its ``hydra`` node: what Hydra hands the task function."""
    task = copy.deepcopy(config)
    with open_dict(task):
        task.pop("hydra", None)
    return task


def multirun_job(overrides: list[str], config: DictConfig) -> multirun.Job:
    """One job of a multirun as the check of shared studies reads it (`sweep.config.multirun`), with `paths.root`
    made absolute as the run will make it."""
    root = str(Path(config.paths.root).expanduser().resolve())
    study = with_values(config, {"paths.root": root}).study
    return multirun.Job(overrides, config.name, study, functools.partial(OmegaConf.select, config))


def _refuse_invalid(jobs: list[DictConfig], refusal: ConfigError | None = None) -> None:
    """The one validation pass (`check_config`) over the composed config of every job: every error printed, one line
    each, and exit code 2 before Hydra creates any folder (with `refusal`, a multirun's own, first)."""
    errors = [refusal] if refusal is not None else []
    for job in jobs:
        task = _task_config(job)
        try:
            check_config(cast(SweepConfig, task), list(job.hydra.overrides.task))
        except ConfigError as error:
            errors.append(error)
        else:
            _validated.add(OmegaConf.to_yaml(task))
    if errors:
        for found in errors:
            _print_invalid(found)
        sys.exit(2)


def _print_invalid(error: ConfigError) -> None:
    for line in str(error).splitlines():
        print(f"sweep: invalid config: {line}", file=sys.stderr)


class ValidConfig(Callback):
    """`hydra.callbacks` (conf/config.yaml): the config of the run, or of every job of a multirun, goes through the one
    validation pass before Hydra creates its output folder from it (``hydra/${name}/...``) or any job starts: every
    error printed, one line each, exit code 2. A multirun two of whose jobs would share a study is refused with them
    (`sweep.config.multirun`)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _refuse_invalid([config])

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        loader = GlobalHydra.instance().config_loader()
        try:
            jobs = [(o, loader.load_sweep_config(config, o)) for o in multirun.job_overrides(config.hydra)]
            refusal = multirun.shared_study([multirun_job(overrides, job) for overrides, job in jobs])
        except (HydraException, OmegaConfBaseException):  # a job that does not compose: Hydra's check says which
            return
        _refuse_invalid([job for _, job in jobs], refusal)


def _worker_arguments() -> list[str]:
    """The command-line arguments of this run for its extra workers: a multirun job's are its own overrides (the
    command line would start the whole multirun in each worker), after the ``--config-dir`` folders it was given (a
    user's experiments there compose in the workers too)."""
    hydra_config = HydraConfig.get()
    if hydra_config.mode != RunMode.MULTIRUN:
        return sys.argv[1:]
    sources = hydra_config.runtime.config_sources
    folders = [f"--config-dir={s.path}" for s in sources if s.provider == "command-line" and s.schema == "file"]
    return [*folders, *hydra_config.overrides.task]


def _extra_workers(study: StudyConfig, device: str) -> tuple[list[Worker], bool]:
    """The worker processes this run starts beside itself, and whether it trains too (raises ConfigError).

    With `study.devices` one process per worker, each pinned to its GPU, and this process only coordinates (opens
    the study, waits, reports). It cannot pin itself safely: validating the config may call torch.cuda.is_available()
    (trial.device=cuda, eval_batch_size auto), whose cuInit fixes the GPUs a process sees for its lifetime, and a
    library may do so at import; a worker started with CUDA_VISIBLE_DEVICES in its environment sees its one GPU
    whatever runs in it. The idle coordinator creates no CUDA context, so it holds no GPU memory (``study``: the `study`
    section, ``device``: `trial.device`)."""
    if study.devices is None:
        return [Worker()] * (study.n_workers - 1), True
    placements = place_workers(study.devices, study.n_workers, device)
    log.info("study.devices: %d workers on %s", len(placements), ", ".join(p.label for p in placements))
    return [Worker(p.environment(), p.overrides()) for p in placements], False


def _composed() -> None:
    """The config is composed: the user's HYDRA_FULL_ERROR again (errors of the run are reported as before)."""
    if FULL_ERROR in _composing:
        user_value = _composing.pop(FULL_ERROR)
        if user_value is None:
            os.environ.pop(FULL_ERROR, None)
        else:
            os.environ[FULL_ERROR] = user_value


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")
def run(cfg: DictConfig) -> None:
    _composed()
    StopSignals().install()  # SIGTERM (preemption, timeout, docker stop) ends a run as Ctrl-C does
    follow_parent()
    _quiet_libraries()
    quiet_interrupt_tracebacks()
    validated = OmegaConf.to_yaml(cfg) in _validated  # by `ValidConfig`, before Hydra's folder (else: now)
    config = cast(SweepConfig, cfg)  # the composed config, typed by its schema (a DictConfig of SweepConfig)
    try:
        check_stop()  # a signal while importing that a finalizer dropped (sweep.signals.stop_while_importing)
        extra, trains = _extra_workers(config.study, config.trial.device)
        threads = None
        if extra:  # every worker process gets its share of the cores
            threads = config.trial.torch_threads or worker_threads(config.study.n_workers)
            config = with_values(config, {"trial.torch_threads": threads})
        sweep = open_sweep(config, overrides=list(HydraConfig.get().overrides.task), validated=validated)
    except ConfigError as error:
        _print_invalid(error)
        sys.exit(2)
    except KeyboardInterrupt as early:  # before any trial started: nothing to clean up
        print(f"sweep: interrupted by {signal_name(early)} before training started", file=sys.stderr)
        sys.exit(exit_code(early))
    workers = spawn_workers(extra, threads, _worker_arguments()) if threads else []
    interrupt: KeyboardInterrupt | None = None
    try:
        if trains:
            sweep.run()
    except KeyboardInterrupt as caught:
        interrupt = caught
    try:
        stop_workers(workers, interrupt)
    except KeyboardInterrupt as caught:  # a signal while waiting for the workers: pass it on to them
        interrupt = caught
        stop_workers(workers, interrupt)
    if is_spawned_worker() and not interrupt:  # the process that started this worker reports the study, once
        sweep.client.writer.flush()
        if sweep.stopped_reason:
            print(f"sweep: stopped: {sweep.stopped_reason}", file=sys.stderr)
            sys.exit(1)
        return
    failed = [f"{w.returncode}" for w in workers if w.returncode] if not trains and not interrupt else []
    if failed and not sweep.stopped_reason:  # the coordinator trained nothing: the workers' errors are the run's
        sweep.stopped_reason = f"{len(failed)} of {len(workers)} workers failed (exit codes {', '.join(failed)})"
    table = finish(sweep, interrupted=signal_name(interrupt) if interrupt else None)
    print(summary(sweep, table))
    if not interrupt and not sweep.stopped_reason:  # a stopped study (e.g. tracking down) has no paired answer
        lines = paired_summary(sweep, table)
        for line in lines:
            print(line)
        figure = ui_links.answer_line(sweep.client, sweep.cfg.tracking.uri, sweep.experiment_id, sweep.parent_run_id)
        if figure:
            print(figure)
        # the best model's card says what the study found
        kept_models.record_verdict(sweep.keeping, sweep.client, lines)
    if not sweep.stopped_reason:  # once every upload is in (a stopped study's tracking server may be down)
        sweep.client.writer.flush()
        print(disk_use.line(sweep.keeping, sweep.client, sweep.experiment_id))
    for point, reason in grid_queue.unresolved_points(sweep.study) if sweep.is_grid and not interrupt else []:
        print(
            f"sweep: grid point {point} has no result and is left out of the answer: {reason}"
            + ("" if reason.startswith("diverged") else " (rerun the command to train it again)"),
            file=sys.stderr,
        )
    if interrupt:
        print(
            f"sweep: interrupted by {signal_name(interrupt)}; the unfinished trial's point is queued again "
            "(not counted as a failed attempt), rerun the same command to continue",
            file=sys.stderr,
        )
        sys.exit(exit_code(interrupt))
    if sweep.stopped_reason:
        print(f"sweep: stopped: {sweep.stopped_reason}", file=sys.stderr)
        sys.exit(1)


def main() -> None:
    """`python -m sweep ARGS`: the Hydra app, where a config Hydra cannot compose (a value of the wrong type, a key the
    schema does not have, an unknown option, an override that does not parse) is refused like every other invalid
    config: one line naming the key, exit code 2."""
    _composing[FULL_ERROR] = os.environ.get(FULL_ERROR)
    os.environ[FULL_ERROR] = "1"
    try:
        run()
    except (HydraException, OmegaConfBaseException) as error:
        translated = config_error(error, sys.argv[1:]) if FULL_ERROR in _composing else None
        if translated is None:  # raised by the run, not while composing
            raise
        print(f"sweep: invalid config: {translated}", file=sys.stderr)
        sys.exit(2)
    except yaml.YAMLError as error:  # a config file of the user's that is not YAML, found while composing
        if FULL_ERROR not in _composing:
            raise
        print(f"sweep: invalid config: {yaml_error(error)}", file=sys.stderr)
        sys.exit(2)
    except OSError as error:
        if FULL_ERROR not in _composing:  # raised by the run, not while Hydra set up its output folder
            raise
        where = ConfigError("paths.root", error.filename, unwritable(error))  # Hydra's output folder, under it
        print(f"sweep: invalid config: {where}", file=sys.stderr)
        sys.exit(2)
    finally:
        _composed()


if __name__ == "__main__":
    main()

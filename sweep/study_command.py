"""What `python -m sweep` runs once its config is valid: the study opened with its worker processes, trained, and
reported (the printed summary, the paired answer, exit codes). Everything training needs (torch,
sentence-transformers, MLflow) is imported here, not by `sweep.app`, so that `--help` and a refused config answer
before these libraries load."""

from __future__ import annotations

import functools
import logging
import sys
from dataclasses import dataclass
from typing import cast

import datasets
import optuna
import pandas as pd
import transformers

from sweep.config import (
    AUTO,
    NUMERIC_COLUMNS,
    StudyConfig,
    SweepConfig,
    place_workers,
    resolve_n_workers,
    with_values,
    worker_threads,
)
from sweep.inputs import estimated_trial_bytes
from sweep.names import ATTR_VERDICT, TAG_BEST_MODEL_PATH, TAG_OBJECTIVE_COMPARISON
from sweep.report import STSB_VALIDATION_LABEL, log_study_report
from sweep.signals import (
    Worker,
    exit_code,
    is_spawned_worker,
    signal_name,
    spawn_workers,
    stop_workers,
)
from sweep.study import (
    COLLAPSED,
    OBJECTIVE,
    STSB_TEST,
    STSB_VALIDATION,
    StudyRunner,
    finish,
    grid_queue,
    objective_is_stsb_validation,
    objective_lines,
    open_sweep,
    per_scale_table,
    recorded_answer,
)
from sweep.tracking import MlflowStudyLogger, disk_use, ui_links
from sweep.training import kept_models, model_card

log = logging.getLogger("sweep")


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


def mlflow_of(sweep: StudyRunner) -> MlflowStudyLogger:
    """The study's MLflow tracking (`open_sweep`'s own): the command reads the study's report back from MLflow."""
    if not isinstance(sweep.tracker, MlflowStudyLogger):
        raise TypeError(f"the command reports from MLflow, not from {type(sweep.tracker).__name__}")
    return sweep.tracker


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
    lines = log_study_report(
        mlflow_of(sweep).client, sweep.parent_run_id, options if stats.paired.enabled else None, about
    )
    if not stats.paired.enabled:
        return []
    if not objective_is_stsb_validation(table):
        minimize = sweep.cfg.study.direction == "minimize"
        metric = f"objective ({sweep.cfg.eval.objective})"
        race = sweep.race
        level = race.round_level if race is not None else stats.paired.level
        objective = objective_lines(table, metric, level=level, minimize=minimize, raced=race is not None)
        if objective:
            mlflow_of(sweep).client.set_tag(sweep.parent_run_id, TAG_OBJECTIVE_COMPARISON, "; ".join(objective)[:5000])
        lines += objective
    if lines:
        sweep.study.set_user_attr(ATTR_VERDICT, lines)  # optuna-dashboard shows it with the study's other attributes
    return lines


def _extra_workers(study: StudyConfig, device: str) -> tuple[list[Worker], bool]:
    """The worker processes this run starts beside itself, and whether it trains too (raises ConfigError).

    With `study.devices` one process per worker, each pinned to its GPU, and this process only coordinates (opens
    the study, waits, reports). It cannot pin itself safely: validating the config may call torch.cuda.is_available()
    (trial.device=cuda, eval_batch_size auto), whose cuInit fixes the GPUs a process sees for its lifetime, and a
    library may do so at import; a worker started with CUDA_VISIBLE_DEVICES in its environment sees its one GPU
    whatever runs in it. The idle coordinator creates no CUDA context, so it holds no GPU memory, but for
    `study.n_workers=auto`, which reads the GPUs' free memory through one (``study``: the `study` section,
    ``device``: `trial.device`)."""
    if study.devices is None:
        return [Worker()] * (study.n_workers - 1), True
    placements = place_workers(study.devices, study.n_workers, device)
    log.info("study.devices: %d workers on %s", len(placements), ", ".join(p.label for p in placements))
    return [Worker(p.environment(), p.overrides()) for p in placements], False


@dataclass(frozen=True)
class OpenedStudy:
    """A study ready to train: its runner, the worker processes to start beside this one (each with `threads` torch
    threads; None: no extra worker) and whether this process trains too."""

    sweep: StudyRunner
    extra: list[Worker]
    threads: int | None
    trains: bool


def open_study(config: SweepConfig, overrides: list[str], validated: bool) -> OpenedStudy:
    """Open the study of a valid `config` (composed with the command line's `overrides`; `validated`: the validation
    pass already ran on it) and plan its workers. Raises `ConfigError` for what only opening finds (e.g. a study
    of the same name with another search space)."""
    _quiet_libraries()
    if config.study.n_workers == AUTO:  # sized to this machine once, here: the workers are told their count
        texts = sum(c not in NUMERIC_COLUMNS for c in config.data.train.columns)  # the texts of one example
        estimate = functools.partial(estimated_trial_bytes, config.model, config.trial, texts)
        workers = resolve_n_workers(config.study, config.trial.device, estimate=estimate)
        config = with_values(config, {"study.n_workers": workers})
    extra, trains = _extra_workers(config.study, config.trial.device)
    threads = None
    if extra:  # every worker process gets its share of the cores
        threads = config.trial.torch_threads or worker_threads(config.study.n_workers)
        config = with_values(config, {"trial.torch_threads": threads})
    return OpenedStudy(open_sweep(config, overrides=overrides, validated=validated), extra, threads, trains)


def run_study(opened: OpenedStudy, worker_arguments: list[str], answer_key: str) -> None:
    """Train an opened study (with its extra workers, started with the command line's `worker_arguments`), print its
    summary and answer, and exit with the study's code: 1 when it stopped, the signal's when interrupted. A study
    that is complete keeps what it printed under `answer_key` (`recorded_answer.config_key` of the command's config),
    for the same command run again (`sweep.study.recorded_answer`)."""
    sweep, extra, threads, trains = opened.sweep, opened.extra, opened.threads, opened.trains
    workers = spawn_workers(extra, threads, worker_arguments) if threads else []
    interrupt: KeyboardInterrupt | None = None
    try:
        if trains:
            sweep.run()
        else:  # the workers train it all (study.devices): this process says how far they are
            sweep.follow(lambda: any(worker.poll() is None for worker in workers))
    except KeyboardInterrupt as caught:
        interrupt = caught
    try:
        stop_workers(workers, interrupt)
    except KeyboardInterrupt as caught:  # a signal while waiting for the workers: pass it on to them
        interrupt = caught
        stop_workers(workers, interrupt)
    if is_spawned_worker() and not interrupt:  # the process that started this worker reports the study, once
        sweep.tracker.flush()
        if sweep.stopped_reason:
            print(f"sweep: stopped: {sweep.stopped_reason}", file=sys.stderr)
            sys.exit(1)
        return
    failed = [f"{w.returncode}" for w in workers if w.returncode] if not trains and not interrupt else []
    if failed and not sweep.stopped_reason:  # the coordinator trained nothing: the workers' errors are the run's
        sweep.stopped_reason = f"{len(failed)} of {len(workers)} workers failed (exit codes {', '.join(failed)})"
    table = finish(sweep, interrupted=signal_name(interrupt) if interrupt else None)
    printed = [summary(sweep, table)]
    print(printed[-1])
    if not interrupt and not sweep.stopped_reason:  # a stopped study (e.g. tracking down) has no paired answer
        lines = paired_summary(sweep, table)
        client = mlflow_of(sweep).client
        figure = ui_links.answer_line(client, sweep.cfg.tracking.uri, sweep.experiment_id, sweep.parent_run_id)
        for line in [*lines, *([figure] if figure else [])]:
            printed.append(line)
            print(line)
        # the best model's card says what the study found
        if (verdict := kept_models.record_verdict(sweep.keeping, lines)) is not None:
            sweep.tracker.publish_verdict(verdict, sweep.keeping)
    if not sweep.stopped_reason:  # once every upload is in (a stopped study's tracking server may be down)
        sweep.tracker.flush()
        printed.append(disk_use.line(sweep.keeping, mlflow_of(sweep).client, sweep.experiment_id))
        print(printed[-1])
    unresolved = grid_queue.unresolved_points(sweep.study) if sweep.is_grid and not interrupt else []
    if not interrupt and not sweep.stopped_reason and not unresolved and sweep.is_complete():
        recorded_answer.record(sweep.study, answer_key, printed)
    for point, reason in unresolved:
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

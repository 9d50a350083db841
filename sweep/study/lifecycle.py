"""Opening (`open_sweep`: the validation pass, then create or load the Optuna study, its grid queue and the MLflow
parent run)
and closing (`finish`: the parent run's summary, tags and status, the study's best model marked) a study that a
`sweep.study.run_loop.StudyRunner` runs."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import pandas as pd
from omegaconf import OmegaConf

from sweep.config import search_space
from sweep.config.checks import flatten, with_values
from sweep.config.schema import SweepConfig
from sweep.evaluation.objective import objective_name
from sweep.names import (
    ARTIFACT_CONFIG,
    ATTR_READY,
    ATTR_SEARCH_SPACE,
    TAG_BEST_MODEL_RUN_ID,
    TAG_END_REASON,
    TAG_RACE,
    TAG_RUN_DESCRIPTION,
)
from sweep.study import grid_queue, race_settings
from sweep.study.run_loop import StudyRunner
from sweep.study.setup import (
    check_declared_space,
    create_or_load,
    declared_space,
    fail_stale_trials,
    make_root,
    open_storage,
    wait_until_ready,
)
from sweep.study.summary import parent_summary, results_table
from sweep.study.validation import check_config
from sweep.tracking import mlflow_client, ui_links
from sweep.tracking.versions import version_params
from sweep.training import kept_models, logged_models, model_card


def open_sweep(cfg: SweepConfig, overrides: Sequence[str] = (), validated: bool = False) -> StudyRunner:
    """Validate the config and the command-line `overrides` it was composed with (`check_config`, the one validation
    pass, unless the caller ran it: `validated`), then open (or create) the Optuna study, its grid queue and MLflow
    parent run."""
    if not validated:
        check_config(cfg, overrides)
    # before the paths become this machine's; the learning rate as a number (a results folder reads it), not the
    # interpolation of the model's rate that trial/cpu.yaml gives it
    config_yaml = OmegaConf.to_yaml(with_values(cfg, {"trial.learning_rate": cfg.trial.learning_rate}))
    cfg = with_values(cfg, {"paths.root": make_root(cfg.paths.root)})
    declared = declared_space(cfg.study)
    space = search_space.parse(declared)
    client = mlflow_client.open_tracking(cfg.tracking)
    versions = version_params()  # pinned at start (read once per process)
    holder: dict[str, StudyRunner] = {}
    storage = open_storage(cfg.study, on_stale=lambda study, trial: holder["sweep"].on_stale_trial(study, trial))
    study, created = create_or_load(
        cfg.study, cfg.trial.eval_steps, objective_name(cfg.eval, cfg.study.metric), storage, space
    )
    exp_id = mlflow_client.experiment_id(client, cfg.tracking.experiment_name, cfg.tracking.artifact_location)
    ui_links.mark_model_development(client, exp_id)
    if created:
        study.set_user_attr(ATTR_SEARCH_SPACE, declared)
        base = ui_links.without_swept_keys(flatten(cfg), search_space.swept_keys(space))
        parent, ended = mlflow_client.parent_run(
            client, study, exp_id, {**base, "study.search_space": declared, **versions}
        )
        mlflow_client.log_text(client, parent, config_yaml, ARTIFACT_CONFIG)
        about = model_card.model_words(cfg.model, cfg.trial.learning_rate)  # the run page's Description, until the end
        client.writer.write("parent description", functools.partial(client.set_tag, parent, TAG_RUN_DESCRIPTION, about))
        race_settings.pin(study, cfg.study.race, cfg.stats, created)
        if space and search_space.is_grid(space):
            grid_queue.enqueue_grid(study, space, cfg.study.sampler.seed, race_settings.first_seeds(cfg.study))
        study.set_user_attr(ATTR_READY, True)
    else:
        wait_until_ready(study)
        check_declared_space(study, declared, cfg.study.storage)
        race_settings.pin(study, cfg.study.race, cfg.stats, created)
        parent, ended = mlflow_client.parent_run(client, study, exp_id, {})
    sweep = StudyRunner(cfg, space, study, client, exp_id, parent, recorded_end_ms=ended)
    holder["sweep"] = sweep
    fail_stale_trials(study)
    return sweep


def finish(sweep: StudyRunner, interrupted: str | None = None) -> pd.DataFrame:
    """Close the parent run with the study's best value and the results table as an artifact; an interrupted
    (`interrupted`: the signal's name) or stopped study's run ends KILLED or FAILED with the reason as a tag."""
    table = results_table(sweep.study)
    summary, tags = parent_summary(sweep.study, sweep.cfg.study.metric, sweep.cfg.eval.objective)
    status = "KILLED" if interrupted else "FAILED" if sweep.stopped_reason else "FINISHED"
    reason = f"interrupted by {interrupted}" if interrupted else sweep.stopped_reason
    keeping = sweep.keeping
    best = kept_models.parent_tags(keeping)
    tags.update({**best, **({TAG_END_REASON: reason} if reason else {})})
    if sweep.race is not None:
        tags[TAG_RACE] = "; ".join(sweep.race.lines())[:5000]
    mlflow_client.end_orphaned_runs(sweep.client, sweep.study, sweep.experiment_id, sweep.parent_run_id)
    # a rerun that trained nothing keeps the study's recorded end: MLflow's duration stays the time it trained
    kept = sweep.recorded_end_ms if status == "FINISHED" and sweep.done_count() == sweep.done_at_open else None
    results = table.to_csv(index=False)
    mlflow_client.close_parent_run(sweep.client, sweep.parent_run_id, summary, tags, results, status, kept)
    # a superseded model whose prune a killed worker did not reach
    prune = functools.partial(kept_models.prune_mlflow, keeping, sweep.client, sweep.experiment_id)
    sweep.client.writer.write("remove superseded models", prune)
    if TAG_BEST_MODEL_RUN_ID in tags:  # through the writer: a tracking outage delays it like any other write
        registered = sweep.cfg.tracking.registered_model_name
        mark = functools.partial(logged_models.mark_study_best, sweep.client, tags[TAG_BEST_MODEL_RUN_ID], registered)
        sweep.client.writer.write("mark the best model", mark)
    return table

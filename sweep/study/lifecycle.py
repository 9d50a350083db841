"""Opening (`open_sweep`: the validation pass, then create or load the Optuna study, its grid queue and its tracking's
parent run) and closing (`finish`: the parent run's summary, tags and status, the study's best model marked) a study
that a `sweep.study.run_loop.StudyRunner` runs. The study tracks itself through a `StudyLogger`; MLflow's
(`sweep.tracking.MlflowStudyLogger`) unless the caller hands it another."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from omegaconf import OmegaConf

from sweep.config import SweepConfig, flatten, search_space, with_values
from sweep.evaluation import objective_name
from sweep.names import ATTR_READY, ATTR_SEARCH_SPACE, TAG_END_REASON, TAG_RACE
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
from sweep.study.study_logger import StudyLogger
from sweep.study.summary import parent_summary, results_table
from sweep.study.validation import check_config
from sweep.training import kept_models, model_card


def open_sweep(
    cfg: SweepConfig,
    overrides: Sequence[str] = (),
    validated: bool = False,
    tracker: StudyLogger | None = None,
) -> StudyRunner:
    """Validate the config and the command-line `overrides` it was composed with (`check_config`, the one validation
    pass, unless the caller ran it: `validated`), then open (or create) the Optuna study, its grid queue and its
    parent run in `tracker` (None: MLflow's, `sweep.tracking.MlflowStudyLogger`, at `tracking.uri`)."""
    if not validated:
        check_config(cfg, overrides)
    # before the paths become this machine's; the learning rate as a number (a results folder reads it), not the
    # interpolation of the model's rate that trial/cpu.yaml gives it
    config_yaml = OmegaConf.to_yaml(with_values(cfg, {"trial.learning_rate": cfg.trial.learning_rate}))
    cfg = with_values(cfg, {"paths.root": make_root(cfg.paths.root)})
    declared = declared_space(cfg.study)
    space = search_space.parse(declared)
    if tracker is None:
        from sweep.tracking import MlflowStudyLogger

        tracker = MlflowStudyLogger.open(cfg.tracking)
    holder: dict[str, StudyRunner] = {}
    storage = open_storage(cfg.study, on_stale=lambda study, trial: holder["sweep"].on_stale_trial(study, trial))
    study, created = create_or_load(
        cfg.study, cfg.trial.eval_steps, objective_name(cfg.eval, cfg.study.metric), storage, space
    )
    if created:
        study.set_user_attr(ATTR_SEARCH_SPACE, declared)
        settings = {**flatten(cfg), "study.search_space": declared}
        about = model_card.model_words(cfg.model, cfg.trial.learning_rate)  # the run page's Description, until the end
        tracker.start(study, settings, search_space.swept_keys(space), config_yaml, about)
        race_settings.pin(study, cfg.study.race, cfg.stats, created)
        if space and search_space.is_grid(space):
            grid_queue.enqueue_grid(study, space, cfg.study.sampler.seed, race_settings.first_seeds(cfg.study))
        study.set_user_attr(ATTR_READY, True)
    else:
        wait_until_ready(study)
        check_declared_space(study, declared, cfg.study.storage)
        race_settings.pin(study, cfg.study.race, cfg.stats, created)
        tracker.start(study, None)
    sweep = StudyRunner(cfg, space, study, tracker)
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
    # a rerun that trained nothing keeps the study's recorded end: the tracked duration stays the time it trained
    unchanged = status == "FINISHED" and sweep.done_count() == sweep.done_at_open
    sweep.tracker.close(sweep.study, summary, tags, table.to_csv(index=False), status, keeping, unchanged)
    return table

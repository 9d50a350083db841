"""The one validation pass: every check of the config, run before any work (no study, no MLflow run, no folder), with
each error collected so that one run of the command names every bad key (`check_config`); and one trial's own config
(`trial_config`: a point's values set, its derived keys, its checks), which the pass builds for every grid point (or
distribution bound) and the run loop for every trial.

The checks themselves stay with what they check (the sections' in `sweep.config.checks`, each loss's rules in
`sweep.losses.rules`, run by `sweep.losses.loss_checks`, the wrapper's in `sweep.losses.wrapper_checks`, the base
model's and its shape in `sweep.inputs.model_source`, the extra sets' in `sweep.evaluation.extra_sets`, the layer
grid's in `sweep.evaluation.layer_grid_config`, the statistics' in `sweep.stats.stats_checks`, the sampler's and
pruner's in `sweep.study.setup`, the race's in `sweep.study.race_settings`); this module is the one place that runs
them all. None of them imports torch, sentence-transformers or transformers (a model's shape is read from its
config.json), so that a refusal does not wait for them (tests/config/test_help.py).
A check whose input another check refused does not run (the model's shape is not read from a model config that has
errors, a data file not looked for in a data section that has errors), so that each error is named once, by the check
that owns it."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from sweep.config import (
    DataConfig,
    EvalConfig,
    LossConfig,
    ModelConfig,
    Problems,
    PrunerConfig,
    StatsConfig,
    SweepConfig,
    TrialConfig,
    check_batch_fits,
    check_csv,
    check_device,
    check_known_keys,
    check_optimizer_and_scheduler,
    check_precision,
    check_study_name,
    check_swept_overrides,
    config_error,
    eval_batch_size,
    flatten,
    is_int,
    place_workers,
    placed_gpus,
    require_database_url,
    require_driver,
    scale_values,
    search_space,
    validate_data,
    validate_learning_rate,
    validate_model,
    validate_study,
    validate_tracking,
    validate_trial,
)
from sweep.errors import ConfigError
from sweep.evaluation import extra_sets, validate_layer_grid
from sweep.inputs import check_available, check_sequence_length
from sweep.inputs import data as data_module
from sweep.losses import loss_values, validate_loss
from sweep.stats import check_stats
from sweep.study import race_settings
from sweep.study.setup import check_root, declared_space, make_pruner, make_sampler

MISSING_KEY = "__missing__"  # what `OmegaConf.select` answers for a key the config lacks


def derived_values(loss: LossConfig, trial: TrialConfig, model_kind: str, eval_batch: bool = True) -> dict[str, Any]:
    """The keys a trial's config derives ({dotted key: value}): `loss.scale` and `loss.temperature` agreeing, the
    loss's own (AnglE's weights, a schedule's keys) and, with `eval_batch`, the evaluation batch size (``auto`` read
    for `model.kind`; for a transformer on ``trial.device=auto`` that asks torch whether a GPU is there)."""
    batch = {"trial.eval_batch_size": eval_batch_size(trial, model_kind)} if eval_batch else {}
    return {**scale_values(loss), **loss_values(loss), **batch}


def trial_config(cfg: SweepConfig, point: Mapping[str, Any] | None = None, eval_batch: bool = True) -> SweepConfig:
    """One trial's own config, checked: a resolved copy of `cfg` (typed by the same schema; `cfg` is unchanged) with
    each dotted key of `point` (a grid point or sampled values) set, a scale set clearing the temperature and vice
    versa, then its derived keys (`derived_values`; without `eval_batch`, ``trial.eval_batch_size: auto`` stays
    unread). A key the config lacks or a value the schema refuses is a `ConfigError` naming the search-space key; the
    checks of the sections raise `ConfigErrors` with every error found."""
    values = dict(point or {})
    trial_cfg = copy.deepcopy(cfg)
    OmegaConf.resolve(cast(DictConfig, trial_cfg))
    for key, value in values.items():
        if OmegaConf.select(cast(DictConfig, trial_cfg), key, default=MISSING_KEY) == MISSING_KEY:
            allowed = "is not a key of the config (see `python -m sweep --cfg job`)"
            raise ConfigError(f"study.search_space.{key}", value, allowed)
        try:
            OmegaConf.update(cast(DictConfig, trial_cfg), key, value, merge=False)
        except OmegaConfBaseException as error:
            translated = config_error(error)
            raise ConfigError(
                f"study.search_space.{key}", value, translated.allowed if translated else str(error)
            ) from None
    for swept, cleared in (("loss.scale", "loss.temperature"), ("loss.temperature", "loss.scale")):
        if swept in values and cleared not in values:  # the one a point sets wins over the config's other
            OmegaConf.update(cast(DictConfig, trial_cfg), cleared, None, merge=False)
    problems = Problems()
    derived = problems.check(derived_values, trial_cfg.loss, trial_cfg.trial, trial_cfg.model.kind, eval_batch)
    for key, value in (derived or {}).items():  # on the trial's own copy: no second one
        OmegaConf.update(cast(DictConfig, trial_cfg), key, value, merge=False)
    sections = (trial_cfg.model, trial_cfg.data, trial_cfg.loss, trial_cfg.trial, trial_cfg.stats, trial_cfg.eval)
    _check_trial_sections(problems, *sections, trial_cfg.study.pruner)
    problems.raise_any()
    return trial_cfg


def _check_trial_sections(
    problems: Problems,
    model: ModelConfig,
    data: DataConfig,
    loss: LossConfig,
    trial: TrialConfig,
    stats: StatsConfig,
    ev: EvalConfig,
    pruner: PrunerConfig,
) -> None:
    """Record in `problems` every error of one trial's sections (its derived keys set)."""
    problems.check(validate_model, model)
    problems.check(validate_trial, trial)
    problems.check(validate_learning_rate, trial, model)
    problems.check(validate_data, data)
    shape_known = not problems.found_in("model")  # the wrapper and the layer grid read the model's shape
    if shape_known:
        problems.check(check_sequence_length, model)
        problems.check(validate_loss, loss, model, trial, list(data.train.columns))
    problems.check(extra_sets.validate, ev)
    if shape_known and not problems.found_in("eval"):  # the objectives it allows are named by the extra sets
        problems.check(validate_layer_grid, ev, model, pruner)
    problems.check(check_stats, stats)
    problems.check(check_optimizer_and_scheduler, trial)
    problems.check(check_device, trial.device)
    problems.check(check_batch_fits, data.train.max_samples, trial.batch_size)
    problems.check(check_precision, trial.precision, trial.device)


def _point_words(point: dict[str, Any]) -> str:
    where = ", ".join(f"{key}={value}" for key, value in point.items())
    return f" (grid point {where})" if where else ""


def _check_files(data: DataConfig, problems: Problems) -> None:
    """The local data files of the `data` section exist and hold a value in every cell (unless the section has
    errors)."""
    if problems.found_in("data"):
        return
    for split in data_module.DATA_SPLITS:
        source = problems.check(data_module.resolve_source, data, split)
        if source is not None and source.local_file is not None:
            columns = list(data_module.split_spec(data, split).columns)
            problems.check(check_csv, f"data.{split}.local_file", source.local_file, columns)


def _check_loads(data: DataConfig, ev: EvalConfig, models: list[ModelConfig], problems: Problems) -> None:
    """What a study loads before it trains: the base models (`models`), the hub splits of the `data` section and the
    extra sets of the `eval` section, each only where its section has no error."""
    for model in models:
        problems.check(check_available, model)
    if not problems.found_in("data"):
        problems.check(data_module.check_available, data)
        if not problems.found_in("eval"):
            problems.check(extra_sets.check_sets, ev, data)


def check_config(cfg: SweepConfig, overrides: Sequence[str] = (), load: bool = True) -> None:
    """The validation pass of the whole config (and of the command-line `overrides` it was composed with), before
    any work: its keys, the study's folder and databases, the sampler, pruner and race, every grid point, the local
    data files and, with `load`, what the study loads before it trains (the base models, the hub splits, the extra
    sets; without: a config meant for another machine). Raises `ConfigErrors` naming every bad key, one line each."""
    problems = Problems()
    problems.check(check_study_name, cfg.name)  # a name is a folder: before anything else reads it
    if cfg.study.name != cfg.name:  # set apart from `name` (its default is ${name})
        problems.check(check_study_name, cfg.study.name, "study.name")
    problems.check(check_root, cfg.paths.root)
    declared = problems.check(declared_space, cfg.study)
    space = None
    if declared is not None:
        if overrides:
            problems.check(check_swept_overrides, overrides, declared, flatten(cfg))
        space = problems.check(search_space.parse, declared)
    problems.check(check_known_keys, cfg)
    problems.check(validate_study, cfg.study)
    problems.check(require_database_url, "study.storage", cfg.study.storage)
    problems.check(require_driver, "study.storage", cfg.study.storage)
    problems.check(require_driver, "tracking.uri", cfg.tracking.uri)
    problems.check(validate_tracking, cfg.tracking)
    if cfg.study.devices is not None and is_int(cfg.study.n_workers):
        problems.check(place_workers, cfg.study.devices, cfg.study.n_workers, cfg.trial.device)
    elif cfg.study.devices is not None:  # auto (counted once the config is valid) or a bad count: the GPUs alone
        problems.check(placed_gpus, cfg.study.devices, cfg.trial.device)
    models: dict[str, ModelConfig] = {}  # the distinct model sections of the points without errors
    if space is not None:
        problems.check(make_sampler, cfg.study.sampler, space)
        problems.check(make_pruner, cfg.study.pruner, cfg.trial.eval_steps)
        problems.check(race_settings.validate, cfg.study, space, cfg.eval.objective)
        # every grid point (or distribution bound): an error is named once, with the first point it is found at
        for point in search_space.candidate_points(space) or [{}]:
            try:
                # `auto` stays unread: the value is a trial's, and reading it may import torch (a GPU is there?)
                model = trial_config(cfg, point, eval_batch=False).model
            except ConfigError as error:
                problems.add(error, where=_point_words(point))
                continue
            models.setdefault(json.dumps(OmegaConf.to_container(model), sort_keys=True), model)
    _check_files(cfg.data, problems)
    if load:
        _check_loads(cfg.data, cfg.eval, list(models.values()), problems)
    problems.raise_any()

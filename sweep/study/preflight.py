"""Whole-config validation, above the config sections, the losses and the layer grid: one trial's config, and every
point of a study's search space, before any training. Resolution returns a new config; `cfg` is never changed."""

from __future__ import annotations

import json

from omegaconf import DictConfig, OmegaConf

from sweep.config import search_space
from sweep.config.checks import (
    eval_batch_size,
    validate_data,
    validate_learning_rate,
    validate_model,
    validate_trial,
    with_values,
)
from sweep.config.early_checks import check_batch_fits, check_precision
from sweep.config.input_checks import check_csv, check_device, check_optimizer_and_scheduler
from sweep.config.scale_temperature import scale_values
from sweep.errors import ConfigError
from sweep.evaluation import extra_sets
from sweep.evaluation.layer_grid import validate_layer_grid
from sweep.inputs.data import DATA_SPLITS, resolve_source
from sweep.losses import loss_values, validate_loss
from sweep.stats.probe import check_stats


def resolve_trial_config(cfg: DictConfig) -> DictConfig:
    """A copy of `cfg` with the derived keys consistent: scale/temperature, AnglE weights, the evaluation batch size
    (`cfg` is unchanged)."""
    derived = {
        **scale_values(cfg.loss),
        **loss_values(cfg.loss),
        "trial.eval_batch_size": eval_batch_size(cfg.trial, cfg.model.kind),
    }
    return with_values(cfg, derived)


def validate_trial_config(cfg: DictConfig) -> DictConfig:
    """Check one trial's config (after search-space values are applied) and return it resolved
    (`resolve_trial_config`). Raises ConfigError."""
    cfg = resolve_trial_config(cfg)
    validate_model(cfg.model)
    validate_trial(cfg.trial)
    validate_learning_rate(cfg.trial, cfg.model)
    validate_data(cfg.data)
    validate_loss(cfg)
    extra_sets.validate(cfg.eval)
    validate_layer_grid(cfg.eval, cfg.model, cfg.study.pruner)
    check_stats(cfg.stats)
    check_optimizer_and_scheduler(cfg.trial)
    check_device(cfg.trial.device)
    check_batch_fits(cfg.data.train.max_samples, cfg.trial.batch_size)
    check_precision(cfg.trial.precision, cfg.trial.device)
    return cfg


def validate_space(cfg: DictConfig, space: search_space.Space) -> list[DictConfig]:
    """Check every grid point (or distribution bound) of `space` applied to `cfg`, and where the data comes from.

    Returns the distinct model configs of those points (for the availability check before training)."""
    models: dict[str, DictConfig] = {}
    for point in search_space.candidate_points(space) or [{}]:
        trial_cfg = search_space.apply(cfg, point)
        try:
            trial_cfg = validate_trial_config(trial_cfg)
        except ConfigError as error:
            where = ", ".join(f"{k}={v}" for k, v in point.items())
            raise ConfigError(
                error.key, error.value, error.allowed + (f" (grid point {where})" if where else "")
            ) from None
        models.setdefault(json.dumps(OmegaConf.to_container(trial_cfg.model), sort_keys=True), trial_cfg.model)
    for split in DATA_SPLITS:
        source = resolve_source(cfg.data, split)
        if source.local_file is not None:
            check_csv(f"data.{split}.local_file", source.local_file, list(cfg.data[split].columns))
    return list(models.values())

"""Config helpers: scale/temperature, validation before any training, flattening for logging."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, ListConfig, OmegaConf

# The Hydra config tree ships inside the package, so an installed wheel finds it from any directory.
CONFIG_DIR = str(Path(__file__).resolve().parent / "conf")

MODEL_KINDS = ("static", "transformer")
STATIC_INITS = ("pretrained", "random")
POOLINGS = ("mean", "cls", "max", "lasttoken")
DATA_SOURCES = ("auto", "local", "hub")
PRECISIONS = ("fp32", "bf16", "fp16")
BATCH_SAMPLERS = ("no_duplicates", "batch_sampler")
DIRECTIONS = ("maximize", "minimize")


class ConfigError(ValueError):
    """A config value that cannot run; the message names the key, the value and what is allowed."""

    def __init__(self, key: str, value: Any, allowed: str) -> None:
        self.key, self.value, self.allowed = key, value, allowed
        super().__init__(f"{key}={value!r}: {allowed}")


def compose_config(overrides: Sequence[str] = ()) -> DictConfig:
    """The project config with Hydra ``overrides``, outside ``python -m sweep`` (reports, the benchmark, tests)."""
    with hydra.initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return hydra.compose("config", overrides=list(overrides))


def resolve_scale(cfg: DictConfig) -> None:
    """Make `loss.scale` and `loss.temperature` consistent in place (scale = 1/temperature).

    The key the user set wins over the loss's default for the other; two set keys that disagree are refused
    (see sweep.scale_temperature). Scale 0 has temperature inf.
    """
    from sweep.scale_temperature import winning_key

    loss = cfg.loss
    if "scale" not in loss:
        return
    if winning_key(loss) == "temperature":
        temperature = float(loss.temperature)
        if not temperature > 0:
            raise ConfigError(
                "loss.temperature",
                loss.temperature,
                "must be > 0 (scale = 1/temperature; use loss.scale=0 for the zero-scale control)",
            )
        loss.scale = 1.0 / temperature
    scale = loss.scale
    if scale is None or isinstance(scale, bool) or not isinstance(scale, (int, float)) or math.isnan(scale):
        raise ConfigError("loss.scale", scale, "must be a number >= 0 (or set loss.temperature > 0)")
    if scale < 0:
        raise ConfigError("loss.scale", scale, "must be >= 0 (0 is the untrained control; scale = 1/temperature)")
    loss.scale = float(scale)
    loss.temperature = math.inf if scale == 0 else 1.0 / float(scale)


def _check_choice(key: str, value: Any, choices: Iterable[str]) -> None:
    choices = tuple(choices)
    if value not in choices:
        raise ConfigError(key, value, f"must be one of {', '.join(choices)}")


def _check_positive_int(key: str, value: Any, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(key, value, f"must be an integer >= {minimum}")


def check_auto_or_positive_int(key: str, value: Any, unit: str = "") -> None:
    """A key that takes ``auto`` or an integer >= 1 (``unit`` is appended to the message)."""
    if value != "auto" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(key, value, "must be auto or an integer >= 1" + (f" ({unit})" if unit else ""))


def _check_range(key: str, value: Any, low: float, high: float | None = None) -> None:
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and value >= low
        and (high is None or value <= high)
    )
    if not ok:
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ConfigError(key, value, f"must be a number {bound}")


def validate_model(model: DictConfig) -> None:
    _check_choice("model.kind", model.kind, MODEL_KINDS)
    _check_choice("model.static_init", model.static_init, STATIC_INITS)
    _check_choice("model.pooling", model.pooling, POOLINGS)
    if not isinstance(model.name_or_path, str) or not model.name_or_path:
        raise ConfigError("model.name_or_path", model.name_or_path, "must be a hub model name or a local path")
    if model.num_layers is not None:
        _check_positive_int("model.num_layers", model.num_layers)
    if model.embedding_dim is not None:
        _check_positive_int("model.embedding_dim", model.embedding_dim)
    _check_positive_int("model.max_seq_length", model.max_seq_length)
    if model.config_overrides and not model.reinit:
        raise ConfigError(
            "model.config_overrides",
            OmegaConf.to_container(model.config_overrides),
            "changes the architecture, so pretrained weights cannot load: set model.reinit=true",
        )
    if model.kind == "static" and (model.num_layers is not None or model.config_overrides):
        raise ConfigError(
            "model.num_layers",
            model.num_layers,
            "applies to model.kind=transformer only (a static model has no layers)",
        )


def validate_trial(trial: DictConfig) -> None:
    _check_positive_int("trial.max_steps", trial.max_steps)
    _check_positive_int("trial.batch_size", trial.batch_size, minimum=2)
    _check_positive_int("trial.eval_steps", trial.eval_steps)
    _check_positive_int("trial.logging_steps", trial.logging_steps)
    check_auto_or_positive_int("trial.eval_batch_size", trial.eval_batch_size)
    _check_positive_int("trial.seed", trial.seed, minimum=0)
    _check_range("trial.learning_rate", trial.learning_rate, 0.0)
    _check_range("trial.weight_decay", trial.weight_decay, 0.0)
    _check_range("trial.warmup_ratio", trial.warmup_ratio, 0.0, 1.0)
    _check_choice("trial.precision", trial.precision, PRECISIONS)
    _check_choice("trial.batch_sampler", trial.batch_sampler, BATCH_SAMPLERS)
    if trial.torch_threads is not None:
        _check_positive_int("trial.torch_threads", trial.torch_threads)


def validate_data(data: DictConfig) -> None:
    _check_choice("data.source", data.source, DATA_SOURCES)
    for split in ("train", "validation", "test"):
        spec = data[split]
        if spec.max_samples is not None:
            _check_positive_int(f"data.{split}.max_samples", spec.max_samples)
        if not spec.columns:
            raise ConfigError(f"data.{split}.columns", spec.columns, "must list the columns to use, in order")
    if list(data.validation.columns)[-1:] != ["score"] or list(data.test.columns)[-1:] != ["score"]:
        raise ConfigError(
            "data.validation.columns",
            list(data.validation.columns),
            "STSB evaluation needs [sentence1, sentence2, score]",
        )


# `trial.eval_batch_size: auto`, measured with `python -m sweep.bench` (item 6): static models encode fastest in
# large batches (tokenizing dominates); on CPU a transformer is 1.3x faster at 32 than at 256 (less padding).
AUTO_EVAL_BATCH_SIZE = {"static": 256, "transformer_cpu": 32, "transformer_gpu": 256}


def eval_batch_size(cfg: DictConfig) -> int:
    """``trial.eval_batch_size``, with ``auto`` read as the batch size that encodes fastest for the model kind
    and device."""
    if cfg.trial.eval_batch_size != "auto":
        return cfg.trial.eval_batch_size
    if cfg.model.kind == "static":
        return AUTO_EVAL_BATCH_SIZE["static"]
    import torch

    on_gpu = cfg.trial.device != "cpu" and (cfg.trial.device != "auto" or torch.cuda.is_available())
    return AUTO_EVAL_BATCH_SIZE["transformer_gpu" if on_gpu else "transformer_cpu"]


def resolve_eval_batch_size(cfg: DictConfig) -> None:
    """Replace ``trial.eval_batch_size: auto`` in place, so that logged params show the value used."""
    cfg.trial.eval_batch_size = eval_batch_size(cfg)


def resolve_trial_config(cfg: DictConfig) -> None:
    """Make derived keys consistent in place: scale/temperature, AnglE weights, the evaluation batch size."""
    from sweep.losses import resolve_loss

    resolve_scale(cfg)
    resolve_loss(cfg)
    resolve_eval_batch_size(cfg)


def validate_trial_config(cfg: DictConfig) -> None:
    """Check one trial's config (after search-space values are applied). Raises ConfigError."""
    from sweep.layer_grid import validate_layer_grid
    from sweep.losses import validate_loss
    from sweep.stats_probe import check_stats

    resolve_trial_config(cfg)
    validate_model(cfg.model)
    validate_trial(cfg.trial)
    validate_data(cfg.data)
    validate_loss(cfg)
    validate_layer_grid(cfg)
    check_stats(cfg.stats)


def flatten(cfg: DictConfig | dict, prefix: str = "") -> dict[str, Any]:
    """Flatten a (resolved) config into dotted keys, e.g. {"loss.scale": 20.0}; lists stay values."""
    container = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, (DictConfig, ListConfig)) else cfg
    flat: dict[str, Any] = {}
    for key, value in container.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, prefix=f"{dotted}."))
        else:
            flat[dotted] = value
    return flat

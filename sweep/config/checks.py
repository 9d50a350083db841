"""The bottom layer: the config tree, `ConfigError` and the one validation vocabulary (``require_*``), the checks of
the plain config sections, scale/temperature, number lists and flattening for logging. Imports only `sweep.names`.
(The config's types, its composition and Hydra's errors as `ConfigError`: `sweep.config.schema`.)"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, ListConfig, OmegaConf

from sweep.errors import ConfigError
from sweep.names import ATTR_VALIDATION_SPEARMAN

# The Hydra config tree ships inside the package, so an installed wheel finds it from any directory. A project's own
# configs are read from `conf/` of the current directory (`hydra.searchpath` in conf/config.yaml) or `--config-dir`;
# a directory without a `conf/` is the usual case, not worth Hydra's warning at every command.
CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")
warnings.filterwarnings("ignore", r"provider=hydra\.searchpath in main, path=conf is not available", UserWarning)

MODEL_KINDS = ("static", "transformer")
STATIC_INITS = ("pretrained", "random")
POOLINGS = ("mean", "cls", "max", "lasttoken")
DATA_SOURCES = ("auto", "local", "hub")
PRECISIONS = ("fp32", "bf16", "fp16")
BATCH_SAMPLERS = ("no_duplicates", "batch_sampler")
DIRECTIONS = ("maximize", "minimize")
METRICS = (ATTR_VALIDATION_SPEARMAN,)  # study.metric: what the study records as its metric
SAVE_MODELS = ("none", "best", "all")  # trial.save_model (sweep.training.kept_models)


def plain_dict(node: DictConfig | ListConfig, resolve: bool = True) -> dict[str, Any]:
    """A mapping node as a plain dict (`OmegaConf.to_container`, typed for any container kind and key type)."""
    container = OmegaConf.to_container(node, resolve=resolve)
    if not isinstance(container, dict):
        raise TypeError(f"expected a mapping, got {type(container).__name__}")
    return cast("dict[str, Any]", container)  # sweep's config keys are strings


def require_choice(key: str, value: Any, choices: Iterable[str]) -> None:
    """``value`` is one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise ConfigError(key, value, f"must be one of {', '.join(choices)}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def require_int(key: str, value: Any, minimum: int = 1, maximum: int | None = None, note: str = "") -> int:
    """``value`` is an integer in ``minimum..maximum`` (``note`` is appended to the message)."""
    if not _is_int(value) or value < minimum or (maximum is not None and value > maximum):
        bound = f"in {minimum}..{maximum}" if maximum is not None else f">= {minimum}"
        raise ConfigError(key, value, f"must be an integer {bound}" + (f" ({note})" if note else ""))
    return value


def require_auto_or_int(key: str, value: Any, note: str = "") -> None:
    """A key that takes ``auto`` or an integer >= 1 (``note`` is appended to the message)."""
    if value != "auto" and (not _is_int(value) or value < 1):
        raise ConfigError(key, value, "must be auto or an integer >= 1" + (f" ({note})" if note else ""))


def require_number(
    key: str, value: Any, low: float = -math.inf, high: float | None = None, strict: bool = False, note: str = ""
) -> float:
    """``value`` is a number >= ``low`` (> with ``strict``) and, with ``high``, <= ``high`` (``note`` is appended to
    the message). Returns it as a float."""
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (value > low if strict else value >= low)
        and (high is None or value <= high)
    )
    if not ok:
        bound = f"in [{low}, {high}]" if high is not None else f"{'>' if strict else '>='} {low}"
        raise ConfigError(key, value, f"must be a number {bound}" + (f" ({note})" if note else ""))
    return float(value)


def parse_numbers(key: str, value: Any, kind: type = int) -> tuple:
    """A set-valued config entry: a list (``[384, 256]``) or a comma string (``"384,256"``, a scalar that Optuna
    can sweep). Returns a tuple of `kind` (int or float)."""
    items = value.split(",") if isinstance(value, str) else value
    if isinstance(items, (int, float)) and not isinstance(items, bool):
        items = [items]
    if not isinstance(items, (list, tuple, ListConfig)) or len(items) == 0:
        raise ConfigError(key, value, 'must be a non-empty list of numbers or a comma string like "384,256,128"')
    numbers = []
    for item in items:
        try:
            number = kind(item.strip()) if isinstance(item, str) else item
        except ValueError:
            number = None
        if (
            isinstance(number, bool)
            or not isinstance(number, (int, float))
            or (kind is int and not isinstance(number, int))
        ):
            raise ConfigError(key, value, f"must contain {kind.__name__} values only")
        numbers.append(kind(number))
    return tuple(numbers)


def validate_model(model: DictConfig) -> None:
    require_choice("model.kind", model.kind, MODEL_KINDS)
    require_choice("model.static_init", model.static_init, STATIC_INITS)
    require_choice("model.pooling", model.pooling, POOLINGS)
    if not isinstance(model.name_or_path, str) or not model.name_or_path:
        raise ConfigError("model.name_or_path", model.name_or_path, "must be a hub model name or a local path")
    if model.num_layers is not None:
        require_int("model.num_layers", model.num_layers)
    if model.embedding_dim is not None:
        require_int("model.embedding_dim", model.embedding_dim)
    require_int("model.max_seq_length", model.max_seq_length)
    require_number("model.learning_rate", model.learning_rate, 0.0)
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
    if trial.max_steps is not None:  # null: one pass over the training rows (sweep.training.trial.train)
        require_int("trial.max_steps", trial.max_steps, note="or null for one pass over the training rows")
    require_int("trial.batch_size", trial.batch_size, minimum=2)
    require_int("trial.eval_steps", trial.eval_steps)
    if trial.early_stopping_patience is not None:
        require_int(
            "trial.early_stopping_patience",
            trial.early_stopping_patience,
            note="evaluations without improvement before training stops, or null to train all trial.max_steps",
        )
    require_int("trial.logging_steps", trial.logging_steps)
    require_auto_or_int("trial.eval_batch_size", trial.eval_batch_size)
    require_int("trial.seed", trial.seed, minimum=0)
    require_number("trial.learning_rate", trial.learning_rate, 0.0)
    require_number("trial.weight_decay", trial.weight_decay, 0.0)
    require_number("trial.warmup_ratio", trial.warmup_ratio, 0.0, 1.0)
    require_choice("trial.precision", trial.precision, PRECISIONS)
    require_choice("trial.batch_sampler", trial.batch_sampler, BATCH_SAMPLERS)
    require_choice("trial.save_model", trial.save_model, SAVE_MODELS)
    if trial.torch_threads is not None:
        require_int("trial.torch_threads", trial.torch_threads)


# A transformer fine-tuned with AdamW above this learning rate collapses: all-MiniLM-L6-v2 at the static model's 0.05
# maps every sentence to one vector (every STSB cosine 1.0). Transformers train at 2e-5 to 1e-4 (model.learning_rate;
# the tests' random tiny BERT at 1e-3); the static model's rates, 0.002 to 0.1, all lie above it.
MAX_TRANSFORMER_LEARNING_RATE = 1e-3


def validate_learning_rate(trial: DictConfig, model: DictConfig) -> None:
    """A transformer is not trained at a static model's learning rate (`MAX_TRANSFORMER_LEARNING_RATE`)."""
    lr = trial.learning_rate
    if model.kind == "transformer" and lr > MAX_TRANSFORMER_LEARNING_RATE:
        raise ConfigError(
            "trial.learning_rate",
            lr,
            f"a transformer (model.kind=transformer) collapses above {MAX_TRANSFORMER_LEARNING_RATE:g} (a static "
            f"model's rate): leave trial.learning_rate unset and unswept to train at the model's own "
            f"model.learning_rate={model.learning_rate:g}, or use rates <= {MAX_TRANSFORMER_LEARNING_RATE:g}",
        )


def validate_data(data: DictConfig) -> None:
    require_choice("data.source", data.source, DATA_SOURCES)
    for split in ("train", "validation", "test"):
        spec = data[split]
        if spec.max_samples is not None:
            require_int(f"data.{split}.max_samples", spec.max_samples)
        if not spec.columns:
            raise ConfigError(f"data.{split}.columns", spec.columns, "must list the columns to use, in order")
    if list(data.validation.columns)[-1:] != ["score"] or list(data.test.columns)[-1:] != ["score"]:
        raise ConfigError(
            "data.validation.columns",
            list(data.validation.columns),
            "STSB evaluation needs [sentence1, sentence2, score]",
        )


def validate_study(study: DictConfig) -> None:
    """Check the study's own keys (its sampler, pruner and search space are checked where they are built)."""
    if not isinstance(study.name, str) or not study.name:
        raise ConfigError("name", study.name, "must be a non-empty string (quote numbers: name='\"2024\"')")
    require_choice("study.direction", study.direction, DIRECTIONS)
    require_choice("study.metric", study.metric, METRICS)
    for key in ("n_trials", "max_failures", "max_repeated_failures"):
        if study[key] is not None:
            require_int(f"study.{key}", study[key], note="or null")
    require_int("study.n_workers", study.n_workers)
    require_int("study.max_retries", study.max_retries, minimum=0)
    require_int("study.pack", study.pack, minimum=1)
    require_int("study.heartbeat_interval", study.heartbeat_interval, note="seconds")
    require_number("study.outage_timeout_s", study.outage_timeout_s, low=0, strict=True, note="seconds")
    if study.pack_memory_gib is not None:
        require_number("study.pack_memory_gib", study.pack_memory_gib, low=0, strict=True, note="GiB, or null")


# `trial.eval_batch_size: auto`, measured with `python -m benchmarks` (item 6): static models encode fastest in
# large batches (tokenizing dominates); on CPU a transformer is 1.3x faster at 32 than at 256 (less padding).
AUTO_EVAL_BATCH_SIZE = {"static": 256, "transformer_cpu": 32, "transformer_gpu": 256}


def eval_batch_size(trial: DictConfig, model_kind: str) -> int:
    """``trial.eval_batch_size`` (of the `trial` section), with ``auto`` read as the batch size that encodes fastest
    for the model kind (``model.kind``) and device."""
    if trial.eval_batch_size != "auto":
        return trial.eval_batch_size
    if model_kind == "static":
        return AUTO_EVAL_BATCH_SIZE["static"]
    import torch  # slow to import: only for a transformer with trial.eval_batch_size=auto

    on_gpu = trial.device != "cpu" and (trial.device != "auto" or torch.cuda.is_available())
    return AUTO_EVAL_BATCH_SIZE["transformer_gpu" if on_gpu else "transformer_cpu"]


def resolve_eval_batch_size(cfg: DictConfig) -> DictConfig:
    """A copy of `cfg` with ``trial.eval_batch_size: auto`` replaced by the value used (for the logged params)."""
    return with_values(cfg, {"trial.eval_batch_size": eval_batch_size(cfg.trial, cfg.model.kind)})


def with_values(cfg: DictConfig, values: Mapping[str, Any]) -> DictConfig:
    """A copy of `cfg` with each dotted key of `values` set (a resolved config is a new one: `cfg` is unchanged)."""
    resolved = copy.deepcopy(cfg)
    for key, value in values.items():
        OmegaConf.update(resolved, key, value, merge=False)
    return resolved


def flatten(cfg: DictConfig | dict, prefix: str = "") -> dict[str, Any]:
    """Flatten a (resolved) config into dotted keys, e.g. {"loss.scale": 20.0}; lists stay values."""
    container = plain_dict(cfg) if isinstance(cfg, (DictConfig, ListConfig)) else cfg
    flat: dict[str, Any] = {}
    for key, value in container.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, prefix=f"{dotted}."))
        else:
            flat[dotted] = value
    return flat

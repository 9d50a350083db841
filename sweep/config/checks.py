"""The bottom layer: the config tree, the one validation vocabulary (``require_*``, and `Problems`, which collects
the errors of independent checks so that one pass names every bad key), the checks of the plain config sections,
number lists and flattening for logging. Imports only `sweep.names` and `sweep.errors`. (The config's types:
`sweep.config.schema`; its composition and Hydra's errors as `ConfigError`: `sweep.config.composition`.)"""

from __future__ import annotations

import copy
import math
import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from importlib.resources import files
from typing import Any, ParamSpec, TypeVar, cast

from omegaconf import DictConfig, ListConfig, OmegaConf

from sweep.config.schema import DataConfig, ModelConfig, StudyConfig, TrackingConfig, TrialConfig
from sweep.errors import ConfigError, ConfigErrors
from sweep.names import ATTR_VALIDATION_SPEARMAN

# The Hydra config tree ships inside the package, so an installed wheel finds it from any directory. A project's own
# configs are read from `conf/` of the current directory (`hydra.searchpath` in conf/config.yaml) or `--config-dir`;
# a directory without a `conf/` is the usual case, not worth Hydra's warning at every command. The tree is found as the
# package's data (importlib.resources), not from this file's place.
CONFIG_DIR = str(files("sweep") / "conf")
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


Params = ParamSpec("Params")
Result = TypeVar("Result")
Node = TypeVar("Node")  # a config node: the whole config or one of its sections


class Problems:
    """The `ConfigError`s of independent checks, collected: each check runs whatever the others found, so that one
    pass names every bad key, once (`raise_any` raises them together as `ConfigErrors`, one line per key)."""

    def __init__(self) -> None:
        self.errors: list[ConfigError] = []

    def add(self, error: ConfigError, where: str = "") -> None:
        """Record `error` (each of the errors a `ConfigErrors` holds), with `where` (the grid point it was found
        at) appended to its message; a key already named (by another check, or at another grid point) is not named
        again."""
        named = {recorded.key for recorded in self.errors}
        for found in error.errors if isinstance(error, ConfigErrors) else [error]:
            if found.key not in named:
                named.add(found.key)
                self.errors.append(ConfigError(found.key, found.value, found.allowed + where) if where else found)

    def check(self, check: Callable[Params, Result], *args: Params.args, **kwargs: Params.kwargs) -> Result | None:
        """``check(*args, **kwargs)``, its result; None when it raised a `ConfigError` (recorded)."""
        try:
            return check(*args, **kwargs)
        except ConfigError as error:
            self.add(error)
            return None

    def found_in(self, section: str) -> bool:
        """Whether an error names a key of `section` (``data``: ``data.train.columns``, ...)."""
        return any(error.key == section or error.key.startswith(f"{section}.") for error in self.errors)

    def raise_any(self) -> None:
        """Raise the errors found (nothing when none was)."""
        if self.errors:
            raise ConfigErrors(self.errors)


def plain_dict(node: object, resolve: bool = True) -> dict[str, Any]:
    """A mapping node (any section of the config, or a loose mapping in it) as a plain dict
    (`OmegaConf.to_container`, typed for any container kind and key type)."""
    container = OmegaConf.to_container(node, resolve=resolve)
    if not isinstance(container, dict):
        raise TypeError(f"expected a mapping, got {type(container).__name__}")
    return cast("dict[str, Any]", container)  # sweep's config keys are strings


def require_choice(key: str, value: Any, choices: Iterable[str]) -> None:
    """``value`` is one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise ConfigError(key, value, f"must be one of {', '.join(choices)}")


def is_int(value: Any) -> bool:
    """An int that is not a bool (YAML's true is an int to Python)."""
    return isinstance(value, int) and not isinstance(value, bool)


AUTO = "auto"  # `study.n_workers: auto`: sized to the machine at the entry point (sweep.config.workers)
MAX_WORKERS = 64  # worker processes of one study, whatever the machine: each holds a model and a database connection
MAX_PACK = 64  # trials one worker trains together (study.pack): each is a model in the worker's memory
MAX_SEED = 2**32 - 1  # NumPy's seed range: transformers' set_seed seeds NumPy, which refuses a larger seed


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity: a SLURM task's or a container's share, not the host's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def worker_threads(n_workers: int) -> int:
    """Torch threads per worker process: the usable cores (`usable_cores`, the bound of `study.n_workers` too)
    shared evenly, not the host's (a SLURM task given 4 of 64 cores runs 2 workers at 2 threads, not 32)."""
    return max(1, usable_cores() // n_workers)


def require_int(key: str, value: Any, minimum: int = 1, maximum: int | None = None, note: str = "") -> int:
    """``value`` is an integer in ``minimum..maximum`` (``note`` is appended to the message)."""
    if not is_int(value) or value < minimum or (maximum is not None and value > maximum):
        bound = f"in {minimum}..{maximum}" if maximum is not None else f">= {minimum}"
        raise ConfigError(key, value, f"must be an integer {bound}" + (f" ({note})" if note else ""))
    return value


def require_bool(key: str, value: Any) -> None:
    """``value`` is true or false (a key of an untyped section, which OmegaConf does not check)."""
    if not isinstance(value, bool):
        raise ConfigError(key, value, "must be true or false")


def require_auto_or_int(key: str, value: Any, note: str = "") -> None:
    """A key that takes ``auto`` or an integer >= 1 (``note`` is appended to the message)."""
    if value != "auto" and (not is_int(value) or value < 1):
        raise ConfigError(key, value, "must be auto or an integer >= 1" + (f" ({note})" if note else ""))


def require_number(
    key: str, value: Any, low: float = -math.inf, high: float | None = None, strict: bool = False, note: str = ""
) -> float:
    """``value`` is a finite number >= ``low`` (> with ``strict``) and, with ``high``, <= ``high`` (``note`` is
    appended to the message; ``inf`` is no number of any key: a key without a limit takes null). Returns it as a
    float."""
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (value > low if strict else value >= low)
        and (high is None or value <= high)
    )
    if not ok:
        opening, relation = ("(", ">") if strict else ("[", ">=")
        bound = f"in {opening}{low:g}, {high:g}]" if high is not None else f"{relation} {low:g}"
        raise ConfigError(key, value, f"must be a finite number {bound}" + (f" ({note})" if note else ""))
    return float(value)


def require_seed(key: str, value: Any) -> int:
    """``value`` is a seed: an integer in ``0..MAX_SEED``."""
    return require_int(key, value, minimum=0, maximum=MAX_SEED, note="NumPy's seed range")


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


def validate_model(model: ModelConfig) -> None:
    problems = Problems()
    problems.check(require_choice, "model.kind", model.kind, MODEL_KINDS)
    problems.check(require_choice, "model.static_init", model.static_init, STATIC_INITS)
    problems.check(require_choice, "model.pooling", model.pooling, POOLINGS)
    if not isinstance(model.name_or_path, str) or not model.name_or_path:
        problems.add(ConfigError("model.name_or_path", model.name_or_path, "must be a hub model name or a local path"))
    if model.num_layers is not None:
        problems.check(require_int, "model.num_layers", model.num_layers)
    if model.embedding_dim is not None:
        problems.check(require_int, "model.embedding_dim", model.embedding_dim)
    problems.check(require_int, "model.max_seq_length", model.max_seq_length)
    problems.check(require_number, "model.learning_rate", model.learning_rate, 0.0)
    if model.config_overrides and not model.reinit:
        problems.add(
            ConfigError(
                "model.config_overrides",
                OmegaConf.to_container(model.config_overrides),
                "changes the architecture, so pretrained weights cannot load: set model.reinit=true",
            )
        )
    if model.kind == "static" and (model.num_layers is not None or model.config_overrides):
        problems.add(
            ConfigError(
                "model.num_layers",
                model.num_layers,
                "applies to model.kind=transformer only (a static model has no layers)",
            )
        )
    problems.raise_any()


def validate_trial(trial: TrialConfig) -> None:
    problems = Problems()
    if trial.max_steps is not None:  # null: one pass over the training rows (sweep.training.trial.train)
        note = "or null for one pass over the training rows"
        problems.check(require_int, "trial.max_steps", trial.max_steps, note=note)
    problems.check(require_int, "trial.batch_size", trial.batch_size, minimum=2)
    problems.check(require_int, "trial.eval_steps", trial.eval_steps)
    if trial.early_stopping_patience is not None:
        note = "evaluations without improvement before training stops, or null to train all trial.max_steps"
        problems.check(require_int, "trial.early_stopping_patience", trial.early_stopping_patience, note=note)
    problems.check(require_int, "trial.logging_steps", trial.logging_steps)
    problems.check(require_auto_or_int, "trial.eval_batch_size", trial.eval_batch_size)
    problems.check(require_seed, "trial.seed", trial.seed)
    problems.check(require_number, "trial.learning_rate", trial.learning_rate, 0.0)
    problems.check(require_number, "trial.weight_decay", trial.weight_decay, 0.0)
    problems.check(require_number, "trial.warmup_ratio", trial.warmup_ratio, 0.0, 1.0)
    problems.check(require_choice, "trial.precision", trial.precision, PRECISIONS)
    problems.check(require_choice, "trial.batch_sampler", trial.batch_sampler, BATCH_SAMPLERS)
    problems.check(require_choice, "trial.save_model", trial.save_model, SAVE_MODELS)
    if trial.torch_threads is not None:
        note = "or null to share the usable CPU cores among the workers"
        problems.check(require_int, "trial.torch_threads", trial.torch_threads, maximum=usable_cores(), note=note)
    problems.raise_any()


# A transformer fine-tuned with AdamW above this learning rate collapses: all-MiniLM-L6-v2 at the static model's 0.05
# maps every sentence to one vector (every STSB cosine 1.0). Transformers train at 2e-5 to 1e-4 (model.learning_rate;
# the tests' random tiny BERT at 1e-3); the static model's rates, 0.002 to 0.1, all lie above it.
MAX_TRANSFORMER_LEARNING_RATE = 1e-3


def validate_learning_rate(trial: TrialConfig, model: ModelConfig) -> None:
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


def validate_data(data: DataConfig) -> None:
    problems = Problems()
    problems.check(require_choice, "data.source", data.source, DATA_SOURCES)
    problems.check(require_seed, "data.seed", data.seed)
    for split, spec in (("train", data.train), ("validation", data.validation), ("test", data.test)):
        if spec.max_samples is not None:
            problems.check(require_int, f"data.{split}.max_samples", spec.max_samples)
        if not spec.columns:
            problems.add(ConfigError(f"data.{split}.columns", spec.columns, "must list the columns to use, in order"))
    if list(data.validation.columns)[-1:] != ["score"] or list(data.test.columns)[-1:] != ["score"]:
        problems.add(
            ConfigError(
                "data.validation.columns",
                list(data.validation.columns),
                "STSB evaluation needs [sentence1, sentence2, score]",
            )
        )
    problems.raise_any()


def validate_study(study: StudyConfig) -> None:
    """Check the study's own keys (its sampler, pruner and search space are checked where they are built)."""
    problems = Problems()
    if not isinstance(study.name, str) or not study.name:
        problems.add(ConfigError("name", study.name, "must be a non-empty string (quote numbers: name='\"2024\"')"))
    problems.check(require_choice, "study.direction", study.direction, DIRECTIONS)
    problems.check(require_choice, "study.metric", study.metric, METRICS)
    for key, value in (
        ("n_trials", study.n_trials),
        ("max_failures", study.max_failures),
        ("max_repeated_failures", study.max_repeated_failures),
    ):
        if value is not None:
            problems.check(require_int, f"study.{key}", value, note="or null")
    if study.timeout is not None:
        problems.check(require_number, "study.timeout", study.timeout, low=0, strict=True, note="seconds, or null")
    if study.n_workers != AUTO:
        cores = usable_cores()
        note = f"each worker is a process: at most the {cores} CPU cores this process may use, {MAX_WORKERS} in all"
        note += "; or auto: sized to the cores and the GPUs' free memory"
        problems.check(require_int, "study.n_workers", study.n_workers, maximum=min(cores, MAX_WORKERS), note=note)
    problems.check(require_int, "study.max_retries", study.max_retries, minimum=0)
    problems.check(require_int, "study.pack", study.pack, maximum=MAX_PACK, note="trials trained together")
    problems.check(require_int, "study.heartbeat_interval", study.heartbeat_interval, note="seconds")
    problems.check(require_number, "study.outage_timeout_s", study.outage_timeout_s, low=0, strict=True, note="seconds")
    if study.pack_memory_gib is not None:
        note = "GiB, or null"
        problems.check(require_number, "study.pack_memory_gib", study.pack_memory_gib, low=0, strict=True, note=note)
    problems.raise_any()


def validate_tracking(tracking: TrackingConfig) -> None:
    """Check the numbers of the `tracking` section (its URI: `sweep.config.database_drivers`)."""
    problems = Problems()
    seconds = "seconds"
    problems.check(require_number, "tracking.outage_timeout_s", tracking.outage_timeout_s, 0, strict=True, note=seconds)
    interval = tracking.system_metrics_interval_s
    note = "seconds between samples"
    problems.check(require_number, "tracking.system_metrics_interval_s", interval, low=0, strict=True, note=note)
    problems.raise_any()


# `trial.eval_batch_size: auto`, measured with `python -m benchmarks` (item 6): static models encode fastest in
# large batches (tokenizing dominates); on CPU a transformer is 1.3x faster at 32 than at 256 (less padding).
AUTO_EVAL_BATCH_SIZE = {"static": 256, "transformer_cpu": 32, "transformer_gpu": 256}


def eval_batch_size(trial: TrialConfig, model_kind: str) -> int:
    """``trial.eval_batch_size`` (of the `trial` section), with ``auto`` read as the batch size that encodes fastest
    for the model kind (``model.kind``) and device."""
    if trial.eval_batch_size != "auto":
        return cast(int, trial.eval_batch_size)  # an integer once checked (`require_auto_or_int`)
    if model_kind == "static":
        return AUTO_EVAL_BATCH_SIZE["static"]
    import torch  # slow to import: only for a transformer with trial.eval_batch_size=auto

    on_gpu = trial.device != "cpu" and (trial.device != "auto" or torch.cuda.is_available())
    return AUTO_EVAL_BATCH_SIZE["transformer_gpu" if on_gpu else "transformer_cpu"]


def with_values(node: Node, values: Mapping[str, Any]) -> Node:
    """A copy of the config `node` (the whole config or a section) with each dotted key of `values` set (a resolved
    config is a new one: `node` is unchanged)."""
    resolved = copy.deepcopy(node)
    for key, value in values.items():
        OmegaConf.update(cast(DictConfig, resolved), key, value, merge=False)
    return resolved


def flatten(tree: object, prefix: str = "") -> dict[str, Any]:
    """Flatten a (resolved) config node or plain dict into dotted keys, e.g. {"loss.scale": 20.0}; lists stay
    values."""
    container = tree if isinstance(tree, dict) else plain_dict(tree)
    flat: dict[str, Any] = {}
    for key, value in container.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, prefix=f"{dotted}."))
        else:
            flat[dotted] = value
    return flat

"""The typed config boundary: one dataclass per config group with a fixed set of keys, the schema Hydra composes the
YAML under `sweep/conf/` into (structured configs, the primary-config schema: `conf/config.yaml` lists
``base_config`` first in its defaults; `conf/loss/wrapper/default.yaml` lists ``base_wrapper``), and the composition
itself (`compose_config`) with Hydra's and OmegaConf's errors as the one-line `ConfigError` (`config_error`).

Division of labour:

- The schema owns the *types*: a value of the wrong type (``trial.max_steps=abc``) or a key that does not exist
  (``trial.max_stepz=5``) is refused while Hydra composes (``+trial.max_stepz=5``, which Hydra adds even to a typed
  node, by `check_known_keys`), and `config_error` turns that into the one-line `ConfigError`; `python -m sweep`
  prints it as ``sweep: invalid config: KEY=VALUE: ...`` with exit code 2 (`sweep.app.main`).
- The YAML owns the *values*: every field here is ``MISSING`` (``???``) and each default is written once, in the
  group's YAML with its comment, never again in code (no ``cfg.x.get(key, default)``).
- Ranges and allowed names stay with the checks (``validate_*`` in `sweep.config.checks`, their choice tuples kept
  there, the losses' own checks). A choice is a ``str`` field, not an ``enum.Enum``: an enum would refuse
  ``model.kind=nope`` while Hydra composes, before the check that lists the choices in the project's words.

Typed: the root (``quiet``), ``paths``, ``model``, ``data`` (and its three splits), ``trial``, ``study`` (with its
sampler and pruner), ``tracking``, ``stats`` (with ``paired``), ``eval`` (with ``layer_grid``) and ``loss.wrapper``.

Loose on purpose (``Any``), where a schema type would replace a message the project gives (and its tests assert) or
refuse a form it accepts:

- ``name`` and ``study.name`` (``${name}``): a str field would turn ``name=nan`` or ``name=2024`` into a string, so the
  check that asks for a quoted name (``name='"2024"'``) could not fire;
- ``trial.eval_batch_size`` and ``study.pruner.min_resource``: ``auto`` or an integer (OmegaConf 2.3 has no union
  of str and int), checked by `require_auto_or_int`;
- ``study.pack_memory_gib``: a number of GiB or null; a float field would refuse ``lots`` while composing, before
  `validate_study` names it with its own message;
- set-valued keys that take a list or a comma string (``eval.layer_grid.layers``/``dims``,
  ``loss.wrapper.dims``/``weights``), parsed by `sweep.config.checks.parse_numbers`;
- ``eval.extra`` entries (their keys depend on ``kind``: checked by `sweep.evaluation.extra_sets.validate`),
  ``model.config_overrides`` (any Hugging Face config field) and ``study.search_space`` (nested like the config).

Untyped: ``loss`` itself (all but ``loss.wrapper``). Its keys depend on ``loss.name`` (``scale`` and ``temperature``
for MNRL, ``w1..w3`` and three scales for AnglE, a guide for GIST, ...), and ``loss.name`` may be changed by an
override or an experiment without changing the group option, so no single schema fits; the loss registry
(`sweep.losses.LOSSES`, each `LossSpec.check`) owns those keys and their checks.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import hydra
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException, ValidationError

from sweep.config.checks import CONFIG_DIR, ConfigError


@dataclass
class PathsConfig:
    root: str = MISSING


@dataclass
class ModelConfig:
    kind: str = MISSING
    name_or_path: str = MISSING
    prefer_local: bool = MISSING
    static_init: str = MISSING
    embedding_dim: int | None = MISSING
    max_seq_length: int = MISSING
    pooling: str = MISSING
    normalize: bool = MISSING
    num_layers: int | None = MISSING
    reinit: bool = MISSING
    config_overrides: dict[str, Any] = MISSING


@dataclass
class SplitConfig:
    hub_name: str | None = MISSING
    hub_subset: str | None = MISSING
    hub_split: str | None = MISSING
    local_file: str | None = MISSING
    columns: list[str] = MISSING
    max_samples: int | None = MISSING


@dataclass
class DataConfig:
    source: str = MISSING
    local_dir: str | None = MISSING
    seed: int = MISSING
    train: SplitConfig = field(default_factory=SplitConfig)
    validation: SplitConfig = field(default_factory=SplitConfig)
    test: SplitConfig = field(default_factory=SplitConfig)


@dataclass
class WrapperConfig:
    name: str | None = MISSING
    dims: Any = MISSING
    weights: Any = MISSING
    n_dims_per_step: int | None = MISSING
    n_layers_per_step: int = MISSING
    last_layer_weight: float = MISSING
    prior_layers_weight: float = MISSING
    kl_div_weight: float = MISSING
    kl_temperature: float = MISSING
    layer_weighting: str = MISSING


@dataclass
class TrialConfig:
    max_steps: int = MISSING
    batch_size: int = MISSING
    learning_rate: float = MISSING
    weight_decay: float = MISSING
    warmup_ratio: float = MISSING
    lr_scheduler: str = MISSING
    optimizer: str = MISSING
    batch_sampler: str = MISSING
    seed: int = MISSING
    save_model: str = MISSING
    eval_steps: int = MISSING
    logging_steps: int = MISSING
    eval_batch_size: Any = MISSING
    precision: str = MISSING
    device: str = MISSING
    torch_threads: int | None = MISSING


@dataclass
class SamplerConfig:
    name: str = MISSING
    seed: int | None = MISSING


@dataclass
class PrunerConfig:
    name: str = MISSING
    n_startup_trials: int = MISSING
    n_warmup_steps: int = MISSING
    min_resource: Any = MISSING
    reduction_factor: int = MISSING


@dataclass
class StudyConfig:
    name: Any = MISSING
    direction: str = MISSING
    metric: str = MISSING
    storage: str = MISSING
    n_trials: int | None = MISSING
    timeout: float | None = MISSING
    n_workers: int = MISSING
    pack: int = MISSING
    pack_memory_gib: Any = MISSING
    max_retries: int = MISSING
    max_failures: int | None = MISSING
    max_repeated_failures: int | None = MISSING
    heartbeat_interval: int = MISSING
    outage_timeout_s: float = MISSING
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    pruner: PrunerConfig = field(default_factory=PrunerConfig)
    search_space: dict[str, Any] = MISSING
    seeds: list[int] | None = MISSING


@dataclass
class TrackingConfig:
    uri: str = MISSING
    experiment_name: str = MISSING
    artifact_location: str = MISSING
    registered_model_name: str | None = MISSING
    outage_timeout_s: float = MISSING


@dataclass
class PairedConfig:
    enabled: bool = MISSING
    resamples: int = MISSING
    level: float = MISSING


@dataclass
class StatsConfig:
    enabled: bool = MISSING
    every_eval: bool = MISSING
    heldout_pairs: int = MISSING
    n_random_pairs: int = MISSING
    high_threshold: float = MISSING
    low_threshold: float = MISSING
    seed: int = MISSING
    histogram: bool = MISSING
    loss_scales: list[float] | None = MISSING
    paired: PairedConfig = field(default_factory=PairedConfig)


@dataclass
class LayerGridConfig:
    enabled: bool = MISSING
    layers: Any = MISSING
    dims: Any = MISSING


@dataclass
class EvalConfig:
    layer_grid: LayerGridConfig = field(default_factory=LayerGridConfig)
    objective: str = MISSING
    cell: str | None = MISSING
    extra: list[Any] | None = MISSING
    extra_every_eval: bool = MISSING


@dataclass
class SweepConfig:
    """The whole config of `python -m sweep` (`conf/config.yaml` and its groups)."""

    name: Any = MISSING
    quiet: bool = MISSING
    paths: PathsConfig = field(default_factory=PathsConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    loss: Any = MISSING
    trial: TrialConfig = field(default_factory=TrialConfig)
    study: StudyConfig = field(default_factory=StudyConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    stats: StatsConfig = field(default_factory=StatsConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)


def register() -> None:
    """Store the schemas in Hydra's ConfigStore under the names the YAML defaults lists use (idempotent)."""
    store = ConfigStore.instance()
    store.store(name="base_config", node=SweepConfig)
    store.store(group="loss/wrapper", name="base_wrapper", node=WrapperConfig)


# What a schema type asks for, by the words of OmegaConf's ValidationError.
EXPECTED = (
    ("to Integer", "must be an integer"),
    ("to Float", "must be a number"),
    ("valid bool", "must be true or false"),
    ("to string", "must be a string"),
    ("to String", "must be a string"),
    ("not Optional", "must not be null"),
    ("ListConfig", "must be a list"),
    ("DictConfig", "must be a mapping"),
)
SCHEMA_NOTE = "the type in sweep/config/schema.py"


def _override_values(overrides: Sequence[str]) -> dict[str, Any]:
    """{key: parsed value} of the command-line overrides that parse (flags such as ``--cfg`` are skipped)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser, values = OverridesParser.create(), {}
    for text in overrides:
        try:
            (override,) = parser.parse_overrides([text])
        except (HydraException, ValueError):
            continue
        values[override.key_or_group] = override.value()
    return values


def _first_line(error: BaseException) -> str:
    return (str(getattr(error, "msg", None) or error).strip().splitlines() or [type(error).__name__])[0]


def config_error(error: BaseException, overrides: Sequence[str] = ()) -> ConfigError | None:
    """The one-line `ConfigError` for what Hydra or OmegaConf raise while composing or setting the typed config
    (`sweep.config.schema`): a value of the wrong type, a key the schema does not have, an unknown option of a group,
    an override that does not parse. None for an exception that is neither Hydra's nor OmegaConf's (raise it as is)."""
    if isinstance(error, ConfigError):
        return error
    given = _override_values(overrides)
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, OmegaConfBaseException):
        cause = cause.__cause__ or cause.__context__
    if isinstance(cause, ValidationError) and cause.full_key:
        message = _first_line(cause)
        expected = next((words for marker, words in EXPECTED if marker in message), message)
        return ConfigError(cause.full_key, cause.value, f"{expected} ({SCHEMA_NOTE})")
    if isinstance(cause, (ConfigKeyError, ConfigAttributeError)) and cause.full_key:
        return ConfigError(
            cause.full_key, given.get(cause.full_key), "is not a key of the config (see `python -m sweep --cfg job`)"
        )
    if isinstance(error, MissingConfigException) and error.missing_cfg_file:
        group, _, option = error.missing_cfg_file.rpartition("/")
        options = [name for name in error.options or () if not name.startswith("base_")]
        listed = f": one of {', '.join(options)}" if options else ""
        return ConfigError(group.replace("/", ".") or "config", option, f"is not a config of this group{listed}")
    if cause is not None and cause.full_key:
        return ConfigError(cause.full_key, given.get(cause.full_key), _first_line(cause))
    if isinstance(error, OverrideParseException):
        key, _, value = str(getattr(error, "override", "") or "override").lstrip("+~").partition("=")
        return ConfigError(key, value, f"is not a valid Hydra override ({_first_line(error)})")
    if isinstance(error, (HydraException, OmegaConfBaseException)):
        found = re.search(r"'[+~]*([\w./@-]+)", str(error))  # the override or key the message quotes
        key = found.group(1).split("=")[0] if found else "config"
        return ConfigError(key, given.get(key), _first_line(error))
    return None


def compose_config(overrides: Sequence[str] = ()) -> DictConfig:
    """The project config with Hydra ``overrides``, outside ``python -m sweep`` (reports, the benchmark, tests).
    A value the schema refuses is a `ConfigError`."""
    try:
        with hydra.initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            cfg = hydra.compose("config", overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as error:
        raise config_error(error, overrides) from None
    check_known_keys(cfg)
    return cfg


def check_known_keys(cfg: DictConfig) -> None:
    """Refuse a key the schema does not declare (``+trial.max_stepz=5`` adds one that nothing would read)."""
    unknown = unknown_keys(cfg)
    if unknown:
        value = OmegaConf.select(cfg, unknown[0])
        raise ConfigError(unknown[0], value, "is not a key of the config (see `python -m sweep --cfg job`)")


def unknown_keys(cfg: DictConfig, prefix: str = "") -> list[str]:
    """Dotted keys of `cfg` that its schema does not declare: Hydra's ``+key=value`` adds a key even to a typed node,
    where it would be silently ignored."""
    found: list[str] = []
    schema = OmegaConf.get_type(cfg)
    declared = {f.name for f in dataclasses.fields(schema)} if dataclasses.is_dataclass(schema) else None
    for key in cfg.keys():
        dotted = f"{prefix}{key}"
        if declared is not None and key not in declared:
            found.append(dotted)
            continue
        node = cfg._get_node(key)
        if isinstance(node, DictConfig) and not node._is_missing() and not node._is_none():
            found += unknown_keys(node, f"{dotted}.")
    return found


register()

"""The typed config boundary: one dataclass per config group with a fixed set of keys, the schema Hydra composes the
YAML under `sweep/conf/` into (structured configs, the primary-config schema: `conf/config.yaml` lists
``base_config`` first in its defaults; `conf/loss/wrapper/default.yaml` lists ``/base_wrapper@_here_``,
`conf/loss/scale_schedule/default.yaml` ``/base_scale_schedule@_here_``: stored at the root, not in their groups,
so that `--help` does not list them as options). Composing it and turning Hydra's and OmegaConf's errors into the
one-line `ConfigError`: `sweep.config.composition`.

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
sampler, pruner and race), ``tracking``, ``stats`` (with ``paired``), ``eval`` (with ``layer_grid``),
``loss.wrapper`` and ``loss.scale_schedule``.

Loose on purpose (``Any``), where a schema type would replace a message the project gives (and its tests assert) or
refuse a form it accepts:

- ``name`` and ``study.name`` (``${name}``): a str field would turn ``name=nan`` or ``name=2024`` into a string, so the
  check that asks for a quoted name (``name='"2024"'``) could not fire;
- ``trial.eval_batch_size`` and ``study.pruner.min_resource``: ``auto`` or an integer (OmegaConf 2.3 has no union
  of str and int), checked by `require_auto_or_int`;
- ``study.n_workers``: ``auto`` (`sweep.config.workers`) or an integer, checked by `validate_study`;
- ``study.pack_memory_gib``: a number of GiB or null; a float field would refuse ``lots`` while composing, before
  `validate_study` names it with its own message;
- ``study.devices``: null, ``auto`` or a list of GPU indices or ``cuda:N`` names (no union type), checked by
  `sweep.config.devices.resolve_devices`;
- set-valued keys that take a list or a comma string (``eval.layer_grid.layers``/``dims``,
  ``loss.wrapper.dims``/``weights``), parsed by `sweep.config.checks.parse_numbers`;
- ``eval.extra`` entries (their keys depend on ``kind``: checked by `sweep.evaluation.extra_sets.validate`),
  ``model.config_overrides`` (any Hugging Face config field) and ``study.search_space`` (nested like the config).

Untyped for OmegaConf: ``loss`` itself (all but ``loss.wrapper`` and ``loss.scale_schedule``). Its keys depend on
``loss.name`` (``scale`` and ``temperature`` for MNRL, ``w1..w3`` and three scales for AnglE, a guide for GIST, ...),
and ``loss.name`` may be changed by an override or an experiment without changing the group option, so no single
schema fits; the loss rules (`sweep.losses.RULES`, each `LossRules.check`) own those keys and their checks. For
mypy the section is `LossConfig`: its name, wrapper and schedule typed, its other keys read by name.

Every function below the entry points takes the section it reads, annotated with its class here (a `DictConfig` of
this schema at run time, which these classes describe key for key), so that mypy checks the keys it reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


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
    learning_rate: float = MISSING


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
class ScaleScheduleConfig:
    spec: str | None = MISSING
    kind: str = MISSING
    min_scale: float | None = MISSING
    max_scale: float | None = MISSING
    period_steps: int | None = MISSING
    start_scale: float | None = MISSING
    end_scale: float | None = MISSING


class LossConfig(Protocol):
    """The `loss` section as the code reads it (an annotation only: OmegaConf keeps the section untyped, see the
    module docstring): `name`, `wrapper` and `scale_schedule` typed, any other key (``scale``, ``temperature``,
    AnglE's weights, GIST's guide, ...) read by name as the loss's own module declares it."""

    name: str
    wrapper: WrapperConfig
    scale_schedule: ScaleScheduleConfig

    def __getattr__(self, key: str) -> Any: ...

    def __getitem__(self, key: str) -> Any: ...

    def __contains__(self, key: object) -> bool: ...

    def get(self, key: str, default: Any = None) -> Any: ...


# The type of `SweepConfig.loss`: `LossConfig` for mypy, Any for OmegaConf (a protocol is no schema type).
if TYPE_CHECKING:
    LossSection = LossConfig
else:
    LossSection = Any


@dataclass
class TrialConfig:
    max_steps: int | None = MISSING
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
    early_stopping_patience: int | None = MISSING
    logging_steps: int = MISSING
    eval_batch_size: Any = MISSING
    precision: str = MISSING
    device: str = MISSING
    torch_threads: int | None = MISSING


@dataclass
class SamplerConfig:
    """Open: a `_target_` class's own arguments are added with ``+study.sampler.KEY=VALUE`` (`OPEN_SECTIONS`)."""

    _target_: str | None = MISSING
    name: str = MISSING
    seed: int | None = MISSING


@dataclass
class PrunerConfig:
    """Open like `SamplerConfig`."""

    _target_: str | None = MISSING
    name: str = MISSING
    n_startup_trials: int = MISSING
    n_warmup_steps: int = MISSING
    min_resource: Any = MISSING
    reduction_factor: int = MISSING


@dataclass
class RaceConfig:
    enabled: bool = MISSING
    min_seeds: int = MISSING
    stop_early: bool = MISSING


@dataclass
class StudyConfig:
    name: Any = MISSING
    direction: str = MISSING
    metric: str = MISSING
    storage: str = MISSING
    n_trials: int | None = MISSING
    timeout: float | None = MISSING
    n_workers: Any = MISSING
    pack: int = MISSING
    fuse: bool = MISSING
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
    devices: Any = MISSING
    race: RaceConfig = field(default_factory=RaceConfig)


@dataclass
class TrackingConfig:
    uri: str = MISSING
    experiment_name: str = MISSING
    artifact_location: str = MISSING
    registered_model_name: str | None = MISSING
    outage_timeout_s: float = MISSING
    system_metrics: bool = MISSING
    system_metrics_interval_s: float = MISSING


@dataclass
class PairedConfig:
    enabled: bool = MISSING
    resamples: int = MISSING
    level: float = MISSING
    margin: float = MISSING


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
    loss: LossSection = MISSING
    trial: TrialConfig = field(default_factory=TrialConfig)
    study: StudyConfig = field(default_factory=StudyConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    stats: StatsConfig = field(default_factory=StatsConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)


# Sections whose extra keys are arguments of a `_target_` class (its constructor refuses the ones it lacks).
OPEN_SECTIONS = ("study.sampler", "study.pruner")


def register() -> None:
    """Store the schemas in Hydra's ConfigStore under the names the YAML defaults lists use (idempotent)."""
    store = ConfigStore.instance()
    store.store(name="base_config", node=SweepConfig)
    # at the root, as base_config: a schema stored in a group would be listed by --help as one of its options
    store.store(name="base_wrapper", node=WrapperConfig)
    store.store(name="base_scale_schedule", node=ScaleScheduleConfig)


register()

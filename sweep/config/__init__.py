"""Layer 1, the config boundary: the typed schema (composition, Hydra's errors as `ConfigError`), the checks
vocabulary and section checks, input checks, scale vs temperature, the search space and what a config's databases
need (their drivers, the SQLite lock of Optuna's and MLflow's stores). Imports nothing from sweep but `sweep.names`
and `sweep.errors`. Importing any of it registers the schema with Hydra's ConfigStore, which the YAML's defaults
need."""

from sweep.config.checks import (
    AUTO_EVAL_BATCH_SIZE,
    CONFIG_DIR,
    eval_batch_size,
    flatten,
    parse_numbers,
    require_auto_or_int,
    require_choice,
    require_int,
    require_number,
)
from sweep.config.composition import check_known_keys, compose_config, config_error
from sweep.config.devices import Placement, place_workers, trial_records
from sweep.config.input_checks import (
    check_csv,
    check_device,
    check_optimizer_and_scheduler,
    check_swept_overrides,
)
from sweep.config.scale_temperature import scale_values
from sweep.config.schema import LossConfig, SweepConfig
from sweep.config.search_space import Space
from sweep.config.sqlite_lock import sqlite_init_lock

__all__ = [
    "AUTO_EVAL_BATCH_SIZE",
    "CONFIG_DIR",
    "LossConfig",
    "Placement",
    "Space",
    "SweepConfig",
    "check_csv",
    "check_device",
    "check_known_keys",
    "check_optimizer_and_scheduler",
    "check_swept_overrides",
    "compose_config",
    "config_error",
    "eval_batch_size",
    "flatten",
    "parse_numbers",
    "place_workers",
    "require_auto_or_int",
    "require_choice",
    "require_int",
    "require_number",
    "scale_values",
    "sqlite_init_lock",
    "trial_records",
]

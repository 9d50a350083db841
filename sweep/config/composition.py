"""Composing the config and refusing what the schema (`sweep.config.schema`) does not allow: Hydra's and OmegaConf's
errors as the one-line `ConfigError` (`config_error`), keys the schema does not declare (`check_known_keys`), and
`compose_config` for everything that composes outside ``python -m sweep`` (reports, the benchmark, tests)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any, cast

import hydra
import yaml
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException, ValidationError

from sweep.config.checks import CONFIG_DIR
from sweep.config.schema import OPEN_SECTIONS, SweepConfig, register
from sweep.errors import ConfigError

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


def yaml_error(error: yaml.YAMLError) -> ConfigError:
    """A config file that is not YAML (an experiment of `--config-dir`, say): the file, its line and column and what
    the parser expected, as one line (PyYAML's own error is a traceback through Hydra)."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or getattr(error, "context", None) or str(error).splitlines()[0]
    if mark is None:
        return ConfigError("config file", None, f"{problem}: not valid YAML, fix the file")
    return ConfigError(
        "config file", mark.name, f"line {mark.line + 1}, column {mark.column + 1}: {problem}: not valid YAML, fix it"
    )


SPACE = "study.search_space"


def _new_search_space_key(missing: str, given: dict[str, Any]) -> ConfigError | None:
    """A search-space key set from the command line that the composed config does not have yet (no experiment
    declares it), or a whole search space set over the empty one (``study.search_space={loss:{scale:[1,2]}}``): the
    line with Hydra's ``+`` that adds it."""
    if not missing.startswith(SPACE):
        return None
    related = (k for k in given if k == missing or k.startswith(f"{missing}.") or missing.startswith(f"{k}."))
    key = next(related, None)
    if key is None:
        return None
    value = given[key]
    return ConfigError(key, value, f"is a new key here: add it with Hydra's +, '+{key}={_override_text(value)}'")


def _grid_to_distribution(key: str, value: Any) -> str:
    """How to replace a grid (a list) of the search space by the distribution ``value`` from the command line."""
    return (
        "a grid (a list) is not replaced by a distribution in place: delete it, then add it, "
        f"'~{key}' '+{key}={_override_text(value)}' (or write it in an experiment file)"
    )


def _override_text(value: Any) -> str:
    """``value`` as Hydra's override grammar writes it (lists without quotes around numbers)."""
    if isinstance(value, list):
        return "[" + ",".join(_override_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_override_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return str(value)


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
        space = _new_search_space_key(cause.full_key, given)
        return space or ConfigError(cause.full_key, given.get(cause.full_key), not_a_key(cause.full_key))
    if isinstance(error, MissingConfigException) and error.missing_cfg_file:
        group, _, option = error.missing_cfg_file.rpartition("/")
        options = [name for name in error.options or () if not name.startswith("base_")]
        listed = f": one of {', '.join(options)}" if options else ""
        return ConfigError(group.replace("/", ".") or "config", option, f"is not a config of this group{listed}")
    if cause is not None and cause.full_key:
        if "Cannot merge DictConfig with ListConfig" in _first_line(cause) and cause.full_key.startswith(SPACE):
            value = given.get(cause.full_key)
            return ConfigError(cause.full_key, value, _grid_to_distribution(cause.full_key, value))
        return ConfigError(cause.full_key, given.get(cause.full_key), _first_line(cause))
    if isinstance(error, OverrideParseException):
        key, _, value = str(getattr(error, "override", "") or "override").lstrip("+~").partition("=")
        return ConfigError(key, value, f"is not a valid Hydra override ({_first_line(error)})")
    if isinstance(error, (HydraException, OmegaConfBaseException)):
        found = re.search(r"'[+~]*([\w./@-]+)", str(error))  # the override or key the message quotes
        key = found.group(1).split("=")[0] if found else "config"
        return ConfigError(key, given.get(key), _first_line(error))
    return None


def compose_config(overrides: Sequence[str] = ()) -> SweepConfig:
    """The project config with Hydra ``overrides``, outside ``python -m sweep`` (reports, the benchmark, tests).
    A value the schema refuses is a `ConfigError`."""
    register()
    try:
        with hydra.initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            cfg = hydra.compose("config", overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as error:
        raise config_error(error, overrides) or error from None
    except yaml.YAMLError as error:
        raise yaml_error(error) from None
    check_known_keys(cfg)
    return cast(SweepConfig, cfg)  # a DictConfig of the schema, which SweepConfig describes key for key


def check_known_keys(node: object) -> None:
    """Refuse a key the schema does not declare (``+trial.max_stepz=5`` adds one that nothing would read) in the config
    node `node` (the whole config, or a section)."""
    unknown = unknown_keys(node)
    if unknown:  # found in a DictConfig (`unknown_keys`)
        value = OmegaConf.select(cast(DictConfig, node), unknown[0])
        raise ConfigError(unknown[0], value, not_a_key(unknown[0]))


def schema_keys(node: object = None, prefix: str = "") -> list[str]:
    """Every dotted key the schema declares (`SweepConfig`, its sections' fields and their own)."""
    node = OmegaConf.structured(SweepConfig) if node is None else node
    keys = []
    for key in cast(DictConfig, node).keys():
        dotted = prefix + str(key)
        keys.append(dotted)
        child = cast(DictConfig, node)._get_node(key)
        if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
            keys.extend(schema_keys(child, f"{dotted}."))
    return keys


def not_a_key(key: str) -> str:
    """The message for a key the schema does not declare, with the nearest declared key when one is close."""
    import difflib

    nearest = difflib.get_close_matches(key, schema_keys(), n=1, cutoff=0.8)
    hint = f"did you mean {nearest[0]}? " if nearest else ""
    return f"is not a key of the config ({hint}see `python -m sweep --cfg job`)"


def unknown_keys(node: object, prefix: str = "") -> list[str]:
    """Dotted keys of the config node `node` that its schema does not declare: Hydra's ``+key=value`` adds a key even
    to a typed node, where it would be silently ignored."""
    if not isinstance(node, DictConfig):
        return []
    found: list[str] = []
    schema = OmegaConf.get_type(node)
    declared = {f.name for f in dataclasses.fields(schema)} if dataclasses.is_dataclass(schema) else None
    for key in node.keys():
        dotted = f"{prefix}{key!s}"
        if declared is not None and key not in declared and prefix.rstrip(".") not in OPEN_SECTIONS:
            found.append(dotted)
            continue
        child = node._get_node(key)
        if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
            found += unknown_keys(child, f"{dotted}.")
    return found

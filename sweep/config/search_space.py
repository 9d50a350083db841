"""The search space declared in `study.search_space`: grids (lists) or Optuna distributions over config keys.

The space is nested like the config, e.g. ``{loss: {scale: [0, 10, 20]}}``. A leaf is either a list (grid
values) or a mapping with ``type``: ``float`` (low, high, log, step), ``int`` (low, high, log, step) or
``categorical`` (choices). A trial asks for its values with `suggest`: a grid point's numbers from their range
(`grid_distribution`), so that Optuna and optuna-dashboard keep them as numbers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Mapping
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

from sweep.config.checks import plain_dict
from sweep.errors import ConfigError
from sweep.names import PARAM_SEED

Space = dict[str, "list[Any] | BaseDistribution"]
GridValue = None | bool | int | float | str


def parse(node: Mapping[str, Any], prefix: str = "study.search_space") -> Space:
    """Flatten the nested search space (`study.search_space`, a plain dict or its config node) into
    ``{dotted.key: list | distribution}``."""
    container = node if isinstance(node, dict) else plain_dict(node)
    space: Space = {}
    for name, leaf in _leaves(container, ""):
        where = f"{prefix}.{name}"
        if isinstance(leaf, list):
            if not leaf:
                raise ConfigError(where, leaf, "a grid needs at least one value")
            _check_grid(where, leaf)
            space[name] = list(leaf)
        else:
            space[name] = _distribution(where, leaf)
    return space


def _check_grid(where: str, grid: list[Any]) -> None:
    """Each grid value a number, string, boolean or null; a number finite; no value listed twice (a grid point
    trains once, so a repeat would silently be one trial fewer than the list reads)."""
    seen: set[tuple[bool, Any]] = set()
    for value in grid:
        if not isinstance(value, GridValue.__args__):
            raise ConfigError(where, grid, "grid values must be numbers, strings, booleans or null")
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(where, grid, f"{value} is not a finite number: list finite values only")
        key = (isinstance(value, bool), value)  # True is not the number 1 here, 1 and 1.0 are one value
        if key in seen:
            raise ConfigError(where, grid, f"lists {value!r} twice: list each value once (a point trains once)")
        seen.add(key)


def _leaves(node: dict, prefix: str):
    for key, value in node.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and "type" not in value:
            yield from _leaves(value, f"{name}.")
        else:
            yield name, value


def _distribution(where: str, spec: Any) -> BaseDistribution:
    if not isinstance(spec, dict):
        raise ConfigError(where, spec, "must be a list of grid values or {type: float|int|categorical, ...}")
    kind = spec["type"]
    try:
        if kind == "float":
            return FloatDistribution(
                float(spec["low"]), float(spec["high"]), log=bool(spec.get("log", False)), step=spec.get("step")
            )
        if kind == "int":
            return IntDistribution(
                int(spec["low"]), int(spec["high"]), log=bool(spec.get("log", False)), step=int(spec.get("step", 1))
            )
        if kind == "categorical":
            return CategoricalDistribution(list(spec["choices"]))
    except KeyError as missing:
        raise ConfigError(where, spec, f"type {kind} needs the key {missing}") from None
    except ValueError as error:
        raise ConfigError(where, spec, str(error)) from None
    raise ConfigError(f"{where}.type", kind, "must be float, int or categorical")


SCALE_KEYS = ("loss.scale", "loss.temperature")  # setting one clears the other (scale = 1/temperature)


def swept_keys(space: Space) -> set[str]:
    """The config keys every trial's point sets: the space's own, and with a scale or temperature both of them."""
    keys = set(space)
    return keys | set(SCALE_KEYS) if keys & set(SCALE_KEYS) else keys


def is_grid(space: Space) -> bool:
    return all(isinstance(values, list) for values in space.values())


def grid_size(space: Space) -> int:
    return math.prod(len(values) for values in space.values() if isinstance(values, list)) if is_grid(space) else 0


def grid_points(space: Space) -> list[dict[str, Any]]:
    """Every point of a grid, as {dotted.key: value}."""
    names = list(space)
    values = [space[name] for name in names]
    grids = [v for v in values if isinstance(v, list)]
    assert len(grids) == len(values), "grid_points of a space with distributions"
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*grids)]


def grid_distribution(values: list[GridValue]) -> BaseDistribution:
    """The distribution a queued grid value is suggested from: a list of numbers as their range, which Optuna keeps
    as numbers and optuna-dashboard's plots order as numbers (0, 1, 2, 10 rather than 0, 1, 10, 2); all ints as an
    IntDistribution, so that 20 stays 20. Booleans, strings, null or a mix of those are categorical choices."""
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) < len(values):
        return CategoricalDistribution(values)
    if all(isinstance(v, int) for v in numbers):
        return IntDistribution(int(min(numbers)), int(max(numbers)))
    return FloatDistribution(float(min(numbers)), float(max(numbers)))


def suggest(
    trial: optuna.Trial,
    space: Space,
    point: dict[str, Any] | None = None,
    categorical: Collection[str] = (),
) -> dict[str, Any]:
    """Ask the trial for one value per key. A grid trial (`point`: the grid point it was enqueued with, whose values
    Optuna takes as fixed) asks each grid key from `grid_distribution`, and the seed (`trial.seed`, a replicate, not
    a hyperparameter) from its one value: Optuna's parameter importances, and optuna-dashboard's, give a parameter
    with a single value no importance. The keys in `categorical` stay categorical choices: a study begun before
    grids were numeric has them so, and Optuna refuses another kind for a parameter of the same study. Outside a
    grid (a sampler draws the values) a list is categorical choices, so that only its values are drawn. Returns
    the grid's own values (20, not 20.0, when a mixed list's range is a FloatDistribution)."""
    params: dict[str, Any] = {}
    for name, spec in space.items():
        if not isinstance(spec, list):
            params[name] = _ask(trial, name, spec)
            continue
        distribution: BaseDistribution
        if point is None or name in categorical:
            distribution = CategoricalDistribution(spec)
        else:
            distribution = grid_distribution([point[name]] if name == PARAM_SEED else spec)
        value = _ask(trial, name, distribution)
        params[name] = value if isinstance(distribution, CategoricalDistribution) else spec[spec.index(value)]
    return params


def _ask(trial: optuna.Trial, name: str, spec: BaseDistribution) -> Any:
    if isinstance(spec, FloatDistribution):
        return trial.suggest_float(name, spec.low, spec.high, log=spec.log, step=spec.step)
    if isinstance(spec, IntDistribution):
        return trial.suggest_int(name, spec.low, spec.high, log=spec.log, step=spec.step)
    assert isinstance(spec, CategoricalDistribution)  # the only other kind built here
    return trial.suggest_categorical(name, spec.choices)


def candidate_points(space: Space, limit: int = 4096) -> list[dict[str, Any]]:
    """Points to validate before training: the whole grid when small, else every value of each key alone;
    for distributions, their bounds (and choices)."""
    values = {name: (spec if isinstance(spec, list) else _bounds(spec)) for name, spec in space.items()}
    if math.prod(len(v) for v in values.values()) <= limit:
        names = list(values)
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values.values())]
    return [{name: value} for name, options in values.items() for value in options]


def _bounds(spec: BaseDistribution) -> list[Any]:
    if isinstance(spec, CategoricalDistribution):
        return list(spec.choices)
    assert isinstance(spec, (FloatDistribution, IntDistribution))  # the kinds that `_distribution` builds
    return [spec.low, spec.high]

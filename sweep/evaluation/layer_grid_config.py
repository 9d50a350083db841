"""The layer grid's config, read without a model: the (layer, dim) sets of ``eval.layer_grid`` with their defaults,
and the checks of the `eval` section's grid, objective and cell against the model's shape and the pruner (the grid
itself, from one forward pass, is `sweep.evaluation.layer_grid`'s)."""

from __future__ import annotations

from sweep.config import EvalConfig, LayerGridConfig, ModelConfig, PrunerConfig, parse_numbers, require_choice
from sweep.errors import ConfigError
from sweep.evaluation.objective import CELL, GRID_OBJECTIVES, allowed_objectives
from sweep.inputs import model_shape


def grid_sets(grid: LayerGridConfig, model: ModelConfig) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (layers, dims) of `eval.layer_grid` (``grid``) for the `model` section, defaults filled in: every layer
    1..L, the full dimension."""
    shape = model_shape(model)
    layers = (
        parse_numbers("eval.layer_grid.layers", grid.layers)
        if grid.layers is not None
        else tuple(range(1, (shape.layers or 0) + 1))
    )
    dims = parse_numbers("eval.layer_grid.dims", grid.dims) if grid.dims is not None else (shape.dim,)
    return layers, dims


def validate_layer_grid(ev: EvalConfig, model: ModelConfig, pruner: PrunerConfig) -> None:
    """Check the `eval` section against the `model` section and `study.pruner`: layers within the model, dims within
    its dimension, the objective and its cell."""
    require_choice("eval.objective", ev.objective, allowed_objectives(ev))
    key, value = ("_target_", pruner._target_) if pruner._target_ else ("name", pruner.name)
    if ev.objective != "full" and value not in ("none", "optuna.pruners.NopPruner"):
        raise ConfigError(
            f"study.pruner.{key}",
            value,
            f"must be none with eval.objective={ev.objective}: the pruner sees the full model's Spearman",
        )
    if not ev.layer_grid.enabled:
        if ev.objective in GRID_OBJECTIVES and ev.objective != "full":
            raise ConfigError("eval.objective", ev.objective, "needs eval.layer_grid.enabled=true (else use full)")
        return
    if model.kind != "transformer":
        raise ConfigError(
            "eval.layer_grid.enabled", True, "needs model.kind=transformer (a static model has no layers)"
        )
    shape = model_shape(model)
    assert shape.layers is not None  # a transformer's shape has its layers
    layers, dims = grid_sets(ev.layer_grid, model)
    if any(not 0 <= layer <= shape.layers for layer in layers) or len(set(layers)) != len(layers):
        raise ConfigError(
            "eval.layer_grid.layers",
            ev.layer_grid.layers,
            f"must be distinct layers in 0..{shape.layers} (the model has {shape.layers} layers; 0 = embedding output)",
        )
    if any(not 1 <= dim <= shape.dim for dim in dims) or len(set(dims)) != len(dims):
        raise ConfigError(
            "eval.layer_grid.dims", ev.layer_grid.dims, f"must be distinct dims in 1..{shape.dim} (the model dimension)"
        )
    if ev.objective == "cell":
        match = CELL.match(str(ev.cell or ""))
        if not match or int(match[1]) not in layers or int(match[2]) not in dims:
            raise ConfigError(
                "eval.cell",
                ev.cell,
                f"must name a grid cell L{{layer}}_D{{dim}} with layer in {list(layers)} and dim in {list(dims)}",
            )

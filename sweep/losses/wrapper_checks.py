"""The checks of `loss.wrapper` (Matryoshka, AdaptiveLayer, Matryoshka2d; the wrapping itself is
`sweep.losses.wrappers`'): its name, dims, weights and per-step counts against the loss and the model's shape, read
without building the model."""

from __future__ import annotations

from typing import Any

from sweep.config import LossConfig, ModelConfig, parse_numbers, require_choice, require_int, require_number
from sweep.errors import ConfigError
from sweep.inputs import model_shape

WRAPPERS = ("matryoshka", "adaptive_layer", "matryoshka2d")
LAYER_WEIGHTINGS = ("uniform", "log", "linear")
DIM_WRAPPERS = ("matryoshka", "matryoshka2d")
LAYER_WRAPPERS = ("adaptive_layer", "matryoshka2d")


def _check_step(key: str, value: Any, count: int, what: str) -> None:
    if not (isinstance(value, int) and value == -1):  # -1: all of them
        require_int(key, value, minimum=1, maximum=count, note=f"or -1 for all; {what}")


def validate_wrapper(loss: LossConfig, model: ModelConfig, gradient_cache: bool) -> None:
    """Check `loss.wrapper` against the model: dims (positive, strictly decreasing, <= the model dimension),
    weights, per-step counts, layer counts (<= the model's layers) and the wrapper/loss/model compatibility."""
    wrapper = loss.wrapper
    if wrapper.name is None:
        return
    require_choice("loss.wrapper.name", wrapper.name, WRAPPERS)
    if wrapper.name in LAYER_WRAPPERS:
        if model.kind != "transformer":
            raise ConfigError(
                "loss.wrapper.name", wrapper.name, "needs model.kind=transformer (a static model has no layers)"
            )
        if gradient_cache:
            raise ConfigError(
                "loss.wrapper.name",
                wrapper.name,
                f"does not work with loss {loss.name} (gradient caching); use matryoshka or loss.name=mnrl",
            )
    shape = model_shape(model)
    if wrapper.name in DIM_WRAPPERS:
        dims = parse_numbers("loss.wrapper.dims", wrapper.dims)
        if len(set(dims)) != len(dims) or list(dims) != sorted(dims, reverse=True) or dims[-1] < 1:
            raise ConfigError(
                "loss.wrapper.dims",
                wrapper.dims,
                'must be distinct positive dims in decreasing order, e.g. "384,256,128,64"',
            )
        if dims[0] > shape.dim:
            raise ConfigError("loss.wrapper.dims", wrapper.dims, f"must be <= the model dimension {shape.dim}")
        if wrapper.weights is not None:
            weights = parse_numbers("loss.wrapper.weights", wrapper.weights, float)
            if len(weights) != len(dims) or min(weights) < 0 or max(weights) == 0:
                raise ConfigError(
                    "loss.wrapper.weights",
                    wrapper.weights,
                    f"must be {len(dims)} numbers >= 0 (one per dim), not all zero",
                )
        if wrapper.n_dims_per_step is not None:
            _check_step("loss.wrapper.n_dims_per_step", wrapper.n_dims_per_step, len(dims), f"{len(dims)} dims")
    if wrapper.name in LAYER_WRAPPERS:
        assert shape.layers is not None  # a transformer (checked above) has layers
        _check_step(
            "loss.wrapper.n_layers_per_step",
            wrapper.n_layers_per_step,
            shape.layers,
            f"the model has {shape.layers} layers",
        )
        for key in ("last_layer_weight", "prior_layers_weight", "kl_div_weight", "kl_temperature"):
            require_number(f"loss.wrapper.{key}", getattr(wrapper, key), low=0)
        require_choice("loss.wrapper.layer_weighting", wrapper.layer_weighting, LAYER_WEIGHTINGS)

"""Layer 4, the losses: one module per loss (its formula, checks and training columns, declared as a `LossSpec`),
the registry `loss.name` -> spec (`registry`), the wrappers any loss can be put in (`loss.wrapper`, wrappers.py) and
the temperature schedule a loss with one scale can follow (`loss.scale_schedule`, scale_schedule.py).

The public face: each name is imported from its module on first use (`sweep.lazy_face`), so that a report that only
reads a schedule's spec does not import the loss classes (and sentence-transformers with them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep import lazy_face

if TYPE_CHECKING:
    from sweep.losses.learnable_scale import ScaleClampCallback, learnable_scales
    from sweep.losses.registry import (
        LOSSES,
        build_loss,
        learning_rate_mapping,
        loss_values,
        schedule_callback,
        training_callbacks,
        validate_loss,
    )
    from sweep.losses.scale_schedule import ScaleSchedule
    from sweep.losses.scheduled_scale_callback import ScaleScheduleCallback
    from sweep.losses.spec import BaseModel, LossSpec
    from sweep.losses.wrappers import validate_wrapper, wrap

__all__ = [
    "LOSSES",
    "BaseModel",
    "LossSpec",
    "ScaleClampCallback",
    "ScaleSchedule",
    "ScaleScheduleCallback",
    "build_loss",
    "learnable_scales",
    "learning_rate_mapping",
    "loss_values",
    "schedule_callback",
    "training_callbacks",
    "validate_loss",
    "validate_wrapper",
    "wrap",
]

# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "learnable_scale": ("ScaleClampCallback", "learnable_scales"),
    "registry": (
        "LOSSES",
        "build_loss",
        "learning_rate_mapping",
        "loss_values",
        "schedule_callback",
        "training_callbacks",
        "validate_loss",
    ),
    "scale_schedule": ("ScaleSchedule",),
    "scheduled_scale_callback": ("ScaleScheduleCallback",),
    "spec": ("BaseModel", "LossSpec"),
    "wrappers": ("validate_wrapper", "wrap"),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)

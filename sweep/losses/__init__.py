"""Layer 3, the losses, in two halves keyed by the same `loss.name`s. What the validation pass reads imports no torch:
the config rules of every loss (`rules`: training columns from `columns`, parameter checks, derived keys), the checks
of the `loss` section (`loss_checks`) and of its wrapper (`wrapper_checks`), and the temperature schedules a loss with
one scale can follow (`loss.scale_schedule`, scale_schedule.py). What training builds: one module per loss class (its
formula and construction, declared as a `LossSpec`), the registry `loss.name` -> spec (`registry`), the wrappers any
loss can be put in (`loss.wrapper`, wrappers.py) and the trainer callbacks.

The public face: each name is imported from its module on first use (`sweep.lazy_face`), so that the validation pass
and a report that only reads a schedule's spec do not import the loss classes (and sentence-transformers with them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep import lazy_face

if TYPE_CHECKING:
    from sweep.losses.learnable_scale import ScaleClampCallback, learnable_scales
    from sweep.losses.loss_checks import loss_values, validate_loss
    from sweep.losses.mnrl import ScaledMultipleNegativesRankingLoss
    from sweep.losses.registry import LOSSES, build_loss, learning_rate_mapping, schedule_callback, training_callbacks
    from sweep.losses.rules import RULES, LossRules
    from sweep.losses.scale_schedule import ScaleSchedule, parse_spec
    from sweep.losses.scheduled_scale_callback import ScaleScheduleCallback
    from sweep.losses.spec import BaseModel, LossSpec
    from sweep.losses.wrapper_checks import validate_wrapper
    from sweep.losses.wrappers import wrap

__all__ = [
    "BaseModel",
    "LOSSES",
    "LossRules",
    "LossSpec",
    "RULES",
    "ScaleClampCallback",
    "ScaleSchedule",
    "ScaleScheduleCallback",
    "ScaledMultipleNegativesRankingLoss",
    "build_loss",
    "learnable_scales",
    "learning_rate_mapping",
    "loss_values",
    "parse_spec",
    "schedule_callback",
    "training_callbacks",
    "validate_loss",
    "validate_wrapper",
    "wrap",
]
# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "learnable_scale": (
        "ScaleClampCallback",
        "learnable_scales",
    ),
    "loss_checks": (
        "loss_values",
        "validate_loss",
    ),
    "mnrl": ("ScaledMultipleNegativesRankingLoss",),
    "registry": (
        "LOSSES",
        "build_loss",
        "learning_rate_mapping",
        "schedule_callback",
        "training_callbacks",
    ),
    "rules": (
        "LossRules",
        "RULES",
    ),
    "scale_schedule": (
        "ScaleSchedule",
        "parse_spec",
    ),
    "scheduled_scale_callback": ("ScaleScheduleCallback",),
    "spec": (
        "BaseModel",
        "LossSpec",
    ),
    "wrapper_checks": ("validate_wrapper",),
    "wrappers": ("wrap",),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)

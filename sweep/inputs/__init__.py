"""Layer 2, inputs: the base model (`model.*`: where it comes from and its shape, `model_source`; building it,
`model`; a trial's GPU memory estimated from its shape, `trial_memory`), the training and evaluation data
(`data.*`) and the study-wide tokenization cache.

The public face: each name is imported from its module on first use (`sweep.lazy_face`), so that a command
that only checks its config does not import what only training needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep import lazy_face

if TYPE_CHECKING:
    from sweep.inputs.data import DATA_SPLITS, load_all, load_split, resolve_source
    from sweep.inputs.model import build_model
    from sweep.inputs.model_source import (
        ModelShape,
        check_available,
        check_sequence_length,
        local_path,
        model_shape,
        resolve_path,
        saved_static_module,
    )
    from sweep.inputs.preprocess_cache import PreprocessCache
    from sweep.inputs.tracked_data import EVALUATION, TRAINING, TrackedSplit, split_name, tracked_split
    from sweep.inputs.trial_memory import estimated_trial_bytes

__all__ = [
    "DATA_SPLITS",
    "EVALUATION",
    "ModelShape",
    "PreprocessCache",
    "TRAINING",
    "TrackedSplit",
    "build_model",
    "check_available",
    "check_sequence_length",
    "estimated_trial_bytes",
    "load_all",
    "load_split",
    "local_path",
    "model_shape",
    "resolve_path",
    "resolve_source",
    "saved_static_module",
    "split_name",
    "tracked_split",
]
# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "data": (
        "DATA_SPLITS",
        "load_all",
        "load_split",
        "resolve_source",
    ),
    "model": ("build_model",),
    "model_source": (
        "ModelShape",
        "check_available",
        "check_sequence_length",
        "local_path",
        "model_shape",
        "resolve_path",
        "saved_static_module",
    ),
    "preprocess_cache": ("PreprocessCache",),
    "tracked_data": (
        "EVALUATION",
        "TRAINING",
        "TrackedSplit",
        "split_name",
        "tracked_split",
    ),
    "trial_memory": ("estimated_trial_bytes",),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)

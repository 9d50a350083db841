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
    from sweep.inputs.model_source import ModelShape, model_shape, resolve_path
    from sweep.inputs.preprocess_cache import PreprocessCache
    from sweep.inputs.trial_memory import estimated_trial_bytes

__all__ = [
    "DATA_SPLITS",
    "ModelShape",
    "PreprocessCache",
    "build_model",
    "estimated_trial_bytes",
    "load_all",
    "load_split",
    "model_shape",
    "resolve_path",
    "resolve_source",
]

# where each public name lives (tests/test_architecture.py checks that it lists exactly __all__)
_HOMES = {
    "data": ("DATA_SPLITS", "load_all", "load_split", "resolve_source"),
    "model": ("build_model",),
    "model_source": ("ModelShape", "model_shape", "resolve_path"),
    "preprocess_cache": ("PreprocessCache",),
    "trial_memory": ("estimated_trial_bytes",),
}
_MODULE_OF, __getattr__, __dir__ = lazy_face(__name__, _HOMES)

"""Layer 3, inputs: the base model (`model.*`), the training and evaluation data (`data.*`) and the study-wide
tokenization cache."""

from sweep.inputs.data import DATA_SPLITS, load_all, load_split, resolve_source
from sweep.inputs.model import ModelShape, build_model, model_shape, resolve_path
from sweep.inputs.preprocess_cache import PreprocessCache

__all__ = [
    "DATA_SPLITS",
    "ModelShape",
    "PreprocessCache",
    "build_model",
    "load_all",
    "load_split",
    "model_shape",
    "resolve_path",
    "resolve_source",
]

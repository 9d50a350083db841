"""The data of a trial as MLflow records it: each split (training rows, STSB validation and test, the held-out pairs,
the extra evaluation sets) as an ``mlflow.data`` dataset with a name, its source (the local file or the hub dataset)
and a digest of its rows, logged as an input of every trial run with the context ``training`` or ``evaluation``.
Nothing is uploaded: MLflow keeps the name, source, digest, schema and row count."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from datasets import Dataset
from mlflow.data.dataset_source import DatasetSource
from mlflow.data.huggingface_dataset import from_huggingface
from mlflow.data.huggingface_dataset_source import HuggingFaceDatasetSource
from mlflow.entities import Dataset as DatasetEntity
from mlflow.entities import DatasetInput, InputTag
from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

from sweep.inputs.data import SplitSource

TRAINING = "training"  # MLflow's dataset context values: the runs page shows them beside each dataset's name
EVALUATION = "evaluation"


def split_name(source: SplitSource, local_file: str | None) -> str:
    """A split's name in MLflow: the configured local file without its suffix, folders joined by ``-``
    (``captions30k/train.csv``: ``captions30k-train``; an absolute path: the file's stem), else the hub dataset's
    name, subset and split (``stsb-validation``)."""
    if source.local_file is not None:
        named = Path(local_file or source.local_file.name)
        return named.stem if named.is_absolute() else "-".join([*named.parent.parts, named.stem])
    assert source.hub is not None  # a source is a local file or a hub dataset
    name, subset, split = source.hub
    return "-".join(part for part in (name.rsplit("/", 1)[-1], subset, split) if part)


def _mlflow_source(source: SplitSource) -> DatasetSource:
    if source.hub is not None:
        name, subset, split = source.hub
        return HuggingFaceDatasetSource(path=name, config_name=subset, split=split)
    assert source.local_file is not None  # a source is a local file or a hub dataset
    from mlflow.data.dataset_source_registry import resolve_dataset_source

    return resolve_dataset_source(str(source.local_file))


@dataclass(frozen=True)
class TrackedSplit:
    """One split as MLflow records it: its name and digest (what a metric scored on it is linked to) and the run
    input that names it."""

    name: str
    digest: str
    input: DatasetInput


def tracked_split(dataset: Dataset, name: str, source: SplitSource, context: str) -> TrackedSplit:
    """`dataset` (the rows the trial uses) as an MLflow dataset input; its digest is MLflow's, computed from the
    rows (the first 10,000 and the row count)."""
    # MLflow's UserWarnings here are about models, not dataset records: that a local path matches its file source for
    # two URI schemes ("" and "file", the same class), and how a model signature with integer columns treats missing
    # values. They would be printed to the console at every study start.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tracked = from_huggingface(dataset, name=name, source=_mlflow_source(source))
        entity = DatasetEntity(**tracked.to_dict())  # its schema is inferred here
    return TrackedSplit(name, tracked.digest, DatasetInput(entity, tags=[InputTag(MLFLOW_DATASET_CONTEXT, context)]))

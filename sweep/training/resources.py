"""What a study loads once and shares between its trials: datasets (and their MLflow records), STSB evaluators, base
models with their tokenization cache, and each base model's step-0 evaluation; and, between trials, what keeps them
out of Python's garbage collections (`StudyResources.settle`)."""

from __future__ import annotations

import copy
import gc
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd
from datasets import Dataset
from omegaconf import DictConfig, ListConfig, OmegaConf
from sentence_transformers import SentenceTransformer

from sweep.config import DataConfig, EvalConfig, ModelConfig, TrialConfig, eval_batch_size
from sweep.evaluation import extra_sets, grid_sets, prediction_table, score_pairs, stsb_layer_grid
from sweep.inputs import EVALUATION, TRAINING, PreprocessCache, TrackedSplit, build_model, split_name, tracked_split
from sweep.inputs import data as data_module
from sweep.stats import ConcentrationProbe, EmbeddingKeepingEvaluator, Encodings
from sweep.training.trial_settings import TrialSettings

if TYPE_CHECKING:  # a split's input record is built in sweep.inputs.tracked_data
    from mlflow.entities import DatasetInput

VALIDATION = "stsb_validation"
TEST = "stsb_test"


def device_of(trial: TrialConfig) -> str | None:
    """The device of the `trial` section for sentence-transformers (None: its own choice, ``auto``)."""
    return None if trial.device == "auto" else trial.device


def _cache_key(*parts: Any) -> str:
    return json.dumps(
        [OmegaConf.to_container(p, resolve=True) if isinstance(p, (DictConfig, ListConfig)) else p for p in parts],
        sort_keys=True,
    )


def stsb_evaluator(dataset: Dataset, name: str, batch_size: int) -> EmbeddingKeepingEvaluator:
    """sentence-transformers' STSB evaluator, cosine Spearman as its primary metric. Its columns are handed over
    as plain lists: a dataset's column is a lazy view that every evaluation would convert again (about 10 ms per
    column and call)."""
    s1, s2, score = dataset.column_names
    columns = dataset.to_dict()
    return EmbeddingKeepingEvaluator(
        columns[s1],
        columns[s2],
        columns[score],
        batch_size=batch_size,
        main_similarity="cosine",
        name=name,
        write_csv=False,
    )


def spearman(evaluator: EmbeddingKeepingEvaluator, model: SentenceTransformer, step: int = -1) -> float:
    """The evaluator's cosine Spearman; `step` (the training step it scores) goes with it onto the model's card."""
    return float(evaluator(model, steps=step)[f"{evaluator.name}_spearman_cosine"])


@dataclass(frozen=True)
class InitialEvaluation:
    """What the untrained base model gives at step 0: the same for every trial that copies it."""

    validation_spearman: float
    encodings: Encodings | None  # for the ``_init`` statistics
    layer_grid: pd.DataFrame | None
    predictions: dict[str, pd.DataFrame]  # per split (validation, test): the gold/cosine table of each pair


@dataclass(frozen=True)
class TrackedData:
    """A trial's datasets as MLflow records them, each with the prefix of the metric names scored on it."""

    splits: list[tuple[TrackedSplit, str | None]]
    training: dict[str, str]  # the training data as a model card names it: its name, and its hub id when read there

    @property
    def inputs(self) -> list[DatasetInput]:
        return [split.input for split, _ in self.splits]

    def scored_on(self, metric: str) -> TrackedSplit | None:
        """The dataset a metric was computed on (``stsb_test_spearman``: the STSB test split), if one."""
        return next((split for split, prefix in self.splits if prefix and metric.startswith(prefix)), None)


def track_data(data: DataConfig, splits: dict[str, Dataset], extra: extra_sets.ExtraEvaluators) -> TrackedData:
    """The training rows, STSB validation and test, the held-out pairs and the extra sets as MLflow datasets
    (``data``: the `data` section)."""
    sources = {split: data_module.resolve_source(data, split) for split in data_module.DATA_SPLITS}
    names = {
        split: split_name(source, data_module.split_spec(data, split).local_file) for split, source in sources.items()
    }
    tracked: list[tuple[TrackedSplit, str | None]] = [
        (tracked_split(splits["train"], names["train"], sources["train"], TRAINING), "train_loss"),
        (tracked_split(splits["validation"], names["validation"], sources["validation"], EVALUATION), VALIDATION),
        (tracked_split(splits["test"], names["test"], sources["test"], EVALUATION), TEST),
    ]
    if "heldout" in splits:  # the statistics' positive and negative pairs
        tracked.append(
            (tracked_split(splits["heldout"], f"{names['train']}-heldout", sources["train"], EVALUATION), None)
        )
    for name, (dataset, source) in extra.sets.items():
        tracked.append((tracked_split(dataset, name, source, EVALUATION), f"{name}_"))
    hub = sources["train"].hub
    return TrackedData(tracked, {"name": names["train"], **({"id": hub[0]} if hub else {})})


@dataclass
class StudyResources:
    """What a study loads, tokenizes and evaluates once and shares across its trials: datasets, evaluators, base
    models, the tokenized batches of each base model and each base model's step-0 evaluation."""

    _datasets: dict[str, dict[str, Dataset]] = field(default_factory=dict)
    _models: dict[str, SentenceTransformer] = field(default_factory=dict)
    _evaluators: dict[str, tuple[EmbeddingKeepingEvaluator, EmbeddingKeepingEvaluator]] = field(default_factory=dict)
    _preprocess: dict[str, PreprocessCache] = field(default_factory=dict)
    _initial: dict[str, InitialEvaluation] = field(default_factory=dict)
    _tracked: dict[str, TrackedData] = field(default_factory=dict)
    extra: extra_sets.ExtraCache = field(default_factory=extra_sets.ExtraCache)
    _settled: int = 0  # how many entries were loaded when the heap was last frozen (`settle`)

    def _loaded(self) -> int:
        caches = (self._datasets, self._models, self._evaluators, self._initial, self._tracked)
        return sum(len(cache) for cache in caches)

    def settle(self) -> None:
        """Between trials: once something new was loaded, collect the garbage and move every object left to the
        collector's permanent generation (`gc.freeze`), so that later collections skip the study's resources.

        Why: the transformers trainer collects garbage before every training (accelerate's ``free_memory``), and
        with the datasets, models and tokenized batches of a study in the heap that one call took about 0.5 s of a
        10 s CPU trial. The collection here runs once per newly loaded entry (a base model per seed, say), not once
        per trial. Frozen objects are still freed when their last reference goes; only cycles among them wait for
        `release`."""
        if self._loaded() != self._settled:
            gc.collect()
            gc.freeze()
            self._settled = self._loaded()

    def release(self) -> None:
        """At the study's end: give what `settle` froze back to the collector (the next study in this process, a
        Hydra multirun's next job, loads its own)."""
        gc.unfreeze()
        self._settled = 0

    def datasets(self, data: DataConfig, heldout_pairs: int) -> dict[str, Dataset]:
        key = _cache_key(data, heldout_pairs)
        if key not in self._datasets:
            self._datasets[key] = data_module.load_all(data, heldout_pairs)
        return self._datasets[key]

    def tracked_data(self, data: DataConfig, heldout_pairs: int, ev: EvalConfig, batch_size: int) -> TrackedData:
        """The trial's datasets as MLflow records them (`track_data`), built once per distinct data config (the
        `data` section, `stats.heldout_pairs`, the extra sets of the `eval` section scored in ``batch_size``)."""
        key = _cache_key(data, heldout_pairs, ev.extra)
        if key not in self._tracked:
            splits = self.datasets(data, heldout_pairs)
            self._tracked[key] = track_data(data, splits, self.extra.get(ev, data, batch_size))
        return self._tracked[key]

    def evaluators(
        self, data: DataConfig, heldout_pairs: int, batch_size: int
    ) -> tuple[EmbeddingKeepingEvaluator, EmbeddingKeepingEvaluator]:
        key = _cache_key(data, heldout_pairs, batch_size)
        if key not in self._evaluators:
            splits = self.datasets(data, heldout_pairs)
            self._evaluators[key] = (
                stsb_evaluator(splits["validation"], VALIDATION, batch_size),
                stsb_evaluator(splits["test"], TEST, batch_size),
            )
        return self._evaluators[key]

    def model(self, model: ModelConfig, seed: int, device: str | None) -> SentenceTransformer:
        """A fresh copy of the base model (random initialisations depend on the trial seed) whose ``preprocess``
        reuses the batches earlier copies tokenized."""
        key = _cache_key(model, seed, device)
        if key not in self._models:
            self._models[key] = build_model(model, seed=seed, device=device)
            self._preprocess[key] = PreprocessCache()
        return self._preprocess[key].install(copy.deepcopy(self._models[key]))

    def initial_evaluation(
        self,
        settings: TrialSettings,
        model: SentenceTransformer,
        evaluators: tuple[EmbeddingKeepingEvaluator, EmbeddingKeepingEvaluator],
        validation_pairs: Dataset,
        probe: ConcentrationProbe | None,
    ) -> InitialEvaluation:
        """Step-0 validation Spearman, ``_init`` encodings, layer grid and per-pair predictions on validation and
        test (``evaluators``) of ``model``, an untouched copy of the base model of the trial's (`model`,
        `trial.seed`): computed by the first trial, reused by the others."""
        validation, test = evaluators
        base, trial, layer_grid_config = settings.model, settings.trial, settings.eval.layer_grid
        key = _cache_key(
            base, trial.seed, device_of(trial), settings.data, settings.stats, layer_grid_config, trial.eval_batch_size
        )
        if key not in self._initial:
            value = spearman(validation, model, step=0)
            predictions = {"validation": prediction_table(validation), "test": score_pairs(test, model)}
            encodings = probe.encode(model, validation) if probe is not None else None
            layer_grid = None
            if layer_grid_config.enabled:
                grid = grid_sets(layer_grid_config, base)
                layer_grid = stsb_layer_grid(model, validation_pairs, grid, eval_batch_size(trial, base.kind))
            self._initial[key] = InitialEvaluation(value, encodings, layer_grid, predictions)
        return self._initial[key]

"""Measure similarity-concentration statistics of a trial's model and log them to MLflow."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from sweep.config import LossConfig, StatsConfig, plain_dict
from sweep.loggers import TrialLogger
from sweep.losses import learnable_scales
from sweep.stats.concentration import at_scale, concentration_statistics, in_batch_statistics, loss_metric
from sweep.stats.histogram import histogram_figure

HISTOGRAM_BINS = np.linspace(-1.0, 1.0, 81)


class EmbeddingKeepingEvaluator(EmbeddingSimilarityEvaluator):
    """sentence-transformers' STSB evaluator that keeps the embeddings of its last call, so the
    statistics reuse them instead of encoding the evaluation sentences again."""

    # sentence-transformers' own __call__ already narrows BaseEvaluator's `model: BaseModel` to SentenceTransformer
    def __call__(self, model: SentenceTransformer, *args: Any, **kwargs: Any) -> dict[str, float]:  # type: ignore[override]
        self.last_embeddings: list[np.ndarray] = []
        return super().__call__(model, *args, **kwargs)

    def embed_inputs(self, model: SentenceTransformer, sentences: Any, **kwargs: Any) -> np.ndarray:
        embeddings = super().embed_inputs(model, sentences, **kwargs)
        self.last_embeddings.append(embeddings)
        return embeddings


@dataclass(frozen=True)
class Encodings:
    """Embeddings of one model state: the STSB evaluation pairs with their gold scores, and held-out training
    pairs (``train_anchors``, ``train_positives``, ``train_negatives``: a list, one array per hard-negative column;
    empty without a held-out slice). ``statistics``: what `ConcentrationProbe.statistics` computed on them, by
    settings (the untrained model's encodings serve every trial of a study)."""

    sentences1: np.ndarray
    sentences2: np.ndarray
    scores: np.ndarray
    train: dict[str, Any]
    statistics: dict[tuple[Any, ...], tuple[dict[str, float], dict[str, np.ndarray]]] = field(
        default_factory=dict, compare=False, repr=False
    )


def heldout_pairs(heldout: Dataset | None, high_threshold: float) -> list[list[str]] | None:
    """The text columns of the held-out slice, in the loss's order: anchors, positives, then any hard negatives;
    with a score column, only the rows whose score marks them positive (and only the two text columns). Plain
    lists: a dataset's column is a lazy view that each encoding would iterate row by row."""
    if heldout is None or len(heldout) == 0:
        return None
    columns = [c for c in heldout.column_names if c not in ("score", "label")]
    if "score" in heldout.column_names:
        heldout, columns = heldout.filter(lambda row: row["score"] >= high_threshold), columns[:2]
    table = heldout.to_dict()
    return [table[c] for c in columns]


def loss_scales(stats: StatsConfig, search_space: Mapping[str, Any], loss: LossConfig) -> list[float]:
    """The scales at which the held-out batches' loss is measured: ``stats.loss_scales`` if set, else the study's
    grid (`study.search_space`) of ``loss.scale`` (or of ``loss.temperature``, as 1/t), else the trial's own scale
    (of the `loss` section)."""
    if stats.loss_scales is not None:
        return [float(s) for s in stats.loss_scales]
    grid = plain_dict(search_space).get("loss", {})
    if isinstance(grid.get("scale"), list):
        return sorted(float(s) for s in grid["scale"])
    if isinstance(grid.get("temperature"), list):
        return sorted(1.0 / float(t) for t in grid["temperature"] if t > 0)
    scale = loss.get("scale")
    return [float(scale)] if isinstance(scale, (int, float)) else []


class ConcentrationProbe:
    """Computes the sim_* statistics for one trial at a given step and logs metrics, JSON and a histogram.

    ``scale`` is a number or a function returning the loss's current scale (a learned one: :meth:`follow`);
    ``similarity`` is the loss's (``cosine`` or ``dot``)."""

    def __init__(
        self,
        stats: StatsConfig,
        heldout: Dataset | None,
        batch_size: int,
        scale: float | Callable[[], float],
        eval_batch_size: int,
        similarity: str = "cosine",
        loss_scales: Sequence[float] = (),
    ) -> None:
        self.stats, self.batch_size, self.scale, self.eval_batch_size = stats, batch_size, scale, eval_batch_size
        self.similarity, self.loss_scales = similarity, tuple(loss_scales)
        self.pairs = heldout_pairs(heldout, stats.high_threshold)

    def current_scale(self) -> float:
        return float(self.scale() if callable(self.scale) else self.scale)

    def follow(self, loss: torch.nn.Module, scheduled: Callable[[], float] | None = None) -> None:
        """Read the scale at each measurement from ``scheduled`` (a scale schedule's current scale), or from
        ``loss`` when it learns it."""
        learned = learnable_scales(loss)
        if scheduled is not None:
            self.scale = scheduled
        elif learned:
            self.scale = lambda: float(learned[0].scale.detach())

    def encode_heldout(self, model: SentenceTransformer) -> dict[str, Any]:
        """The held-out texts encoded by ``model`` (empty without a held-out slice)."""
        if self.pairs is None:
            return {}
        encoded = [model.encode(texts, batch_size=self.eval_batch_size, convert_to_numpy=True) for texts in self.pairs]
        return {"train_anchors": encoded[0], "train_positives": encoded[1], "train_negatives": encoded[2:]}

    def encode(self, model: SentenceTransformer, evaluator: EmbeddingKeepingEvaluator) -> Encodings:
        """The embeddings the statistics need: ``evaluator``'s last call (which must be on ``model``) and the
        held-out training pairs, encoded now."""
        embeddings1, embeddings2 = evaluator.last_embeddings
        scores = np.asarray(evaluator.scores, dtype=np.float64)
        return Encodings(embeddings1, embeddings2, scores, self.encode_heldout(model))

    def log_losses(self, model: SentenceTransformer, run: TrialLogger, step: int) -> dict[str, float]:
        """Only the held-out batches' loss at every scale of ``loss_scales`` (``sim_loss_at_scale_*``), at ``step``."""
        train = self.encode_heldout(model)
        if not train or not self.loss_scales:
            return {}
        in_batch = in_batch_statistics(
            train["train_anchors"],
            train["train_positives"],
            self.batch_size,
            self.current_scale(),
            self.stats.seed,
            negatives=train["train_negatives"],
            similarity=self.similarity,
            loss_scales=self.loss_scales,
        )
        metrics = {loss_metric(s): value for s, value in in_batch["loss_at_scale"].items()}
        run.log_metrics(metrics, step=step)
        return metrics

    def measure(
        self,
        model: SentenceTransformer,
        evaluator: EmbeddingKeepingEvaluator,
        run: TrialLogger,
        step: int,
        suffix: str = "",
    ) -> dict[str, float]:
        """Statistics of ``model`` from the embeddings of ``evaluator``'s last call (which must be on ``model``)."""
        return self.log(self.encode(model, evaluator), run, step, suffix)

    def statistics(self, encodings: Encodings) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        """`concentration_statistics` of ``encodings`` at the current scale. Encodings that several trials share
        (the untrained model's, at step 0) keep what the first trial computed, and a later trial only moves the
        softmax metrics to its own scale (`at_scale`): the rest is the embeddings' own."""
        stats, scale = self.stats, self.current_scale()
        thresholds = (stats.high_threshold, stats.low_threshold)
        key = (self.batch_size, self.similarity, self.loss_scales, *thresholds, stats.n_random_pairs, stats.seed)
        if key in encodings.statistics:
            metrics, distributions = encodings.statistics[key]
            if encodings.train:
                metrics = at_scale(
                    metrics,
                    batch_size=self.batch_size,
                    scale=scale,
                    similarity=self.similarity,
                    seed=stats.seed,
                    **encodings.train,
                )
            return metrics, distributions
        computed = concentration_statistics(
            encodings.sentences1,
            encodings.sentences2,
            encodings.scores,
            batch_size=self.batch_size,
            scale=scale,
            similarity=self.similarity,
            loss_scales=self.loss_scales,
            high_threshold=stats.high_threshold,
            low_threshold=stats.low_threshold,
            n_random_pairs=stats.n_random_pairs,
            seed=stats.seed,
            **encodings.train,
        )
        encodings.statistics[key] = computed
        return computed

    def log(self, encodings: Encodings, run: TrialLogger, step: int, suffix: str = "") -> dict[str, float]:
        """Compute the statistics of ``encodings`` and log metrics, JSON and histogram at ``step``."""
        metrics, distributions = self.statistics(encodings)
        # what pos/neg rest on: the held-out rows left by the cap on their share, of scored rows the positives
        # (a copy: the statistics may be the ones cached on shared encodings)
        metrics = {**metrics, "sim_heldout_pairs": float(len(encodings.train.get("train_anchors", ())))}
        named = {f"{key}{suffix}": value for key, value in metrics.items()}
        run.log_metrics(named, step=step)
        label = suffix.lstrip("_") or f"step{step}"
        run.log_dict(
            {
                "step": step,
                "metrics": metrics,
                "histogram_bins": HISTOGRAM_BINS.tolist(),
                "histograms": {
                    name: np.histogram(values, bins=HISTOGRAM_BINS)[0].tolist()
                    for name, values in distributions.items()
                },
            },
            f"concentration/{label}.json",
        )
        if self.stats.histogram:
            figure = histogram_figure(
                distributions, title=f"cosine similarities, scale {self.current_scale():g}, {label}"
            )
            run.log_figure(figure, f"concentration/{label}.png")  # buffered through a tracking outage
        return named

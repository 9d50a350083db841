"""Measure similarity-concentration statistics of a trial's model and log them to MLflow."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from datasets import Dataset
from omegaconf import DictConfig
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from sweep.concentration import concentration_statistics, histogram_figure
from sweep.tracking import TrialRun

HISTOGRAM_BINS = np.linspace(-1.0, 1.0, 81)


class EmbeddingKeepingEvaluator(EmbeddingSimilarityEvaluator):
    """sentence-transformers' STSB evaluator that keeps the embeddings of its last call, so the
    statistics reuse them instead of encoding the evaluation sentences again."""

    def __call__(self, model: SentenceTransformer, *args: Any, **kwargs: Any) -> dict[str, float]:
        self.last_embeddings: list[np.ndarray] = []
        return super().__call__(model, *args, **kwargs)

    def embed_inputs(self, model: SentenceTransformer, sentences: Any, **kwargs: Any) -> np.ndarray:
        embeddings = super().embed_inputs(model, sentences, **kwargs)
        self.last_embeddings.append(embeddings)
        return embeddings


@dataclass(frozen=True)
class Encodings:
    """Embeddings of one model state: the STSB evaluation pairs with their gold scores, and held-out training
    pairs (``train_anchors``, ``train_positives``; empty without a held-out slice)."""

    sentences1: np.ndarray
    sentences2: np.ndarray
    scores: np.ndarray
    train: dict[str, np.ndarray]


def heldout_pairs(heldout: Dataset | None, high_threshold: float) -> tuple[list[str], list[str]] | None:
    """(anchor, positive) texts of the held-out slice: the first two columns; with a score column, only
    the rows whose score marks them positive."""
    if heldout is None or len(heldout) == 0:
        return None
    first, second = heldout.column_names[:2]
    if "score" in heldout.column_names:
        heldout = heldout.filter(lambda row: row["score"] >= high_threshold)
    return heldout[first], heldout[second]


class ConcentrationProbe:
    """Computes the sim_* statistics for one trial at a given step and logs metrics, JSON and a histogram."""

    def __init__(
        self, stats: DictConfig, heldout: Dataset | None, batch_size: int, scale: float, eval_batch_size: int
    ) -> None:
        self.stats, self.batch_size, self.scale, self.eval_batch_size = stats, batch_size, scale, eval_batch_size
        self.pairs = heldout_pairs(heldout, stats.high_threshold)

    def encode(self, model: SentenceTransformer, evaluator: EmbeddingKeepingEvaluator) -> Encodings:
        """The embeddings the statistics need: ``evaluator``'s last call (which must be on ``model``) and the
        held-out training pairs, encoded now."""
        train = {}
        if self.pairs is not None:
            anchors, positives = self.pairs
            train = {
                "train_anchors": model.encode(anchors, batch_size=self.eval_batch_size, convert_to_numpy=True),
                "train_positives": model.encode(positives, batch_size=self.eval_batch_size, convert_to_numpy=True),
            }
        embeddings1, embeddings2 = evaluator.last_embeddings
        return Encodings(embeddings1, embeddings2, np.asarray(evaluator.scores, dtype=np.float64), train)

    def measure(
        self,
        model: SentenceTransformer,
        evaluator: EmbeddingKeepingEvaluator,
        run: TrialRun,
        step: int,
        suffix: str = "",
    ) -> dict[str, float]:
        """Statistics of ``model`` from the embeddings of ``evaluator``'s last call (which must be on ``model``)."""
        return self.log(self.encode(model, evaluator), run, step, suffix)

    def log(self, encodings: Encodings, run: TrialRun, step: int, suffix: str = "") -> dict[str, float]:
        """Compute the statistics of ``encodings`` and log metrics, JSON and histogram at ``step``."""
        metrics, distributions = concentration_statistics(
            encodings.sentences1,
            encodings.sentences2,
            encodings.scores,
            batch_size=self.batch_size,
            scale=self.scale,
            high_threshold=self.stats.high_threshold,
            low_threshold=self.stats.low_threshold,
            n_random_pairs=self.stats.n_random_pairs,
            seed=self.stats.seed,
            **encodings.train,
        )
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
            figure = histogram_figure(distributions, title=f"cosine similarities, scale {self.scale:g}, {label}")
            run.client.log_figure(run.run_id, figure, f"concentration/{label}.png")
        return named

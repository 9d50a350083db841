"""Tokenize once per study: a memo of ``SentenceTransformer.preprocess`` shared by the trials of a study.

The trials of a study train copies of one base model on one dataset, and with the same seed the trainer draws the
same batches in the same order; the evaluators encode the same STSB sentences in the same length-sorted batches.
So every trial after the first asks ``preprocess`` for exactly the batches an earlier trial already tokenized.
``PreprocessCache.install(model)`` makes the model's ``preprocess`` (which both the trainer's data collator and
``model.encode`` call) look the batch up first. Tokenization depends on the tokenizer and its settings only, never
on the weights, so one cache serves every copy of one base model; ``StudyResources`` keeps one cache per base model.

No library memo fits: ``functools.lru_cache`` needs hashable arguments (a batch is a list) and would call the
first model's bound method forever, keeping that trial's model alive.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from sentence_transformers import SentenceTransformer

MAX_BATCHES = 20_000  # ~ 60 studies' worth of 300-step trials with 3 text columns; a few hundred MB at most


class PreprocessCache:
    """Batch-level memo of ``preprocess(inputs, prompt=None, **kwargs)``; first-in, first-out beyond ``max_batches``."""

    def __init__(self, max_batches: int = MAX_BATCHES) -> None:
        self.max_batches = max_batches
        self._batches: dict[Hashable, dict[str, Any]] = {}
        self.hits = 0
        self.misses = 0

    def install(self, model: SentenceTransformer) -> SentenceTransformer:
        """Route ``model.preprocess`` (an instance attribute shadowing the method) through the cache."""
        model.preprocess = self._wrap(model.preprocess)  # type: ignore[method-assign]  # shadowing it is the point
        return model

    def _wrap(self, preprocess: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        def cached(inputs: Sequence[Any], prompt: str | None = None, **kwargs: Any) -> dict[str, Any]:
            key = _key(inputs, prompt, kwargs)
            if key is None:  # images, dicts: not worth hashing, never repeated in this project's data
                return preprocess(inputs, prompt=prompt, **kwargs)
            features = self._batches.get(key)
            if features is None:
                self.misses += 1
                features = preprocess(inputs, prompt=prompt, **kwargs)
                if len(self._batches) >= self.max_batches:
                    del self._batches[next(iter(self._batches))]
                self._batches[key] = features
            else:
                self.hits += 1
            # A fresh dict per call: modules add their outputs (token_embeddings, sentence_embedding) to it.
            return dict(features)

        return cached


def _key(inputs: Sequence[Any], prompt: str | None, kwargs: dict[str, Any]) -> Hashable | None:
    """A hashable key for a batch of texts (or text tuples) and the call's options; None when not hashable."""
    if not all(isinstance(item, (str, tuple)) for item in inputs):
        return None
    key = (tuple(inputs), prompt, tuple(sorted(kwargs.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key

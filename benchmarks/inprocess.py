"""What the in-process measurements (items 5 and 6) share: quiet libraries, MiniLM, the STSB pairs, a timer."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from benchmarks.settings import Settings

if TYPE_CHECKING:
    from datasets import Dataset

    from sweep.config.schema import DataConfig

P = ParamSpec("P")
T = TypeVar("T")


def quiet_libraries() -> None:
    """No progress bars or load reports from the in-process measurements (items 5 and 6)."""
    for name in ("transformers", "sentence_transformers", "datasets"):
        logging.getLogger(name).setLevel(logging.ERROR)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # before tokenizers is first imported
    # datasets and transformers are slow imports: only once a run starts, not for --help
    import datasets
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    datasets.disable_progress_bars()


def minilm_overrides(s: Settings) -> list[str]:
    """MiniLM cut to the deepest layer of the layer grid, the transformer of items 5 and 6."""
    return ["model=minilm_l1", f"model.num_layers={max(s.layers)}"]


def validation_pairs(data: DataConfig, pairs: int | None) -> Dataset:
    """The STSB validation split of the data config `data`: its first `pairs` rows, or all when None."""
    from sweep.inputs.data import load_split  # datasets: a slow import, only when an in-process item runs

    dataset = load_split(data, "validation")
    return dataset if pairs is None else dataset.select(range(min(pairs, len(dataset))))


def timed(run: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> tuple[T, float]:
    """What `run(*args, **kwargs)` returns, and its wall time in seconds."""
    start = time.perf_counter()
    result = run(*args, **kwargs)
    return result, time.perf_counter() - start

"""Item 6: sentences per second of the project's STSB evaluator, cold and warm, against `model.encode` defaults."""

from __future__ import annotations

import copy
import statistics
from collections.abc import Callable
from typing import TYPE_CHECKING

from benchmarks.inprocess import minilm_overrides, timed, validation_pairs
from benchmarks.settings import Settings
from benchmarks.table import Row

if TYPE_CHECKING:
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer


def encode_both(model: SentenceTransformer, dataset: Dataset) -> None:
    """What a plain script does: `model.encode` with default settings on each side of the pairs."""
    model.encode(list(dataset["sentence1"]))
    model.encode(list(dataset["sentence2"]))


def measure_eval_speed(s: Settings, data_dir: str, log: Callable[[str], None]) -> list[Row]:
    """Item 6: sentences/s of the project's STSB evaluator (sweep.training.resources.stsb_evaluator, the trial's batch
    size) vs `model.encode` with default settings, on the default static model and on MiniLM cut to a few layers.
    The evaluator runs cold (a model without the study's tokenization cache, as in a study's first evaluation)
    and warm (a model from `StudyResources`, whose cache an earlier evaluation filled: every later evaluation)."""
    # Hydra, torch and sentence-transformers are slow imports: only when this item runs
    from sweep.config.checks import eval_batch_size
    from sweep.config.composition import compose_config
    from sweep.inputs.model import build_model
    from sweep.inputs.preprocess_cache import PreprocessCache
    from sweep.training.resources import stsb_evaluator

    overrides = {
        "static_minilm (default)": [],
        f"MiniLM, {max(s.layers)} layers": minilm_overrides(s),
    }
    configs = {
        label: compose_config([*extra, f"data.local_dir={data_dir}", "trial.device=cpu"])
        for label, extra in overrides.items()
    }
    dataset = validation_pairs(configs["static_minilm (default)"].data, s.encode_pairs)
    sentences = [*dataset["sentence1"], *dataset["sentence2"]]
    rows = []
    for label, cfg in configs.items():
        model = build_model(cfg.model, seed=0, device="cpu")
        warm_model = PreprocessCache().install(copy.deepcopy(model))
        batch_size = eval_batch_size(cfg.trial, cfg.model.kind)  # trial.eval_batch_size=auto, read for the model
        evaluator = stsb_evaluator(dataset, "stsb_validation", batch_size)
        evaluator(model)
        evaluator(warm_model)  # fills the cache, as a study's first evaluation does
        model.encode(sentences[:64])  # warm-up
        cold: list[float] = []
        warm: list[float] = []
        theirs: list[float] = []
        for _ in range(s.encode_repeats):
            for evaluated, into in ((model, cold), (warm_model, warm)):
                into.append(len(sentences) / timed(evaluator, evaluated)[1])
            theirs.append(len(sentences) / timed(encode_both, model, dataset)[1])
        log(
            f"  {label}: evaluator cold {statistics.median(cold):.0f}/s, warm {statistics.median(warm):.0f}/s, "
            f"encode {statistics.median(theirs):.0f}/s"
        )
        note = (
            f"{len(sentences)} sentences; evaluator batch {batch_size} (trial.eval_batch_size=auto) "
            "incl. Spearman; encode batch 32 (default)"
        )
        for state, ours in (
            ("warm: tokenization cached by the study", warm),
            ("cold: a study's first evaluation", cold),
        ):
            rows.append(
                Row.compare(
                    "6", f"STSB validation encoding throughput, {label}, {state}", ours, theirs, "sent/s", 0, "", note
                )
            )
    return rows

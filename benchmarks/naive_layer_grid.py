"""Item 5: the layer x dim grid (`sweep.evaluation.layer_grid`) and the naive re-encoding, against one evaluation."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

from benchmarks.inprocess import minilm_overrides, timed, validation_pairs
from benchmarks.settings import Settings
from benchmarks.table import Row

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from transformers import BertModel


def naive_layer_dim_spearman(
    model: SentenceTransformer,
    sentences1: Sequence[str],
    sentences2: Sequence[str],
    scores: Sequence[float],
    layers: Sequence[int],
    dims: Sequence[int],
    batch_size: int,
) -> dict[tuple[int, int], float]:
    """The naive grid: for each layer k, re-encode everything with the model cut to k layers (`model.encode`), then
    slice each dim. Returns {(layer, dim): Spearman}."""
    # torch and scipy are slow imports: only when this item runs
    import torch
    from scipy.stats import spearmanr

    bert = cast("BertModel", model[0].auto_model)  # the bench's MiniLM; nn.Module.__getattr__ types it Tensor | Module
    all_layers, n_layers = bert.encoder.layer, bert.config.num_hidden_layers
    out = {}
    try:
        for layer in layers:
            bert.encoder.layer, bert.config.num_hidden_layers = all_layers[:layer], layer
            first = model.encode(list(sentences1), batch_size=batch_size, convert_to_tensor=True)
            second = model.encode(list(sentences2), batch_size=batch_size, convert_to_tensor=True)
            for dim in dims:
                cosine = torch.nn.functional.cosine_similarity(first[:, :dim], second[:, :dim])
                out[(layer, dim)] = float(spearmanr(scores, cosine.numpy()).statistic)
    finally:
        bert.encoder.layer, bert.config.num_hidden_layers = all_layers, n_layers
    return out


def measure_layer_grid(s: Settings, data_dir: str, log: Callable[[str], None]) -> list[Row]:
    """Item 5: `sweep.evaluation.layer_grid.layer_dim_spearman` (one forward pass for every layer) and the naive
    per-layer re-encoding, each / one full-model STSB evaluation (the project's evaluator), on MiniLM cut to a few
    layers."""
    # Hydra, torch, sentence-transformers and pandas are slow imports: only when this item runs
    from sweep.config.composition import compose_config
    from sweep.evaluation.layer_grid import layer_dim_spearman
    from sweep.inputs.model import build_model
    from sweep.training.resources import stsb_evaluator

    batch = 64
    cfg = compose_config([*minilm_overrides(s), f"data.local_dir={data_dir}"])
    model = build_model(cfg.model, seed=0, device="cpu")
    dataset = validation_pairs(cfg.data, s.layer_pairs)
    s1, s2, scores = dataset["sentence1"], dataset["sentence2"], dataset["score"]
    evaluator = stsb_evaluator(dataset, "stsb_validation", batch)
    full, grid, naive, diffs = [], [], [], []
    evaluator(model)  # warm-up (first-call allocations), not timed
    for _ in range(s.layer_repeats):
        full.append(timed(evaluator, model)[1])
        table, seconds = timed(layer_dim_spearman, model, s1, s2, scores, s.layers, s.dims, batch_size=batch)
        grid.append(seconds)
        reference, seconds = timed(naive_layer_dim_spearman, model, s1, s2, scores, s.layers, s.dims, batch_size=batch)
        naive.append(seconds)
        points = zip(table["layer"], table["dim"], table["spearman"], strict=True)
        diffs += [abs(spearman - reference[(layer, dim)]) for layer, dim, spearman in points]
    log(
        f"  full {statistics.median(full):.2f} s, grid {statistics.median(grid):.2f} s, "
        f"naive {statistics.median(naive):.2f} s"
    )
    cells = (
        f"{len(s.layers)} layers x {len(s.dims)} dims, {len(s1)} pairs, batch {batch}; "
        f"MiniLM cut to {max(s.layers)} layers"
    )
    return [
        Row.compare(
            "5",
            "layer x dim grid, `sweep.evaluation.layer_grid.layer_dim_spearman` / one full-model STSB evaluation",
            grid,
            full,
            "s",
            goal="<= 1.2",
            note=f"{cells}; max |grid - naive| Spearman {max(diffs):.1e}",
        ),
        Row.compare(
            "5",
            "layer x dim grid, naive (re-encode once per layer with `model.encode`) / one full-model STSB evaluation",
            naive,
            full,
            "s",
            note=cells,
        ),
    ]

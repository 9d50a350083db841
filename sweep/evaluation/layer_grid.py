"""STSB Spearman for every (layer, dim) cell of a transformer SentenceTransformer, from one forward pass.

For a model ``Transformer -> Pooling [-> Normalize]``, one forward pass per batch returns the hidden states of
every layer (``hidden_states[0]`` is the embedding output, ``hidden_states[k]`` the output of layer k). Each
requested layer is pooled by the model's own modules after the transformer, then for each dim d:

.. math::
    \\mathrm{cos}_{k,d}(x, y) = \\frac{f_k(x)_{:d} \\cdot f_k(y)_{:d}}
    {\\lVert f_k(x)_{:d} \\rVert \\lVert f_k(y)_{:d} \\rVert},
    \\qquad \\rho_{k,d} = \\mathrm{Spearman}(\\mathrm{cos}_{k,d}, \\mathrm{gold})

which is what the model truncated to k layers and to ``truncate_dim=d`` gives through ``model.encode``, the
quantities ``AdaptiveLayerLoss``/``MatryoshkaLoss``/``Matryoshka2dLoss`` train (Li et al. 2024, "2D Matryoshka
Sentence Embeddings"; Kusupati et al. 2022, "Matryoshka Representation Learning").

Config (``sweep/conf/eval/default.yaml``): ``eval.layer_grid.{enabled, layers, dims}`` and the trial objective
``eval.objective`` (``full`` | ``grid_mean`` | ``cell``, computed in ``sweep.evaluation.objective``) with ``eval.cell``
(``"L{layer}_D{dim}"``); their sets and checks are ``sweep.evaluation.layer_grid_config``'s. Layer and dim
sets are lists or comma strings (``"1,2,3"``), so that they can be Optuna grid values. Metrics are named
``stsb_{split}_spearman_L{layer}_D{dim}``; the table is logged as ``layer_grid/stsb_{split}_step{N}.csv``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch
import torch.nn.functional as F
from datasets import Dataset
from scipy.stats import spearmanr
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.losses.adaptive_layer import TransformerDecorator
from sentence_transformers.util import batch_to_device

from sweep.loggers import TrialLogger


def _layer_embeddings(
    model: SentenceTransformer, sentences: Sequence[str], layers: Sequence[int], batch_size: int
) -> dict[int, torch.Tensor]:
    """Sentence embeddings of each layer: one transformer pass per batch with all hidden states (the same
    per-layer features AdaptiveLayerLoss trains), each pooled by the model's modules after the transformer.
    Batches are formed by length, as `model.encode` does, to limit padding."""
    transformer, heads = model[0], list(model)[1:]
    if not isinstance(transformer, Transformer):
        raise TypeError(f"a layer grid needs a Transformer first module, got {type(transformer).__name__}")
    sentences = list(sentences)
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]), reverse=True)
    chunks: dict[int, list[torch.Tensor]] = {layer: [] for layer in layers}
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                batch = [sentences[i] for i in order[start : start + batch_size]]
                features = batch_to_device(model.preprocess(batch), model.device)
                output = TransformerDecorator(transformer, transformer.forward).call_grow_cache(features)
                for layer in layers:
                    layer_features = {**output, "token_embeddings": output["all_layer_embeddings"][layer]}
                    for module in heads:
                        layer_features = module(layer_features)
                    chunks[layer].append(layer_features["sentence_embedding"].float().cpu())
    finally:
        model.train(was_training)
    restore = torch.argsort(torch.tensor(order))
    return {layer: torch.cat(parts)[restore] for layer, parts in chunks.items()}


def layer_dim_spearman(
    model: SentenceTransformer,
    sentences1: Sequence[str],
    sentences2: Sequence[str],
    scores: Sequence[float],
    layers: Sequence[int],
    dims: Sequence[int],
    batch_size: int = 64,
) -> pd.DataFrame:
    """Spearman of cosine(first `dim` dims after `layer` layers) vs gold `scores`: DataFrame(layer, dim, spearman)."""
    first = _layer_embeddings(model, sentences1, layers, batch_size)
    second = _layer_embeddings(model, sentences2, layers, batch_size)
    rows = []
    for layer in layers:
        for dim in dims:
            cosine = (F.normalize(first[layer][:, :dim], dim=-1) * F.normalize(second[layer][:, :dim], dim=-1)).sum(-1)
            rows.append(
                {"layer": layer, "dim": dim, "spearman": float(spearmanr(list(scores), cosine.numpy()).statistic)}
            )
    return pd.DataFrame(rows, columns=["layer", "dim", "spearman"])


def grid_metrics(table: pd.DataFrame, split: str) -> dict[str, float]:
    """MLflow metrics of a grid: ``stsb_{split}_spearman_L{layer}_D{dim}`` and ``stsb_{split}_spearman_grid_mean``."""
    cells = zip(table["layer"], table["dim"], table["spearman"], strict=True)
    metrics = {f"stsb_{split}_spearman_L{layer}_D{dim}": spearman for layer, dim, spearman in cells}
    metrics[f"stsb_{split}_spearman_grid_mean"] = float(table.spearman.mean())
    return metrics


def stsb_layer_grid(
    model: SentenceTransformer, dataset: Dataset, grid: tuple[tuple[int, ...], tuple[int, ...]], batch_size: int
) -> pd.DataFrame:
    """The grid (layers, dims: `sweep.evaluation.layer_grid_config.grid_sets`) on an STSB split (columns sentence1,
    sentence2, score), read as plain lists (a dataset's column is a lazy view that encoding would iterate row by
    row)."""
    first, second, score = dataset.column_names
    layers, dims = grid
    table = dataset.to_dict()
    return layer_dim_spearman(model, table[first], table[second], table[score], layers, dims, batch_size)


def log_layer_grid(run: TrialLogger, table: pd.DataFrame, split: str, step: int) -> None:
    """Log a grid as metrics at `step` and as the artifact ``layer_grid/stsb_{split}_step{step}.csv``."""
    run.log_metrics(grid_metrics(table, split), step=step)
    run.log_text(table.to_csv(index=False), f"layer_grid/stsb_{split}_step{step}.csv")

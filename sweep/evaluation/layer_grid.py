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
(``"L{layer}_D{dim}"``). Layer and dim
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

from sweep.config.checks import parse_numbers, require_choice
from sweep.config.schema import EvalConfig, LayerGridConfig, ModelConfig, PrunerConfig
from sweep.errors import ConfigError
from sweep.evaluation.objective import CELL, GRID_OBJECTIVES, allowed_objectives
from sweep.inputs.model import model_shape
from sweep.loggers import TrialLogger


def grid_sets(grid: LayerGridConfig, model: ModelConfig) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (layers, dims) of `eval.layer_grid` (``grid``) for the `model` section, defaults filled in: every layer
    1..L, the full dimension."""
    shape = model_shape(model)
    layers = (
        parse_numbers("eval.layer_grid.layers", grid.layers)
        if grid.layers is not None
        else tuple(range(1, (shape.layers or 0) + 1))
    )
    dims = parse_numbers("eval.layer_grid.dims", grid.dims) if grid.dims is not None else (shape.dim,)
    return layers, dims


def validate_layer_grid(ev: EvalConfig, model: ModelConfig, pruner: PrunerConfig) -> None:
    """Check the `eval` section against the `model` section and `study.pruner`: layers within the model, dims within
    its dimension, the objective and its cell."""
    require_choice("eval.objective", ev.objective, allowed_objectives(ev))
    key, value = ("_target_", pruner._target_) if pruner._target_ else ("name", pruner.name)
    if ev.objective != "full" and value not in ("none", "optuna.pruners.NopPruner"):
        raise ConfigError(
            f"study.pruner.{key}",
            value,
            f"must be none with eval.objective={ev.objective}: the pruner sees the full model's Spearman",
        )
    if not ev.layer_grid.enabled:
        if ev.objective in GRID_OBJECTIVES and ev.objective != "full":
            raise ConfigError("eval.objective", ev.objective, "needs eval.layer_grid.enabled=true (else use full)")
        return
    if model.kind != "transformer":
        raise ConfigError(
            "eval.layer_grid.enabled", True, "needs model.kind=transformer (a static model has no layers)"
        )
    shape = model_shape(model)
    assert shape.layers is not None  # a transformer's shape has its layers
    layers, dims = grid_sets(ev.layer_grid, model)
    if any(not 0 <= layer <= shape.layers for layer in layers) or len(set(layers)) != len(layers):
        raise ConfigError(
            "eval.layer_grid.layers",
            ev.layer_grid.layers,
            f"must be distinct layers in 0..{shape.layers} (the model has {shape.layers} layers; 0 = embedding output)",
        )
    if any(not 1 <= dim <= shape.dim for dim in dims) or len(set(dims)) != len(dims):
        raise ConfigError(
            "eval.layer_grid.dims", ev.layer_grid.dims, f"must be distinct dims in 1..{shape.dim} (the model dimension)"
        )
    if ev.objective == "cell":
        match = CELL.match(str(ev.cell or ""))
        if not match or int(match[1]) not in layers or int(match[2]) not in dims:
            raise ConfigError(
                "eval.cell",
                ev.cell,
                f"must name a grid cell L{{layer}}_D{{dim}} with layer in {list(layers)} and dim in {list(dims)}",
            )


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
    """The grid (layers, dims: `grid_sets`) on an STSB split (columns sentence1, sentence2, score), read as plain
    lists (a dataset's column is a lazy view that encoding would iterate row by row)."""
    first, second, score = dataset.column_names
    layers, dims = grid
    table = dataset.to_dict()
    return layer_dim_spearman(model, table[first], table[second], table[score], layers, dims, batch_size)


def log_layer_grid(run: TrialLogger, table: pd.DataFrame, split: str, step: int) -> None:
    """Log a grid as metrics at `step` and as the artifact ``layer_grid/stsb_{split}_step{step}.csv``."""
    run.log_metrics(grid_metrics(table, split), step=step)
    run.log_text(table.to_csv(index=False), f"layer_grid/stsb_{split}_step{step}.csv")

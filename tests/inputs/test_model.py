"""A saved static sentence-transformers model as the start of a study (the start model's own temperature)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from sweep.errors import ConfigError
from sweep.inputs.model import build_model
from sweep.inputs.model_source import check_available, model_shape, saved_static_module
from sweep.training.model_card import model_words
from tests.helpers import run_sweep


@pytest.fixture
def saved_static(compose_cfg, tmp_path: Path) -> Path:
    """A small random static model (8 dims, MiniLM's tokenizer), trained elsewhere, saved as sentence-transformers
    saves it."""
    cfg = compose_cfg("model=static_minilm", "model.static_init=random", "model.embedding_dim=8")
    model = build_model(cfg.model, seed=3)
    folder = tmp_path / "start"
    model.save(str(folder))
    return folder


def test_a_saved_static_model_is_the_start_with_its_own_vectors(compose_cfg, saved_static: Path):
    cfg = compose_cfg("model=static_minilm", f"model.name_or_path={saved_static}")
    check_available(cfg.model)
    assert saved_static_module(str(saved_static)) == saved_static
    assert model_shape(cfg.model).dim == 8

    start = build_model(cfg.model, seed=0)
    reference = build_model(
        compose_cfg("model=static_minilm", "model.static_init=random", "model.embedding_dim=8").model, seed=3
    )
    assert torch.equal(start[0].embedding.weight, reference[0].embedding.weight)
    other_seed = build_model(cfg.model, seed=1)  # the seed draws nothing: the start is the saved vectors
    assert torch.equal(start[0].embedding.weight, other_seed[0].embedding.weight)
    assert "saved static model" in model_words(cfg.model, 0.01)


def test_a_transformers_model_is_not_taken_for_a_saved_static_one(compose_cfg, tmp_path: Path):
    cfg = compose_cfg("model=static_minilm")
    (tmp_path / "modules.json").write_text('[{"idx": 0, "name": "0", "path": "", "type": "x.Transformer"}]')
    assert saved_static_module(str(tmp_path)) is None
    assert model_shape(cfg.model).dim == 384
    assert "input token embeddings" in model_words(cfg.model, 0.05)


@pytest.mark.parametrize(
    ("override", "key"),
    [("model.kind=transformer", "model.kind"), ("model.static_init=random", "model.static_init")],
)
def test_a_saved_static_start_refuses_what_it_cannot_be(compose_cfg, saved_static: Path, override: str, key: str):
    cfg = compose_cfg("model=static_minilm", f"model.name_or_path={saved_static}", override)
    with pytest.raises(ConfigError) as raised:
        check_available(cfg.model)
    assert raised.value.key == key


def test_a_saved_static_start_without_its_weights_is_refused(compose_cfg, saved_static: Path):
    (saved_static / "model.safetensors").unlink()
    cfg = compose_cfg("model=static_minilm", f"model.name_or_path={saved_static}")
    with pytest.raises(ConfigError, match="lacks model.safetensors"):
        check_available(cfg.model)


def test_the_command_line_refuses_a_transformer_over_a_saved_static_start(saved_static: Path, tmp_path: Path):
    result = run_sweep("model=minilm", f"model.name_or_path={saved_static}", home=tmp_path / "home")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "model.kind" in lines[0] and "model.kind=static" in lines[0], result.stderr
    assert not (tmp_path / "home" / "mlflow.db").exists()


def test_a_saved_transformer_is_the_start_with_its_own_weights(compose_cfg, tmp_path: Path):
    trained = build_model(compose_cfg("model=tiny_bert").model, seed=5)
    trained.save(str(tmp_path / "start"))
    cfg = compose_cfg(
        "model=tiny_bert", f"model.name_or_path={tmp_path / 'start'}", "model.reinit=false", "model.config_overrides={}"
    )
    check_available(cfg.model)
    start = build_model(cfg.model, seed=0)
    for (name, weight), (_, saved) in zip(start.named_parameters(), trained.named_parameters(), strict=True):
        assert torch.equal(weight, saved), name


def test_an_unreachable_hub_is_asked_once_per_model_in_a_process(compose_cfg, monkeypatch):
    """The validation pass reads a hub model's config for each grid point and each check of its shape; an unreachable
    hub answers each attempt only after huggingface_hub's retries (about 24 s here), so a failure is remembered like a
    success: before, a 9-point grid on an unreachable hub spent minutes in the pass."""
    import huggingface_hub

    attempts: list[str] = []

    def unreachable(repo_id: str, filename: str) -> str:
        attempts.append(repo_id)
        raise OSError("Name or service not known")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", unreachable)
    cfg = compose_cfg("model.name_or_path=some-org/unreachable-model", "model.kind=transformer")
    for _ in range(3):
        with pytest.raises(ConfigError, match="cannot load the model's config"):
            check_available(cfg.model)
    assert attempts == ["some-org/unreachable-model"]


def test_a_local_folder_mended_after_a_failed_check_is_read_again(compose_cfg, tmp_path):
    """A local folder's config is not remembered: a notebook that mends the folder after the check refused it passes
    the next check without restarting (before, its failure was kept for the life of the process, as a hub's is)."""
    folder = tmp_path / "my_model"
    folder.mkdir()
    cfg = compose_cfg(f"model.name_or_path={folder}", "model.kind=transformer", "model.prefer_local=false")
    with pytest.raises(ConfigError, match="has no config.json"):
        check_available(cfg.model)
    (folder / "config.json").write_text(json.dumps({"hidden_size": 32, "num_hidden_layers": 2}))
    check_available(cfg.model)

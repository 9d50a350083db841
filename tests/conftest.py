"""Shared fixtures: compose the real Hydra config with tiny, fast overrides, on the CPU, with state under the test's
tmp_path and never the user's tracking server. Plain helpers live in tests/helpers.py."""

from __future__ import annotations

import os

# No test reaches the Hugging Face hub (this workplace has no internet; a test must not depend on it): huggingface_hub
# reads the variable when it is first imported, so it is set before anything imports it, and the subprocesses that
# tests start inherit it. Offline, a hub name that is not cached fails at once instead of after retries.
os.environ["HF_HUB_OFFLINE"] = "1"

import math
from collections.abc import Callable, Iterator
from pathlib import Path

import mlflow
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from sweep.config import scale_temperature
from sweep.config.checks import CONFIG_DIR
from tests.helpers import clear_user_state

# A 2-layer, 32-dim BERT from a config, a few steps on a small slice of the real offline data.
TINY = [
    "model=tiny_bert",
    "trial.max_steps=4",
    "trial.eval_steps=2",
    "trial.logging_steps=1",
    "trial.batch_size=8",
    "trial.learning_rate=1e-3",
    "data.train.max_samples=64",
    "data.validation.max_samples=200",
    "data.test.max_samples=200",
    "stats.heldout_pairs=32",
    "stats.n_random_pairs=500",
    "stats.histogram=false",
    "trial.device=cpu",
    "quiet=true",
]

Compose = Callable[..., DictConfig]


@pytest.fixture(autouse=True)
def no_user_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """In-process tests never write into the user's MLflow server or state folder (the config reads both from the
    environment), nor into the tracking URI a test before them left: MLflow's global one (`mlflow.set_tracking_uri`,
    which logging a model and `sweep.evaluate` call) is unset after each test."""
    clear_user_state(monkeypatch)
    yield
    mlflow.set_tracking_uri(None)  # None unsets it (in MLflow's code; its type hint says str)


@pytest.fixture
def diverging_scales(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lift the door's cap on a scale (`MAX_SCALE`), so that a study can train a scale that diverges (1e40): how a
    trial that diverges is handled is tested past the door that refuses such a scale."""
    monkeypatch.setattr(scale_temperature, "MAX_SCALE", math.inf)


@pytest.fixture(scope="module")
def shared_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    """`paths.root=...` shared by a module's studies (each has its own name): the MLflow database is created once."""
    return f"paths.root={tmp_path_factory.mktemp('runs')}"


def composer(tmp_path: Path, *first: str) -> Compose:
    """The function `compose_cfg` gives: compose(*overrides, tiny=True), the app's config with the overrides
    ``first`` (e.g. a search path), then `TINY`, then state under tmp_path."""

    def _compose(*overrides: str, tiny: bool = True) -> DictConfig:
        state = f"paths.root={tmp_path / 'runs'}"
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            return compose("config", overrides=[*first, *(TINY if tiny else []), state, *overrides])

    return _compose


@pytest.fixture
def compose_cfg(tmp_path: Path) -> Compose:
    """compose_cfg(*overrides, tiny=True): the app's config with state under tmp_path."""
    return composer(tmp_path)

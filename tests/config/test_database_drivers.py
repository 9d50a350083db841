"""A PostgreSQL storage or tracking URL without its driver (the `postgres` extra) is one line naming the fix."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sweep.config.database_drivers import POSTGRES_FIX, require_driver
from sweep.errors import ConfigError
from sweep.study.lifecycle import open_sweep


@pytest.fixture
def without_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import psycopg` fails as it does where the extra is not installed."""
    monkeypatch.setitem(sys.modules, "psycopg", None)


@pytest.mark.parametrize(
    ("key", "url"), [("study.storage", "postgresql://u@db/sweep"), ("tracking.uri", "postgresql+psycopg://u@db/ml")]
)
def test_a_postgresql_url_without_psycopg_names_the_extra(without_psycopg, key, url):
    with pytest.raises(ConfigError) as error:
        require_driver(key, url)
    assert error.value.key == key and str(error.value).endswith(POSTGRES_FIX)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("url", ["sqlite:///runs/optuna.db", "http://127.0.0.1:5000", "/abs/mlruns", "databricks"])
def test_urls_whose_driver_is_at_hand_pass(without_psycopg, url):
    require_driver("tracking.uri", url)


def test_the_study_is_refused_before_anything_is_opened(without_psycopg, compose_cfg):
    cfg = compose_cfg("study.storage=postgresql://u@127.0.0.1:1/sweep", "name=no_driver")
    with pytest.raises(ConfigError) as error:
        open_sweep(cfg)
    assert error.value.key == "study.storage" and POSTGRES_FIX in str(error.value)
    assert not (Path(cfg.paths.root) / "mlflow.db").exists(), "refused before the tracking store was created"

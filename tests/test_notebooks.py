"""Every notebook runs top to bottom (nbclient) against a small MLflow database made by a tiny sweep."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from hydra import compose, initialize_config_dir
from nbclient import NotebookClient

from sweep.config import CONFIG_DIR
from sweep.study import finish, open_sweep
from tests.conftest import TINY

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory) -> str:
    """A 2-scale x 2-seed study of the tiny model with a 2-layer x 2-dim grid; returns its MLflow tracking URI."""
    root = tmp_path_factory.mktemp("runs")
    overrides = [
        *TINY,
        f"paths.root={root}",
        "name=tiny_scales",
        "+study.search_space.loss.scale=[1,20]",
        "study.seeds=[0,1]",
        "eval.layer_grid.enabled=true",
        "eval.layer_grid.dims=[32,16]",
    ]
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    sweep = open_sweep(cfg)
    sweep.run()
    assert (finish(sweep).state == "COMPLETE").sum() == 4
    return cfg.tracking.uri


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, tiny_study, tmp_path, monkeypatch):
    out = tmp_path / "figures"
    monkeypatch.setenv("SWEEP_TRACKING_URI", tiny_study)
    monkeypatch.setenv("SWEEP_EXPERIMENT", "tiny_scales")
    monkeypatch.setenv("SWEEP_FIGURES_DIR", str(out))
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    written = {p.name for p in out.glob("*.png")}
    expected = {"loss_vs_scale": "loss_vs_scale.png", "layer_grid": "layer_grid_heatmap.png"}.get(
        path.stem, "spearman_vs_scale.png"
    )
    assert expected in written, written

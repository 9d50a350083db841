"""Every study of this repository (research/conf/experiment) and the shipped example runs end to end with its own
model and loss: two steps on a slice of the data, at the last
value of each grid axis (the one furthest from the defaults: a wrapper on, the largest scale, ...)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from research.tests.conftest import EXPERIMENTS
from sweep.config.checks import eval_batch_size
from sweep.evaluation.layer_grid import stsb_layer_grid
from sweep.evaluation.layer_grid_config import grid_sets, validate_layer_grid
from sweep.inputs.data import load_split
from sweep.inputs.model import build_model
from sweep.study.lifecycle import finish, open_sweep

SHORT = [
    "trial.max_steps=2",
    "trial.eval_steps=2",
    "trial.logging_steps=1",
    "trial.batch_size=8",
    "data.train.max_samples=32",
    "data.validation.max_samples=100",
    "data.test.max_samples=100",
    "stats.heldout_pairs=32",
    "stats.n_random_pairs=200",
    "stats.histogram=false",
    "quiet=true",
    "study.seeds=[0]",  # one replicate: the experiments with seeds run 3
]


def last_grid_point(space: dict) -> dict:
    """The search space with every grid list cut to its last value."""
    return {key: last_grid_point(value) if isinstance(value, dict) else [value[-1]] for key, value in space.items()}


def save_missing_starts(cfg: DictConfig) -> None:
    """A grid of start models that a pretraining study saves under paths.root (the start model's own temperature):
    a small random static model stands in for each one that is missing."""
    starts = OmegaConf.select(cfg, "study.search_space.model.name_or_path") or []
    for start in map(Path, starts):
        if start.is_relative_to(cfg.paths.root) and not start.exists():
            stand_in = OmegaConf.merge(cfg.model, {"static_init": "random", "embedding_dim": 8})
            build_model(stand_in, seed=0).save(str(start))


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_experiment_runs_one_grid_point(compose_cfg, shared_root, experiment):
    cfg = compose_cfg(f"+experiment={experiment}", *SHORT, shared_root, tiny=False)
    space = OmegaConf.to_container(cfg.study.search_space)
    cfg.study.search_space = last_grid_point(space)
    save_missing_starts(cfg)
    batch = cfg.study.search_space.get("trial", {}).get("batch_size", [cfg.trial.batch_size])[0]
    cfg.data.train.max_samples = max(cfg.data.train.max_samples, batch)  # at least one batch of rows, or refused
    sweep = open_sweep(cfg)
    sweep.run()
    table = finish(sweep)
    assert table.state.tolist() == ["COMPLETE"], table
    assert math.isfinite(table.stsb_val[0]) and math.isfinite(table.stsb_test[0])


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_experiment_eval_config_is_valid(compose_cfg, experiment):
    cfg = compose_cfg(f"+experiment={experiment}", tiny=False)
    validate_layer_grid(cfg.eval, cfg.model, cfg.study.pruner)


def test_matryoshka2d_experiment_grid_evaluates_every_cell(compose_cfg):
    cfg = compose_cfg("+experiment=matryoshka2d", tiny=False)
    dataset = load_split(cfg.data, "validation").select(range(40))
    grid = grid_sets(cfg.eval.layer_grid, cfg.model)
    table = stsb_layer_grid(build_model(cfg.model, seed=0), dataset, grid, eval_batch_size(cfg.trial, cfg.model.kind))
    assert sorted(set(table.layer)) == [1, 2, 3] and sorted(set(table.dim)) == [64, 128, 256, 384]
    assert table.spearman.between(-1, 1).all()

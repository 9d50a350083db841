"""The layer x dim STSB grid from one forward pass equals re-encoding with truncated models; its config is checked."""

from __future__ import annotations

import copy

import pandas as pd
import pytest
import torch
from scipy.stats import spearmanr
from sentence_transformers import SentenceTransformer

from sweep.config.checks import eval_batch_size, parse_numbers
from sweep.errors import ConfigError
from sweep.evaluation.layer_grid import grid_metrics, layer_dim_spearman, log_layer_grid, stsb_layer_grid
from sweep.evaluation.layer_grid_config import grid_sets, validate_layer_grid
from sweep.evaluation.objective import objective_value
from sweep.inputs.data import load_split
from sweep.inputs.model import build_model
from sweep.inputs.model_source import model_shape

LAYERS, DIMS = (0, 1, 2), (32, 16, 8)


@pytest.fixture
def tiny(compose_cfg):
    cfg = compose_cfg("data.validation.max_samples=120")
    return cfg, build_model(cfg.model, seed=0), load_split(cfg.data, "validation").select(range(120))


def truncated(model: SentenceTransformer, layers: int) -> SentenceTransformer:
    """The model with only its first `layers` transformer layers (same weights)."""
    short = copy.deepcopy(model)
    bert = short[0].auto_model
    bert.encoder.layer = bert.encoder.layer[:layers]
    bert.config.num_hidden_layers = layers
    return short


def naive_spearman(model, dataset, layer: int, dim: int) -> float:
    short = truncated(model, layer)
    first = short.encode(dataset["sentence1"], truncate_dim=dim, convert_to_tensor=True, batch_size=16)
    second = short.encode(dataset["sentence2"], truncate_dim=dim, convert_to_tensor=True, batch_size=16)
    cosine = torch.nn.functional.cosine_similarity(first, second)
    return spearmanr(dataset["score"], cosine.numpy()).statistic


@pytest.mark.slow
def test_grid_equals_truncated_models_reencoded(tiny):
    _, model, dataset = tiny
    table = layer_dim_spearman(
        model, dataset["sentence1"], dataset["sentence2"], dataset["score"], LAYERS, DIMS, batch_size=32
    )
    assert list(table.columns) == ["layer", "dim", "spearman"] and len(table) == len(LAYERS) * len(DIMS)
    for row in table.itertuples():
        assert row.spearman == pytest.approx(naive_spearman(model, dataset, row.layer, row.dim), abs=1e-5), (
            row.layer,
            row.dim,
        )
    assert table.spearman.nunique() > 1, "the cells differ"


def test_grid_runs_one_transformer_forward_per_batch(tiny, monkeypatch):
    _, model, dataset = tiny
    bert, calls = model[0].auto_model, []
    forward = bert.forward
    monkeypatch.setattr(bert, "forward", lambda *args, **kwargs: calls.append(1) or forward(*args, **kwargs))
    layer_dim_spearman(model, dataset["sentence1"], dataset["sentence2"], dataset["score"], LAYERS, DIMS, batch_size=40)
    assert len(calls) == 2 * 3, "two sentence columns of 120 in batches of 40, whatever the number of layers"


def test_grid_of_the_config_metrics_and_objective(tiny):
    cfg, model, dataset = tiny
    cfg.eval.layer_grid.merge_with({"enabled": True, "layers": "1,2", "dims": [32, 8]})
    batch_size = eval_batch_size(cfg.trial, cfg.model.kind)
    table = stsb_layer_grid(model, dataset, grid_sets(cfg.eval.layer_grid, cfg.model), batch_size)
    assert list(zip(table.layer, table.dim, strict=True)) == [(1, 32), (1, 8), (2, 32), (2, 8)]
    metrics = grid_metrics(table, "validation")
    assert metrics["stsb_validation_spearman_L2_D8"] == table.spearman.iloc[3]
    assert metrics["stsb_validation_spearman_grid_mean"] == pytest.approx(table.spearman.mean())
    assert objective_value(cfg.eval, 0.5, table) == 0.5
    cfg.eval.objective = "grid_mean"
    assert objective_value(cfg.eval, 0.5, table) == pytest.approx(table.spearman.mean())
    cfg.eval.objective, cfg.eval.cell = "cell", "L1_D8"
    validate_layer_grid(cfg.eval, cfg.model, cfg.study.pruner)
    assert objective_value(cfg.eval, 0.5, table) == table.spearman.iloc[1]


def test_log_layer_grid_logs_metrics_and_table():
    class Run:  # a `TrialLogger` (sweep.loggers): what the layer grid logs through
        def log_metrics(self, metrics, step):
            self.metrics, self.step = metrics, step

        def log_text(self, text, path):
            self.logged = (text, path)

    run, table = Run(), pd.DataFrame({"layer": [1, 2], "dim": [8, 8], "spearman": [0.1, 0.3]})
    log_layer_grid(run, table, "test", step=7)
    assert run.step == 7 and run.metrics["stsb_test_spearman_L2_D8"] == 0.3
    assert run.logged[1] == "layer_grid/stsb_test_step7.csv" and "spearman" in run.logged[0]


def test_defaults_are_every_layer_at_full_dimension(compose_cfg):
    cfg = compose_cfg("eval.layer_grid.enabled=true")
    assert model_shape(cfg.model).layers == 2 and grid_sets(cfg.eval.layer_grid, cfg.model) == ((1, 2), (32,))
    static = compose_cfg("model=static_minilm")
    assert model_shape(static.model).dim == 384 and model_shape(static.model).layers is None


def test_parse_numbers_accepts_lists_and_comma_strings():
    assert parse_numbers("k", "384, 256,128") == (384, 256, 128)
    assert parse_numbers("k", [1, 2]) == (1, 2) and parse_numbers("k", 3) == (3,)
    assert parse_numbers("k", "1,0.5", float) == (1.0, 0.5)
    for bad in ("", "1,a", [1.5], [True], None):
        with pytest.raises(ConfigError):
            parse_numbers("k", bad)


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["eval.layer_grid.enabled=true", "eval.layer_grid.layers='1,2,3'"], "eval.layer_grid.layers"),
        (["eval.layer_grid.enabled=true", "eval.layer_grid.layers='1,1'"], "eval.layer_grid.layers"),
        (["eval.layer_grid.enabled=true", "eval.layer_grid.dims='64'"], "eval.layer_grid.dims"),
        (["eval.layer_grid.enabled=true", "model=static_minilm"], "eval.layer_grid.enabled"),
        (["eval.objective=grid_mean"], "eval.objective"),
        (["eval.layer_grid.enabled=true", "eval.objective=grid_mean", "study.pruner.name=median"], "study.pruner.name"),
        (
            [
                "eval.layer_grid.enabled=true",
                "eval.objective=grid_mean",
                "study.pruner._target_=optuna.pruners.MedianPruner",
            ],
            "study.pruner._target_",
        ),
        (["eval.objective=nope"], "eval.objective"),
        (["eval.layer_grid.enabled=true", "eval.objective=cell", "eval.cell=L3_D32"], "eval.cell"),
        (["eval.layer_grid.enabled=true", "eval.objective=cell", "eval.cell=top"], "eval.cell"),
    ],
)
def test_bad_layer_grid_configs_are_refused(compose_cfg, overrides, key):
    cfg = compose_cfg(*overrides)
    with pytest.raises(ConfigError) as error:
        validate_layer_grid(cfg.eval, cfg.model, cfg.study.pruner)
    assert error.value.key == key and key in str(error.value)


def test_the_nop_pruner_by_target_counts_as_no_pruner(compose_cfg):
    cfg = compose_cfg(
        "eval.layer_grid.enabled=true", "eval.objective=grid_mean", "study.pruner._target_=optuna.pruners.NopPruner"
    )
    validate_layer_grid(cfg.eval, cfg.model, cfg.study.pruner)

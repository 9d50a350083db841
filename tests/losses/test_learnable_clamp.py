"""The learnable scale's clamp (defect 3): CLIP clamps the parameter's value after the optimizer step and keeps the
gradient, so a scale at the clamp comes back down when the loss asks; the step of the first clamp is reported."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from sweep.inputs.model import build_model
from sweep.losses import training_callbacks
from sweep.losses.learnable_scale import LearnableScaleMultipleNegativesRankingLoss, ScaleClampCallback
from tests.helpers import build_trial_loss

ANCHORS = ["A man is playing a guitar.", "A woman is slicing an onion.", "Kids play football.", "A cat sleeps."]
POSITIVES = ["Someone plays an instrument.", "A person cuts a vegetable.", "Children kick a ball.", "A pet naps."]


@pytest.fixture
def model(compose_cfg):
    model = build_model(compose_cfg().model, seed=0)
    return model.eval()


def lower_scale_batch(model):
    """Each anchor's hard negative is the anchor itself (cosine 1, above the positive): the loss wants a lower
    scale."""
    return [model.preprocess(ANCHORS), model.preprocess(POSITIVES), model.preprocess(ANCHORS)]


def higher_scale_batch(model):
    """Each positive is its anchor (cosine 1, above every other candidate): the loss wants a higher scale."""
    return [model.preprocess(ANCHORS), model.preprocess(ANCHORS)]


def steps(loss, batch, n, lr, start_step=0):
    callback = ScaleClampCallback(loss)
    optimizer = torch.optim.Adam([loss.logit_scale], lr=lr)
    for step in range(start_step + 1, start_step + n + 1):
        optimizer.zero_grad()
        loss(batch, None).backward()
        optimizer.step()
        callback.on_step_end(None, SimpleNamespace(global_step=step), None)


def test_a_scale_started_at_the_clamp_moves_down_when_the_loss_asks(model):
    loss = LearnableScaleMultipleNegativesRankingLoss(model, scale=100.0, max_scale=100.0)
    loss(lower_scale_batch(model), None).backward()
    assert loss.logit_scale.grad is not None and float(loss.logit_scale.grad) > 0, "the gradient must flow"
    loss.logit_scale.grad = None
    steps(loss, lower_scale_batch(model), 3, lr=0.1)
    assert loss.logged_metrics()["learned_scale"] < 99.0


def test_a_scale_pushed_to_the_clamp_is_clamped_then_comes_back(model):
    loss = LearnableScaleMultipleNegativesRankingLoss(model, scale=50.0, max_scale=60.0)
    steps(loss, higher_scale_batch(model), 3, lr=0.5)
    metrics = loss.logged_metrics()
    assert metrics["learned_scale"] == pytest.approx(60.0, rel=1e-5)
    assert metrics["learned_scale_clamp_step"] == 1
    steps(loss, lower_scale_batch(model), 3, lr=0.1, start_step=3)
    metrics = loss.logged_metrics()
    assert metrics["learned_scale"] < 59.0 and metrics["learned_scale_clamp_step"] == 1


def test_the_forward_pass_does_not_clamp(model):
    loss = LearnableScaleMultipleNegativesRankingLoss(model, scale=50.0, max_scale=60.0)
    with torch.no_grad():
        loss.logit_scale.fill_(math.log(80.0))
    assert float(loss.scale.detach()) == pytest.approx(80.0, rel=1e-5)  # only the optimizer step's callback clamps


def test_the_trial_gets_the_clamp_callback_for_a_wrapped_learnable_scale(compose_cfg):
    cfg = compose_cfg("loss=learnable_scale", "loss.wrapper.name=matryoshka", "loss.wrapper.dims='32,16'")
    loss = build_trial_loss(build_model(cfg.model, seed=0), cfg)
    assert [type(c) for c in training_callbacks(loss)] == [ScaleClampCallback]
    assert training_callbacks(build_trial_loss(build_model(cfg.model, seed=0), compose_cfg())) == []

"""Temperature schedules (`loss.scale_schedule`): the scale logged at every step is the schedule's formula, the
scale is set inside a wrapper and drives the loss, the constant default changes nothing, bad schedules are refused
before training in one line, and the study's arms read as their specs."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss

from sweep.errors import ConfigError
from sweep.inputs.model import build_model
from sweep.losses import loss_values, schedule_callback
from sweep.losses.mnrl import ScaledMultipleNegativesRankingLoss
from sweep.losses.scale_schedule import SCHEDULED_SCALE, SCHEDULED_TEMPERATURE
from sweep.study.validation import check_config, trial_config
from tests.helpers import build_trial_loss, run_study, trial_runs

STEPS = 7


def kukleva_cosine(t: int, low: float, high: float, period: int) -> float:
    """Kukleva et al. 2023: tau_t = tau_min + (tau_max - tau_min)(1 + cos(2 pi t / T)) / 2, as a scale 1/tau_t."""
    tau_min, tau_max = 1 / high, 1 / low
    return 1 / (tau_min + (tau_max - tau_min) * (1 + math.cos(2 * math.pi * t / period)) / 2)


def linear_temperature(t: int, start: float, end: float, steps: int) -> float:
    """The temperature moves linearly from 1/start (first step) to 1/end (last step)."""
    return 1 / (1 / start + (1 / end - 1 / start) * t / (steps - 1))


EXPECTED = {
    "cosine 5-50 period 4": lambda t: kukleva_cosine(t, 5, 50, 4),
    "cosine 2-20": lambda t: kukleva_cosine(t, 2, 20, STEPS),  # period null: one cycle over trial.max_steps
    "linear 50-5": lambda t: linear_temperature(t, 50, 5, STEPS),
}


@pytest.mark.slow
def test_the_logged_scale_of_every_step_is_the_schedules_formula(compose_cfg):
    specs = ", ".join(f'"{spec}"' for spec in EXPECTED)
    cfg = compose_cfg(
        f"trial.max_steps={STEPS}",
        f"trial.eval_steps={STEPS}",
        "stats.every_eval=true",  # the probe reads the scheduled scale at each measurement
        f"+study.search_space.loss.scale_schedule.spec=[{specs}]",
        "name=schedules",
    )
    _, table = run_study(cfg)
    assert table.state.tolist() == ["COMPLETE"] * len(EXPECTED)
    client, _, children = trial_runs(cfg)
    assert len(children) == len(EXPECTED)
    for run in children:
        spec = run.data.params["loss.scale_schedule.spec"]
        history = sorted(client.get_metric_history(run.info.run_id, SCHEDULED_SCALE), key=lambda m: m.step)
        # logged with the training loss at step k (trial.logging_steps=1): the scale the k-th step trained at, t = k-1
        assert [m.step for m in history] == list(range(1, STEPS + 1)), spec
        expected = [EXPECTED[spec](t) for t in range(STEPS)]
        assert [m.value for m in history] == pytest.approx(expected, rel=1e-9), spec
        temperatures = client.get_metric_history(run.info.run_id, SCHEDULED_TEMPERATURE)
        assert sorted(m.value for m in temperatures) == pytest.approx(sorted(1 / s for s in expected), rel=1e-9)
        assert float(run.data.params["loss.scale"]) == pytest.approx(expected[0])  # the first step's scale
    linear = next(run for run in children if run.data.params["loss.scale_schedule.spec"] == "linear 50-5")
    assert float(linear.data.params["loss.scale_schedule.end_scale"]) == 5.0  # the spec's keys are logged


def step_state(step: int, max_steps: int) -> SimpleNamespace:
    return SimpleNamespace(global_step=step, max_steps=max_steps)


def test_a_wrapped_loss_trains_at_the_scheduled_scale(compose_cfg):
    """Inside MatryoshkaLoss the inner MNRL's scale is set, and the loss equals the same loss built at that scale."""
    cfg = compose_cfg(
        "loss.scale_schedule.spec=linear 5-50", "loss.wrapper.name=matryoshka", "loss.wrapper.dims=[32,16]"
    )
    cfg = trial_config(cfg)
    model = build_model(cfg.model, seed=0).eval()
    loss = build_trial_loss(model, cfg)
    callback = schedule_callback(loss, cfg.loss)
    assert callback is not None and [type(t) for t in callback.targets] == [ScaledMultipleNegativesRankingLoss]
    assert callback.current_scale() == pytest.approx(5.0)  # built at the first step's scale (loss.scale)
    callback.on_step_begin(None, step_state(3, 4), None)
    assert callback.current_scale() == pytest.approx(50.0)  # the last of 4 steps
    features = [model.tokenize(["A man plays.", "Kids play.", "A cat."]), model.tokenize(["Music.", "Ball.", "Pet."])]
    reference = MatryoshkaLoss(model, ScaledMultipleNegativesRankingLoss(model, scale=50.0), [32, 16])
    with torch.no_grad():
        assert float(loss(features, None)) == pytest.approx(float(reference(features, None)), rel=1e-6)


def test_a_cosent_loss_follows_its_schedule(compose_cfg):
    cfg = trial_config(compose_cfg("loss=cosent", "data=stsb_pairs", "loss.scale_schedule.spec=cosine 5-50"))
    loss = build_trial_loss(build_model(cfg.model, seed=0), cfg)
    callback = schedule_callback(loss, cfg.loss)
    assert callback is not None
    callback.on_step_begin(None, step_state(2, 4), None)  # half a period: the highest scale
    assert loss.scale == pytest.approx(50.0) and callback.logged_metrics()[SCHEDULED_SCALE] == pytest.approx(50.0)


def test_the_constant_default_changes_nothing(compose_cfg):
    cfg = compose_cfg()
    assert loss_values(cfg.loss) == {}  # no derived key: the resolved config, and what trains, as before
    assert schedule_callback(build_trial_loss(build_model(cfg.model, seed=0), cfg), cfg.loss) is None
    constant = trial_config(compose_cfg("loss.scale_schedule.spec=constant 10"))
    assert constant.loss.scale == 10.0 and constant.loss.temperature == 0.1
    assert schedule_callback(build_trial_loss(build_model(cfg.model, seed=0), constant), constant.loss) is None


K = "loss.scale_schedule"
LINEAR_KEYS = (f"{K}.start_scale=5", f"{K}.end_scale=50")


@pytest.mark.parametrize(
    ("overrides", "key", "message"),
    [
        ([f"{K}.kind=sine"], f"{K}.kind", "must be one of constant, cosine, linear"),
        ([f"{K}.spec=sine 5-50"], f"{K}.spec", '"cosine MIN-MAX [period STEPS]"'),
        ([f"{K}.kind=cosine"], f"{K}.min_scale", "must be a finite number in (0, 1000]"),
        ([f"{K}.spec=cosine 0-50"], f"{K}.min_scale", "scale 0 is the untrained control"),
        ([f"{K}.spec=cosine 50-5"], f"{K}.max_scale", "at least"),
        ([f"{K}.spec=linear 5-0"], f"{K}.end_scale", "must be a finite number in (0, 1000]"),
        ([f"{K}.spec=cosine 5-50 period 0"], f"{K}.period_steps", "integer >= 1"),
        ([f"{K}.kind=linear", f"{K}.start_scale=-1"], f"{K}.start_scale", "> 0"),
        ([f"{K}.spec=cosine 5-50", f"{K}.kind=linear"], f"{K}.kind", "give the schedule once"),
        ([f"{K}.spec=cosine 5-50", "loss.scale=10"], "loss.scale", "is set by loss.scale_schedule"),
        ([f"{K}.spec=linear 5-50", "loss.temperature=0.05"], "loss.scale", "is set by loss.scale_schedule"),
        (["loss=learnable_scale", f"{K}.spec=cosine 5-50"], f"{K}.spec", "no single fixed scale"),
        (["loss=angle_composite", "data=stsb_pairs", f"{K}.kind=linear", *LINEAR_KEYS], f"{K}.kind", "kind=constant"),
        (["+study.search_space.loss.scale=[10,20]", f"{K}.spec=linear 5-50"], "loss.scale", "is set by"),
    ],
)
def test_a_bad_schedule_is_refused_before_training_in_one_line(compose_cfg, overrides, key, message):
    cfg = compose_cfg(*overrides)
    with pytest.raises(ConfigError) as error:
        check_config(cfg, load=False)
    assert error.value.key == key and message in str(error.value) and "\n" not in str(error.value)


def test_a_kind_grid_trains_constant_at_loss_scale_and_each_schedule_from_its_keys(compose_cfg):
    cfg = compose_cfg(
        "+study.search_space.loss.scale_schedule.kind=[constant,cosine,linear]",
        *(f"loss.scale_schedule.{key}" for key in ("min_scale=5", "max_scale=50", "start_scale=50", "end_scale=5")),
    )
    scales = [
        trial_config(cfg, {"loss.scale_schedule.kind": kind}).loss.scale for kind in ("constant", "cosine", "linear")
    ]
    assert scales == [20.0, 5.0, 50.0]

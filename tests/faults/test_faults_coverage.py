"""Coverage the rest of the suite lacks: TPE and random samplers with each pruner and a real pruned trial, normalize
on/off x cosine/dot, the scale of every loss reaching the gradient, and a second seed giving a different result.
(Two worker processes both training: tests/faults/test_faults_tracking.py, by the `sweep.worker` tag.)"""

from __future__ import annotations

import math
from pathlib import Path

import optuna
import pytest
import torch
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState

from sweep.config.checks import CONFIG_DIR, with_values
from sweep.inputs.model import build_model
from sweep.names import ATTR_MLFLOW_RUN_ID, TAG_END_REASON, TAG_OPTUNA_STATE
from sweep.study.lifecycle import finish, open_sweep
from sweep.study.validation import derived_values
from tests.helpers import build_trial_loss

pytestmark = pytest.mark.faults  # injected faults: left out of the default run, run by CI (-m "")

SAMPLERS = {"tpe": optuna.samplers.TPESampler, "random": optuna.samplers.RandomSampler}


def run(cfg):
    sweep = open_sweep(cfg)
    sweep.run()
    return sweep, finish(sweep)


@pytest.mark.parametrize(
    ("sampler", "pruner", "options"),
    [
        ("tpe", "median", ["study.pruner.n_startup_trials=1"]),
        ("random", "successive_halving", ["study.pruner.min_resource=1", "study.pruner.reduction_factor=2"]),
        ("random", "hyperband", ["study.pruner.min_resource=2", "study.pruner.reduction_factor=2", "study.n_trials=5"]),
    ],
)
def test_sampler_and_pruner_end_to_end_with_a_pruned_trial(compose_cfg, sampler, pruner, options):
    cfg = compose_cfg(
        "+study.search_space.loss.scale={type:float,low:0.01,high:100,log:true}",
        f"study.sampler.name={sampler}",
        f"study.pruner.name={pruner}",
        "study.n_trials=4",
        *options,
        "trial.eval_steps=1",
        f"name={sampler}_{pruner}",
        "stats.enabled=false",
    )
    sweep, table = run(cfg)
    assert isinstance(sweep.study.sampler, SAMPLERS[sampler]) and type(sweep.study.pruner).__name__.lower().startswith(
        pruner.split("_")[0]
    )
    states = [t.state for t in sweep.study.trials]
    assert TrialState.PRUNED in states and TrialState.COMPLETE in states, states
    pruned = min(
        (t for t in sweep.study.trials if t.state == TrialState.PRUNED),
        key=lambda t: max(t.intermediate_values),
    )
    assert max(pruned.intermediate_values) < cfg.trial.max_steps, "a trial stopped before its last step"
    run_ = MlflowClient(cfg.tracking.uri).get_run(pruned.user_attrs[ATTR_MLFLOW_RUN_ID])
    assert run_.info.status == "KILLED" and run_.data.tags[TAG_OPTUNA_STATE] == "PRUNED"
    assert run_.data.tags[TAG_END_REASON].startswith("pruned at step")


def test_normalize_on_off_by_cosine_or_dot(compose_cfg):
    cfg = compose_cfg(
        "+study.search_space={model:{normalize:[true,false]},loss:{similarity:[cosine,dot]}}",
        "trial.max_steps=2",
        "trial.eval_steps=2",
        "name=normalize",
        "stats.enabled=false",
    )
    sweep, table = run(cfg)
    value = {(t.params["model.normalize"], t.params["loss.similarity"]): t.value for t in sweep.study.trials}
    assert len(value) == 4 and all(math.isfinite(v) for v in value.values())
    assert value[(True, "cosine")] == pytest.approx(value[(True, "dot")], abs=1e-6), "normalized: dot is cosine"
    assert value[(False, "cosine")] != pytest.approx(value[(False, "dot")], abs=1e-6), "unnormalized: they differ"


def test_a_second_seed_gives_a_different_result(compose_cfg):
    sweep, table = run(compose_cfg("study.seeds=[0,1]", "name=seeds", "stats.enabled=false"))
    values = {t.params["trial.seed"]: t.value for t in sweep.study.trials}
    assert set(values) == {0, 1} and all(math.isfinite(v) for v in values.values())
    assert values[0] != pytest.approx(values[1], abs=1e-6)


LOSSES = sorted(p.stem for p in (Path(CONFIG_DIR) / "loss").glob("*.yaml"))
SCORED = ("cosent", "angle", "angle_composite")  # trained on (sentence1, sentence2, score)
SCALE_KEYS = {  # the keys that set a loss's scale, and two values of each
    "gist": {"temperature": (0.05, 0.5)},
    "angle_composite": {"cos_scale": (2.0, 20.0), "ibn_scale": (2.0, 20.0), "angle_scale": (0.5, 5.0)},
}
NEEDS = {"gist": ["loss.guide=base"], "cached_mnrl": ["loss.mini_batch_size=3"]}
S1 = ["A man plays a guitar.", "A woman slices an onion.", "Kids play football.", "A cat sleeps.", "A plane lands."]
S2 = [
    "Someone plays music.",
    "A person cuts a vegetable.",
    "Children kick a ball.",
    "Stocks fell.",
    "An aircraft lands.",
]
GOLD = [0.9, 0.85, 0.7, 0.0, 0.95]


def weights_after_one_step(compose_cfg, loss: str, key: str, value: float) -> torch.Tensor:
    cfg = compose_cfg(f"loss={loss}", *NEEDS.get(loss, []), f"loss.{key}={value}")
    cfg = with_values(cfg, derived_values(cfg.loss, cfg.trial, cfg.model.kind))
    torch.manual_seed(0)
    model = build_model(cfg.model, seed=0)
    model.eval()  # no dropout: both scales see the same embeddings
    criterion = build_trial_loss(model, cfg)
    labels = torch.tensor(GOLD) if loss in SCORED else None
    optimizer = torch.optim.SGD(criterion.parameters(), lr=1.0)
    criterion([model.preprocess(S1), model.preprocess(S2)], labels).backward()
    optimizer.step()
    return torch.cat([p.detach().flatten() for p in model.parameters()])


@pytest.mark.parametrize(
    ("loss", "key", "values"),
    [(loss, key, values) for loss in LOSSES for key, values in SCALE_KEYS.get(loss, {"scale": (2.0, 20.0)}).items()],
)
def test_the_scale_of_every_loss_reaches_the_gradient(compose_cfg, loss, key, values):
    """Two scales, the same seed and batch: different weights after one optimizer step."""
    low, high = (weights_after_one_step(compose_cfg, loss, key, value) for value in values)
    assert torch.isfinite(low).all() and torch.isfinite(high).all()
    assert not torch.allclose(low, high), f"loss.{key} does not change the gradient of {loss}"

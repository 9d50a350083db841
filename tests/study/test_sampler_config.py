"""The Optuna sampler and pruner from `study.sampler` / `study.pruner`: any class by `_target_`, the short names as
before, a bad `_target_` or argument refused in one line naming the key, and the GPU presets as their own group."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import optuna
import pytest

from sweep.config import search_space
from sweep.config.checks import CONFIG_DIR
from sweep.config.composition import compose_config
from sweep.errors import ConfigError
from sweep.study.setup import QueuedGridSampler, create_or_load, make_pruner, make_sampler, open_storage
from sweep.study.validation import check_config

GRID = {"loss.scale": [1.0, 20.0]}
DISTRIBUTION = {"loss.scale": optuna.distributions.FloatDistribution(1.0, 50.0, log=True)}
pytestmark = pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")


def test_a_target_builds_a_qmc_sampler_study(compose_cfg, tmp_path):
    cfg = compose_cfg(
        "study.sampler._target_=optuna.samplers.QMCSampler",
        "study.sampler.seed=7",
        "+study.sampler.scramble=true",
        "+study.search_space.loss.scale={type:float,low:1,high:50,log:true}",
        f"study.storage=sqlite:///{tmp_path / 'optuna.db'}",
    )
    space = search_space.parse(cfg.study.search_space)
    check_config(cfg, load=False)
    storage = open_storage(cfg.study, on_stale=lambda study, trial: None)
    study, created = create_or_load(cfg.study, cfg.trial.eval_steps, "stsb_validation_spearman", storage, space)
    assert created and isinstance(study.sampler, optuna.samplers.QMCSampler)
    assert study.sampler._seed == 7 and study.sampler._scramble is True


@pytest.mark.parametrize(
    ("overrides", "space", "expected"),
    [
        ([], GRID, QueuedGridSampler),
        ([], DISTRIBUTION, optuna.samplers.TPESampler),
        (["study.sampler.name=grid"], GRID, QueuedGridSampler),
        (["study.sampler.name=tpe"], GRID, optuna.samplers.TPESampler),
        (["study.sampler.name=random"], DISTRIBUTION, optuna.samplers.RandomSampler),
        (["study.sampler._target_=optuna.samplers.GridSampler"], GRID, QueuedGridSampler),
        (
            ["study.sampler.name=tpe", "study.sampler._target_=optuna.samplers.TPESampler"],
            GRID,
            optuna.samplers.TPESampler,
        ),
    ],
)
def test_every_short_sampler_name_builds_the_class_it_did(overrides, space, expected):
    sampler = make_sampler(compose_config(["study.sampler.seed=3", *overrides]).study.sampler, space)
    before = expected(GRID, seed=3) if expected is QueuedGridSampler else expected(seed=3)  # as make_sampler did
    assert type(sampler) is expected
    assert np.array_equal(sampler._rng.rng.get_state()[1], before._rng.rng.get_state()[1]), "seeded with seed=3"
    if expected is QueuedGridSampler:
        assert sampler._search_space == {"loss.scale": [1.0, 20.0]}, "the grid comes from the search space"


@pytest.mark.parametrize(
    ("overrides", "expected", "attributes"),
    [
        ([], optuna.pruners.NopPruner, {}),
        (["study.pruner.name=median"], optuna.pruners.MedianPruner, {"_n_startup_trials": 5, "_n_warmup_steps": 0}),
        (
            ["study.pruner.name=successive_halving", "study.pruner.min_resource=25", "study.pruner.reduction_factor=2"],
            optuna.pruners.SuccessiveHalvingPruner,
            {"_min_resource": 25, "_reduction_factor": 2},
        ),
        (["study.pruner.name=successive_halving"], optuna.pruners.SuccessiveHalvingPruner, {"_min_resource": None}),
        (
            ["study.pruner.name=hyperband"],
            optuna.pruners.HyperbandPruner,
            {"_min_resource": 40, "_reduction_factor": 3},
        ),
        (
            ["study.pruner._target_=optuna.pruners.HyperbandPruner"],
            optuna.pruners.HyperbandPruner,
            {"_min_resource": 40},
        ),
        (
            ["study.pruner._target_=optuna.pruners.PercentilePruner", "+study.pruner.percentile=25"],
            optuna.pruners.PercentilePruner,
            {"_percentile": 25, "_n_startup_trials": 5},
        ),
    ],
)
def test_every_short_pruner_name_builds_the_class_it_did(overrides, expected, attributes):
    pruner = make_pruner(compose_config(overrides).study.pruner, eval_steps=40)
    assert type(pruner) is expected
    assert {name: getattr(pruner, name) for name in attributes} == attributes


def test_a_nested_target_is_built_too():
    cfg = compose_config(
        [
            "study.pruner._target_=optuna.pruners.PatientPruner",
            "+study.pruner.patience=2",
            "+study.pruner.wrapped_pruner._target_=optuna.pruners.MedianPruner",
        ]
    )
    pruner = make_pruner(cfg.study.pruner, eval_steps=40)
    assert isinstance(pruner._wrapped_pruner, optuna.pruners.MedianPruner) and pruner._patience == 2


DIST_SPACE = "+study.search_space.loss.scale={type:float,low:1,high:50}"
GRID_SPACE = "+study.search_space.loss.scale=[1,20]"


@pytest.mark.parametrize(
    ("overrides", "key", "says"),
    [
        (["study.sampler._target_=optuna.samplers.NoSuchSampler"], "study.sampler._target_", "cannot be imported"),
        (["study.sampler._target_=builtins.dict"], "study.sampler._target_", "not an Optuna sampler class"),
        (["study.sampler._target_=optuna.pruners.MedianPruner"], "study.sampler._target_", "not an Optuna sampler"),
        (["study.pruner._target_=optuna.samplers.TPESampler"], "study.pruner._target_", "not an Optuna pruner class"),
        (
            ["study.sampler._target_=optuna.samplers.QMCSampler", "+study.sampler.nope=1"],
            "study.sampler.nope",
            "scramble",
        ),
        (["study.pruner.name=median", "+study.pruner.nope=1"], "study.pruner.nope", "not an argument of MedianPruner"),
        (
            ["study.sampler._target_=optuna.samplers.QMCSampler", "+study.sampler.qmc_type=x"],
            "study.sampler._target_",
            "x",
        ),
        (["study.pruner.name=median", "study.pruner.n_startup_trials=-1"], "study.pruner.n_startup_trials", ">= 0"),
        (["study.sampler._target_=optuna.samplers.QMCSampler", "study.sampler.name=tpe"], "study.sampler.name", "one"),
        (["study.sampler._target_=optuna.samplers.GridSampler"], "study.sampler._target_", "list of values"),
        ([GRID_SPACE, "+study.sampler.search_space={}"], "study.sampler.search_space", "study.search_space"),
    ],
)
def test_a_bad_target_or_argument_is_one_config_error_naming_the_key(overrides, key, says):
    space = [] if GRID_SPACE in overrides else [DIST_SPACE]
    cfg = compose_config([*space, *overrides])
    with pytest.raises(ConfigError) as error:
        check_config(cfg, load=False)
    assert error.value.key == key and says in str(error.value), str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("preset", "model", "data_source", "trial"),
    [
        ("gpu", "microsoft/mpnet-base", "hub", {"max_steps": 2000, "batch_size": 128, "eval_steps": 250}),
        ("gpu_offline", "sentence-transformers/all-MiniLM-L6-v2", "local", {"max_steps": 300, "eval_steps": 100}),
    ],
)
def test_a_gpu_preset_sets_model_data_and_trial_options(preset, model, data_source, trial):
    plain, cfg = compose_config([]), compose_config([f"preset={preset}"])
    assert cfg.model.name_or_path == model and cfg.data.source == data_source
    assert cfg.trial.precision == "bf16" and cfg.trial.device == "auto"
    assert {k: cfg.trial[k] for k in trial} == trial
    assert set(cfg.trial) == set(plain.trial), "a preset sets trial options; it adds none"
    assert cfg.trial.optimizer == plain.trial.optimizer and cfg.trial.seed == plain.trial.seed, (
        "the rest from trial/cpu"
    )
    experiment = compose_config([f"preset={preset}", "+experiment=mnrl_scale"])
    assert experiment.trial.max_steps == 120 and experiment.model.name_or_path == model, "an experiment overrides it"


def test_trial_holds_only_trial_options():
    assert sorted(p.stem for p in (Path(CONFIG_DIR) / "trial").glob("*.yaml")) == ["cpu"]

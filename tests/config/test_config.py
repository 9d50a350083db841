"""Config composition, scale/temperature, the search space and validation before training."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from sweep.config import search_space
from sweep.config.checks import AUTO_EVAL_BATCH_SIZE, flatten, with_values
from sweep.config.composition import compose_config
from sweep.config.scale_temperature import scale_values
from sweep.errors import ConfigError
from sweep.study.lifecycle import open_sweep
from sweep.study.setup import declared_space
from sweep.study.validation import check_config, trial_config


def test_the_shipped_example_composes_and_validates(compose_cfg):
    cfg = compose_cfg("+experiment=mnrl_scale", tiny=False)
    assert cfg.name == "mnrl_scale" and search_space.parse(cfg.study.search_space)
    check_config(cfg, load=False)


def test_default_experiment_grid_covers_0_20_50(compose_cfg):
    cfg = compose_cfg("+experiment=mnrl_scale", tiny=False)
    scales = cfg.study.search_space.loss.scale
    assert len(scales) >= 8 and {0, 20, 50} <= set(scales)
    assert cfg.trial.weight_decay == 0, "scale 0 needs weight decay 0"


def test_gpu_preset_composes_and_validates(compose_cfg, monkeypatch):
    import transformers.utils

    # as on the GPU the preset is for: its bf16 is refused where no accelerator has it (tests/config/test_early_checks)
    monkeypatch.setattr(transformers.utils, "is_torch_bf16_gpu_available", lambda: True)
    cfg = compose_cfg("+experiment=mnrl_scale", "preset=gpu", tiny=False)
    assert cfg.model.name_or_path == "microsoft/mpnet-base"
    assert cfg.data.source == "hub" and cfg.trial.precision == "bf16" and cfg.trial.device == "auto"
    check_config(cfg, load=False)


@pytest.mark.parametrize(
    ("scale", "temperature", "expected_scale", "expected_temperature"),
    [
        (20, None, 20.0, 0.05),
        (0, None, 0.0, math.inf),
        (20, 0.01, 100.0, 0.01),
    ],
)
def test_scale_and_temperature_are_interchangeable(
    compose_cfg, scale, temperature, expected_scale, expected_temperature
):
    cfg = compose_cfg(f"loss.scale={scale}", f"loss.temperature={temperature if temperature is not None else 'null'}")
    cfg = with_values(cfg, scale_values(cfg.loss))
    assert cfg.loss.scale == pytest.approx(expected_scale)
    assert cfg.loss.temperature == pytest.approx(expected_temperature)


def test_search_space_grid_and_distributions():
    space = search_space.parse(
        OmegaConf.create(
            {
                "loss": {"scale": [0, 10], "temperature": {"type": "float", "low": 0.01, "high": 1.0, "log": True}},
                "trial": {
                    "seed": {"type": "int", "low": 0, "high": 3},
                    "optimizer": {"type": "categorical", "choices": ["a", "b"]},
                },
            }
        )
    )
    assert space["loss.scale"] == [0, 10]
    assert space["loss.temperature"].log and space["trial.seed"].high == 3
    assert not search_space.is_grid(space)
    grid = search_space.parse(OmegaConf.create({"loss": {"scale": [0, 10, 20]}, "trial": {"seed": [0, 1]}}))
    assert search_space.is_grid(grid) and search_space.grid_size(grid) == 6


def test_seeds_become_a_trial_seed_axis(compose_cfg):
    cfg = compose_cfg("+experiment=mnrl_scale", "study.seeds=[0,1,2]", tiny=False)
    space = search_space.parse(declared_space(cfg.study))
    assert space["trial.seed"] == [0, 1, 2] and search_space.grid_size(space) == 3 * len(space["loss.scale"])
    with pytest.raises(ConfigError, match="study.seeds"):
        declared_space(compose_cfg("study.seeds=[0]", "+study.search_space.trial.seed=[1]").study)


def test_apply_sets_keys_and_derives_scale_from_temperature(compose_cfg):
    cfg = trial_config(compose_cfg(), {"loss.temperature": 0.05, "trial.seed": 3})
    cfg = with_values(cfg, scale_values(cfg.loss))
    assert cfg.loss.scale == pytest.approx(20.0) and cfg.trial.seed == 3
    flat = flatten(cfg)
    assert flat["loss.scale"] == pytest.approx(20.0) and flat["loss.temperature"] == 0.05


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["loss.scale=-1"], "loss.scale"),
        (["name=nan"], "name"),
        (["loss.temperature=0"], "loss.temperature"),
        (["loss.name=nope"], "loss.name"),
        (["study.sampler.name=nope"], "study.sampler.name"),
        (["study.pruner.name=nope"], "study.pruner.name"),
        (["model.kind=nope"], "model.kind"),
        (["trial.batch_size=1"], "trial.batch_size"),
        (["+study.search_space.loss.scale=[0,-5]"], "loss.scale"),
        (["+study.search_space.loss.scale=[0,20]", "trial.weight_decay=0.01"], "trial.weight_decay"),
        (["+study.search_space.loss.nonexistent=[1]"], "study.search_space.loss.nonexistent"),
        (
            ["data.train.columns=[sentence1,sentence2,score]", "data.train.local_file=stsb/train.csv"],
            "data.train.columns",
        ),
        (["data.train.local_file=/nonexistent/file.csv", "data.source=local"], "data.train.local_file"),
        (["model.config_overrides.hidden_size=16", "model.reinit=false"], "model.config_overrides"),
        (["study.outage_timeout_s=0"], "study.outage_timeout_s"),
        (["study.pack_memory_gib=-2"], "study.pack_memory_gib"),
        (["study.pack_memory_gib=lots"], "study.pack_memory_gib"),
        (["tracking.system_metrics_interval_s=0"], "tracking.system_metrics_interval_s"),
    ],
)
def test_bad_config_is_refused_before_training_naming_the_key(compose_cfg, overrides, key):
    cfg = compose_cfg(*overrides)
    with pytest.raises(ConfigError) as error:
        check_config(cfg, load=False)
    assert error.value.key == key
    assert key in str(error.value)


@pytest.mark.parametrize(
    ("override", "key", "message"),
    [
        ("trial.max_steps=abc", "trial.max_steps", "must be an integer"),
        ("trial.learning_rate=fast", "trial.learning_rate", "must be a number"),
        ("stats.enabled=maybe", "stats.enabled", "must be true or false"),
        ("trial.batch_size=null", "trial.batch_size", "must not be null"),
        ("trial.max_stepz=5", "trial.max_stepz", "is not a key of the config"),
        ("+trial.max_stepz=5", "trial.max_stepz", "is not a key of the config"),
        ("loss.wrapper.n_layers_per_step=all", "loss.wrapper.n_layers_per_step", "must be an integer"),
        ("model=nope", "model", "one of minilm, minilm_l1, mpnet_base, static_minilm, tiny_bert"),
    ],
)
def test_the_schema_refuses_types_and_unknown_keys_in_one_line(override, key, message):
    with pytest.raises(ConfigError) as error:
        compose_config([override])
    assert error.value.key == key and message in str(error.value) and "\n" not in str(error.value)


def test_a_grid_value_of_the_wrong_type_names_the_search_space_key(compose_cfg):
    cfg = compose_cfg("+study.search_space.trial.max_steps=[10,ten]")
    with pytest.raises(ConfigError, match="must be an integer") as error:
        check_config(cfg, load=False)
    assert error.value.key == "study.search_space.trial.max_steps"


def test_unknown_model_is_refused_before_training(compose_cfg, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = compose_cfg("model.name_or_path=no-such-org/no-such-model", "name=unknown_model")
    with pytest.raises(ConfigError) as error:
        open_sweep(cfg)
    assert error.value.key == "model.name_or_path" and "no-such-org/no-such-model" in str(error.value)
    assert not (Path(cfg.paths.root) / "optuna.db").exists(), "refused before the study was created"


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("study.storage=postgresql://nobody:secret@127.0.0.1:1/nothing", "study.storage"),
        ("tracking.uri=http://127.0.0.1:1", "tracking.uri"),
    ],
)
def test_unreachable_storage_or_tracking_is_named(compose_cfg, monkeypatch, override, key):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    with pytest.raises(ConfigError) as error:
        open_sweep(compose_cfg(override, "name=unreachable"))
    assert error.value.key == key


def test_auto_eval_batch_size_follows_the_model_kind(compose_cfg):
    composed = compose_cfg(tiny=False)
    static = trial_config(composed)
    assert static.trial.eval_batch_size == AUTO_EVAL_BATCH_SIZE["static"]
    assert composed.trial.eval_batch_size == "auto", "resolution returns a new config"
    transformer = trial_config(compose_cfg("trial.device=cpu"))  # tiny_bert
    assert transformer.trial.eval_batch_size == AUTO_EVAL_BATCH_SIZE["transformer_cpu"]
    fixed = trial_config(compose_cfg("trial.eval_batch_size=100"))
    assert fixed.trial.eval_batch_size == 100
    with pytest.raises(ConfigError, match="trial.eval_batch_size.*auto or an integer"):
        trial_config(compose_cfg("trial.eval_batch_size=big"))


@pytest.mark.parametrize(
    ("overrides", "learning_rate"),
    [
        ([], 0.05),  # the static CPU default: the same rate as before models carried one
        (["+experiment=mnrl_scale"], 0.05),
        (["+experiment=mnrl_scale", "model=minilm"], 2e-5),  # was 0.05: the transformer collapsed
        (["+experiment=mnrl_scale", "model=mpnet_base"], 2e-5),
        (["+experiment=mnrl_scale", "preset=gpu_offline"], 2e-5),
        (["model=minilm", "trial.learning_rate=5e-5"], 5e-5),  # an explicit rate still wins
    ],
)
def test_the_learning_rate_follows_the_model_unless_set(compose_cfg, overrides, learning_rate):
    assert compose_cfg(*overrides, tiny=False).trial.learning_rate == learning_rate


@pytest.mark.parametrize("loss", ["mnrl", "cosent"])
def test_a_transformer_at_the_static_learning_rates_a_study_sweeps_is_refused(compose_cfg, loss):
    """A grid of the static model's learning rates (0.002 to 0.1) with `model=minilm`: the transformer would collapse
    at each of them, so the config is refused before training, naming trial.learning_rate, the grid point and
    the fix."""
    grid = "++study.search_space.trial.learning_rate=[0.002,0.01,0.1]"
    data = ["data=stsb_pairs"] if loss == "cosent" else []  # CoSENT reads scored pairs
    cfg = compose_cfg(f"loss={loss}", *data, grid, "model=minilm", tiny=False)
    with pytest.raises(ConfigError) as error:
        check_config(cfg, load=False)
    message = str(error.value)
    assert error.value.key == "trial.learning_rate" and "(grid point " in message and "\n" not in message
    assert "model.learning_rate=2e-05" in message and "use rates <= 0.001" in message


def test_the_logged_config_holds_the_models_learning_rate_as_a_number(compose_cfg):
    """`config.yaml` on the parent run (a results folder's copy, read without OmegaConf) gets the rate, not
    ``${model.learning_rate}``."""
    import yaml
    from mlflow.tracking import MlflowClient

    cfg = compose_cfg(
        "trial.learning_rate=${model.learning_rate}", "name=logged_lr"
    )  # TINY sets it: back to the default
    sweep = open_sweep(cfg)
    logged = MlflowClient(cfg.tracking.uri).download_artifacts(sweep.parent_run_id, "config.yaml")
    trial = yaml.safe_load(Path(logged).read_text())["trial"]
    assert trial["learning_rate"] == 1e-3 == cfg.model.learning_rate  # tiny BERT's own rate

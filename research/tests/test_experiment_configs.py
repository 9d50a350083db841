"""This repository's studies compose and pass the checks before any training: each experiment, the rates they pin,
the schemas that still type the groups they override, and the schedule study's arms."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from research.tests.conftest import EXPERIMENTS
from sweep.config import search_space
from sweep.config.schema import ScaleScheduleConfig, WrapperConfig
from sweep.losses.scale_schedule import parse_spec
from sweep.study.validation import check_config, trial_config


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_composes_and_validates(compose_cfg, experiment):
    cfg = compose_cfg(f"+experiment={experiment}", tiny=False)
    assert cfg.name == experiment
    space = search_space.parse(cfg.study.search_space)
    assert space, "an experiment declares a search space"
    check_config(cfg, load=False)


@pytest.mark.parametrize(
    ("overrides", "learning_rate"),
    [
        (["+experiment=gist_temperature"], 1e-4),  # minilm_l1's own rate, as the experiment pinned it
        (["+experiment=matryoshka2d"], 1e-4),
        (["+experiment=gist_temperature", "model=minilm"], 2e-5),  # the model's rate where the study names none
    ],
)
def test_a_study_pins_its_rate_or_follows_the_model(compose_cfg, overrides, learning_rate):
    assert compose_cfg(*overrides, tiny=False).trial.learning_rate == learning_rate


def test_the_schemas_still_type_the_wrapper_and_the_schedule(compose_cfg):
    cfg = compose_cfg("+experiment=mnrl_scale_schedule")
    assert OmegaConf.get_type(cfg.loss.wrapper) is WrapperConfig
    assert OmegaConf.get_type(cfg.loss.scale_schedule) is ScaleScheduleConfig


def test_the_study_composes_one_grid_of_readable_arms(compose_cfg):
    cfg = compose_cfg("+experiment=mnrl_scale_schedule", tiny=False)
    arms = OmegaConf.to_container(cfg.study.search_space.loss.scale_schedule.spec)
    assert [parse_spec(arm).words() for arm in arms] == arms  # each arm reads back as itself
    space = search_space.parse(cfg.study.search_space)
    assert search_space.grid_size(space) == len(arms) == 5  # one axis: each arm is one grid point
    check_config(cfg, load=False)  # every arm passes the checks before training
    firsts = [trial_config(cfg, {"loss.scale_schedule.spec": arm}).loss.scale for arm in arms]
    assert firsts == [10.0, 20.0, 5.0, 5.0, 50.0]

"""Scale and temperature (defect 4): the key the user set wins over the loss's default for the other; two set
keys that disagree are refused, naming both."""

from __future__ import annotations

import math

import pytest

from sweep.config.checks import with_values
from sweep.config.scale_temperature import scale_values
from sweep.errors import ConfigError
from sweep.study.validation import check_config, trial_config


def resolve_scale(cfg):
    """`cfg` with `loss.scale` and `loss.temperature` agreeing (`scale_values`)."""
    return with_values(cfg, scale_values(cfg.loss))


SCALED_LOSSES = ("mnrl", "cached_mnrl", "cosent", "angle", "gist", "learnable_scale")


@pytest.mark.parametrize("loss", SCALED_LOSSES)
def test_a_set_scale_wins_over_the_default_temperature(compose_cfg, loss):
    cfg = resolve_scale(compose_cfg(f"loss={loss}", "loss.scale=50"))
    assert cfg.loss.scale == 50.0 and cfg.loss.temperature == pytest.approx(0.02)


@pytest.mark.parametrize("loss", SCALED_LOSSES)
def test_a_set_temperature_wins_over_the_default_scale(compose_cfg, loss):
    cfg = resolve_scale(compose_cfg(f"loss={loss}", "loss.temperature=0.1"))
    assert cfg.loss.scale == pytest.approx(10.0) and cfg.loss.temperature == pytest.approx(0.1)


@pytest.mark.parametrize("loss", SCALED_LOSSES)
def test_scale_and_temperature_set_to_disagreeing_values_are_refused(compose_cfg, loss):
    cfg = compose_cfg(f"loss={loss}", "loss.scale=50", "loss.temperature=0.5")
    with pytest.raises(ConfigError) as error:
        resolve_scale(cfg)
    message = str(error.value)
    assert error.value.key == "loss.scale" and "loss.temperature=0.5" in message and "\n" not in message


def test_agreeing_values_and_resolving_twice_are_accepted(compose_cfg):
    cfg = resolve_scale(resolve_scale(compose_cfg("loss=gist", "loss.scale=20", "loss.temperature=0.05")))
    assert cfg.loss.scale == 20.0 and cfg.loss.temperature == pytest.approx(0.05)


def test_the_gist_default_and_a_gist_scale_grid(compose_cfg):
    cfg = resolve_scale(compose_cfg("loss=gist"))
    assert cfg.loss.scale == pytest.approx(100.0)
    cfg = compose_cfg("loss=gist", "model=tiny_bert", "+study.search_space.loss.scale=[10,50]")
    check_config(cfg, load=False)
    point = resolve_scale(trial_config(cfg, {"loss.scale": 50}))
    assert point.loss.scale == 50.0 and not math.isclose(point.loss.temperature, 0.01)

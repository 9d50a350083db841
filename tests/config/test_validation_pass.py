"""One validation pass (`sweep.study.validation.check_config`): every bad key of a config is named at once, one line
each with its value and fix, before any work: no study, no MLflow run, no folder (Hydra's output folder included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.errors import ConfigError, ConfigErrors
from sweep.study.validation import check_config
from tests.helpers import run_sweep


def test_the_command_names_every_bad_key_at_once_before_any_folder(tmp_path):
    home = tmp_path / "sweep_runs"
    done = run_sweep("+experiment=mnrl_scale", "study.timeout=-5", "trial.max_steps=-1", home=home, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("sweep: invalid config: ") for line in lines), lines
    assert lines[0].startswith("sweep: invalid config: study.timeout=-5.0: must be a finite number > 0"), lines
    assert lines[1].startswith("sweep: invalid config: trial.max_steps=-1: must be an integer >= 1"), lines
    assert not home.exists(), "nothing created: no Hydra folder, no study, no MLflow database"


def test_one_pass_collects_the_errors_of_every_section(compose_cfg):
    cfg = compose_cfg("study.timeout=-5", "trial.max_steps=-1", "trial.batch_size=1", "model.pooling=nope")
    with pytest.raises(ConfigErrors) as error:
        check_config(cfg)
    found = {(e.key, e.value) for e in error.value.errors}
    assert found == {("study.timeout", -5), ("trial.max_steps", -1), ("trial.batch_size", 1), ("model.pooling", "nope")}
    assert str(error.value).count("\n") == 3, "one line per key"
    assert isinstance(error.value, ConfigError) and error.value.key == "study.timeout", "the first, as one error"
    assert not Path(cfg.paths.root).exists(), "checked without creating paths.root"


def test_a_key_is_named_once_at_the_first_grid_point_it_fails(compose_cfg):
    cfg = compose_cfg("trial.warmup_ratio=2", "+study.search_space.loss.scale=[10,20,30]")
    with pytest.raises(ConfigErrors) as error:
        check_config(cfg, load=False)
    (only,) = error.value.errors
    assert only.key == "trial.warmup_ratio" and only.allowed.endswith("(grid point loss.scale=10)")

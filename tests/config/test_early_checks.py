"""Values valid one by one that would fail or mislead only once training runs (a study name that is a path, no
seeds, fewer training rows than one batch, bf16 where the device has none, a scale whose metric name MLflow refuses)
are refused before any training with one line naming the key, or, for the metric, named so that MLflow takes them."""

from __future__ import annotations

import pytest
import transformers.utils
from mlflow.utils.validation import _validate_metric_name

from sweep.config.composition import check_known_keys, compose_config
from sweep.errors import ConfigError
from sweep.report.summaries import LOSS_AT_SCALE
from sweep.stats.concentration import loss_metric
from sweep.study.lifecycle import open_sweep
from tests.conftest import TINY
from tests.helpers import run_sweep


def test_an_empty_list_of_seeds_is_refused(compose_cfg):
    """Before, `study.seeds=[]` trained as if the key were null (one run per point at trial.seed)."""
    with pytest.raises(ConfigError, match=r"at least one seed") as error:
        open_sweep(compose_cfg("+experiment=mnrl_scale", "study.seeds=[]", "name=seeds"))
    assert error.value.key == "study.seeds" and "\n" not in str(error.value)


@pytest.mark.parametrize("name", ["a/b", "..", "../x", ".hidden", "a\\b", "-x"])
def test_a_study_name_that_is_a_path_is_refused(compose_cfg, name):
    """Before, `name=a/b` trained (its models under models/a/b) and `name=../../../x` kept models outside paths.root."""
    with pytest.raises(ConfigError, match=r"a study name is a name, not a path: letters, digits") as error:
        open_sweep(compose_cfg(f"name='{name}'"))
    assert error.value.key == "name"


@pytest.mark.parametrize("name", ["mnrl_scale", "mnrl_scale_1e-05", "run-2.b", "_x"])
def test_names_the_experiments_use_still_pass(compose_cfg, name):
    from sweep.config.early_checks import check_study_name

    check_study_name(compose_cfg(f"name={name}").study.name)


@pytest.mark.parametrize(
    ("flags", "name"), [([], "name=../../../x"), (["-m"], "name=ok,../../../x")], ids=["run", "multirun"]
)
def test_a_path_as_name_exits_2_before_hydra_makes_a_folder_of_it(tmp_path, flags, name):
    home = tmp_path / "a" / "b" / "home"
    done = run_sweep(*flags, *TINY, name, home=home, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("sweep: invalid config: name='../../../x': a study name is a name, not a path")
    assert not [path for path in tmp_path.rglob("*") if path.name == "x"], "nothing written outside paths.root"


def test_fewer_training_rows_than_one_batch_is_refused(compose_cfg):
    """Before, data.train.max_samples=10 with trial.batch_size=64 trained on batches of 10 rows."""
    with pytest.raises(ConfigError, match=r"fewer training rows than one batch \(trial.batch_size=64\)") as error:
        open_sweep(compose_cfg("data.train.max_samples=10", "trial.batch_size=64", "name=rows"))
    assert error.value.key == "data.train.max_samples" and error.value.value == 10


def test_a_swept_batch_size_above_the_training_rows_is_refused_at_its_grid_point(compose_cfg):
    overrides = ("data.train.max_samples=16", "+study.search_space.trial.batch_size=[8,32]", "name=rows")
    with pytest.raises(ConfigError, match=r"grid point trial.batch_size=32") as error:
        open_sweep(compose_cfg(*overrides))
    assert error.value.key == "data.train.max_samples"


def test_bf16_on_a_device_without_it_is_refused(compose_cfg, monkeypatch):
    """Before, every trial failed inside transformers ("Your setup doesn't support bf16/gpu")."""
    monkeypatch.setattr(transformers.utils, "is_torch_bf16_gpu_available", lambda: False)
    message = r"trial.device=auto finds none here.*use trial.precision=fp32, or trial.device=cpu \(bf16 on the CPU\)"
    with pytest.raises(ConfigError, match=message) as error:
        open_sweep(compose_cfg("trial.device=auto", "trial.precision=bf16", "name=bf16"))
    assert error.value.key == "trial.precision"


def test_bf16_on_the_cpu_passes(compose_cfg, monkeypatch):
    """transformers runs bf16 on the CPU (autocast) when told so (use_cpu, i.e. trial.device=cpu)."""
    monkeypatch.setattr(transformers.utils, "is_torch_bf16_gpu_available", lambda: False)
    from sweep.study.validation import trial_config

    trial_config(compose_cfg("trial.device=cpu", "trial.precision=bf16"))


@pytest.mark.parametrize("scale", [1e6, 1e9, 2.5e12, 1e-7, 1e300])
def test_every_scale_names_a_metric_mlflow_takes_and_the_reports_read_back(scale):
    """Before, scale 1e9 gave `sim_loss_at_scale_1e+09`, which MLflow refuses ('+'), failing every trial."""
    name = loss_metric(scale)
    _validate_metric_name(name)
    _validate_metric_name(f"{name}_init")
    match = LOSS_AT_SCALE.match(name)
    assert match is not None and float(match[1]) == scale


def test_the_published_metric_names_are_unchanged():
    names = [loss_metric(scale) for scale in (0, 0.5, 1, 20, 50, 100)]
    assert names == [f"sim_loss_at_scale_{s}" for s in ("0", "0.5", "1", "20", "50", "100")]


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (["+experiment=mnrl_scale", "study.seeds=[]"], "study.seeds"),
        (["data.train.max_samples=10", "trial.batch_size=64"], "data.train.max_samples"),
    ],
    ids=["no-seeds", "rows-below-a-batch"],
)
def test_on_the_command_line_each_is_one_line_and_exit_code_2(tmp_path, args, key):
    done = run_sweep(*TINY, "name=x", *args, home=tmp_path, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"sweep: invalid config: {key}=")
    assert not (tmp_path / "optuna.db").exists(), "refused before any study was opened"


@pytest.mark.parametrize(
    ("override", "nearest"),
    [("study.seed=[0,1]", "study.seeds"), ("+trial.max_stepz=5", "trial.max_steps"), ("trial.lerning_rate=1", None)],
)
def test_an_unknown_key_names_the_nearest_known_one(override, nearest):
    """`study.seed=[0,1]` said only `is not a key of the config` (issue 52): a close key is suggested."""
    with pytest.raises(ConfigError) as error:  # Hydra refuses the first while composing, the schema the second
        check_known_keys(compose_config([override]))
    message = str(error.value)
    assert "is not a key of the config" in message and "\n" not in message
    if nearest:
        assert f"did you mean {nearest}?" in message, message


def test_an_experiment_file_that_is_not_yaml_is_one_line_naming_its_line(tmp_path):
    """A YAML syntax error in an experiment of the user's --config-dir was Hydra's and PyYAML's traceback, exit 1
    (issue 52): one line naming the file, line and column, exit code 2, nothing created."""
    (tmp_path / "mine" / "experiment").mkdir(parents=True)
    bad = tmp_path / "mine" / "experiment" / "bad.yaml"
    bad.write_text("# @package _global_\nname: bad\nstudy:\n  search_space: {loss: {scale: [1, 2}\n")
    done = run_sweep("--config-dir", str(tmp_path / "mine"), "+experiment=bad", home=tmp_path / "runs")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith(f"sweep: invalid config: config file='{bad}': line 4, column ") and "YAML" in lines[0]
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("overrides", "fix"),
    [
        (["study.search_space.loss.scale=[1,2]"], "'+study.search_space.loss.scale=[1,2]'"),
        (
            ["+experiment=mnrl_scale", "study.search_space.loss.scale={type:float,low:1,high:50,log:true}"],
            "'~study.search_space.loss.scale' '+study.search_space.loss.scale={type:float,low:1,high:50,log:true}'",
        ),
    ],
    ids=["new-key", "grid-to-distribution"],
)
def test_a_search_space_from_the_command_line_is_told_what_to_type(overrides, fix):
    """They said `study.search_space.loss=None: is not a key of the config` and `Cannot merge DictConfig with
    ListConfig` (issue 52); the line now holds the overrides that work, and those compose."""
    with pytest.raises(ConfigError) as error:
        compose_config(overrides)
    assert error.value.key == "study.search_space.loss.scale" and fix in str(error.value), str(error.value)
    working = [*overrides[:-1], *(part.strip("'") for part in fix.split("' '"))]
    assert compose_config(working).study.search_space.loss.scale

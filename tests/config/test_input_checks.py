"""Values sweep hands straight to a library or reads from disk, and overrides the search space would replace, are
refused before any training with one line naming the key."""

from __future__ import annotations

import pytest
import torch

from sweep.config.input_checks import transformers_names
from sweep.errors import ConfigError
from sweep.study.lifecycle import open_sweep
from tests.conftest import TINY
from tests.helpers import run_sweep


@pytest.mark.parametrize(("module", "enum"), [("training_args", "OptimizerNames"), ("trainer_utils", "SchedulerType")])
def test_the_names_read_from_transformers_source_are_its_enums(module, enum):
    """The optimizer and scheduler names are read from transformers' source (importing it imports torch, seconds of a
    refusal): they are the enum's values, in its order."""
    import importlib

    members = getattr(importlib.import_module(f"transformers.{module}"), enum)
    assert transformers_names(module, enum) == tuple(member.value for member in members)


@pytest.mark.parametrize(
    "override",
    [
        "trial.optimizer=not_an_optimizer",
        "trial.lr_scheduler=sometimes",
        "trial.device=tpu",
        "trial.device=cuda",
        "trial.device=cuda:1",
    ],
)
def test_keys_handed_to_libraries_are_checked_before_training(compose_cfg, monkeypatch, override):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError) as error:
        open_sweep(compose_cfg(override, "name=bad"))
    assert error.value.key == override.split("=")[0]
    if "cuda" in override:
        assert "CUDA is not available" in str(error.value)


def test_a_csv_without_the_configured_columns_is_refused(compose_cfg, tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("premise,hypothesis\na,b\n")
    with pytest.raises(ConfigError, match=r"missing \['anchor', 'positive', 'negative'\]") as error:
        open_sweep(compose_cfg(f"data.train.local_file={path}", "name=csv"))
    assert error.value.key == "data.train.local_file"


@pytest.mark.parametrize(
    ("split", "text", "message"),
    [
        ("train", "anchor,positive,negative\na,b,c\nd,,f\n", "line 3 has no value in column 'positive'"),
        ("train", 'anchor,positive,negative\n"a\nb",b,c\n\nd,e\n', "line 5 has no value in column 'negative'"),
        ("validation", "sentence1,sentence2,score\na,b,0.5\nc,d,high\n", "line 3 has 'high' in column 'score'"),
        ("validation", "sentence1,sentence2,score\na,b,0.5\nc,d,\n", "line 3 has no value in column 'score'"),
        ("train", "anchor,positive,negative\n", "has no rows"),  # was raised inside trial 0 (issue 52)
        ("train", "anchor,positive,negative\n\n  \n", "has no rows"),
    ],
    ids=["empty-cell", "quoted-newline-and-short-row", "score-not-a-number", "empty-score", "header-only", "blank"],
)
def test_a_bad_cell_in_a_users_csv_is_named_by_line_and_column_before_training(
    compose_cfg, tmp_path, split, text, message
):
    """Before, an empty cell was found only when trial 0 started (its column named, not its row)."""
    path = tmp_path / f"{split}.csv"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as error:
        open_sweep(compose_cfg(f"data.{split}.local_file={path}", "name=cells"))
    assert error.value.key == f"data.{split}.local_file" and error.value.value == str(path)
    assert not (tmp_path / "runs" / "optuna.db").exists(), "refused before the study was opened"


@pytest.mark.parametrize("override", ["loss.scale=-1", "loss.temperature=0.1"])
def test_overriding_a_key_the_experiment_sweeps_is_refused(compose_cfg, override):
    overrides = ["+experiment=mnrl_scale", override]
    with pytest.raises(ConfigError, match=r"study\.search_space\.loss\.scale") as error:
        open_sweep(compose_cfg(*overrides), overrides=overrides)
    assert error.value.key == override.split("=")[0]


@pytest.mark.parametrize(
    "args",
    [
        ["trial.optimizer=not_an_optimizer"],
        ["+experiment=mnrl_scale", "loss.scale=-1"],
        ["study.sampler._target_=optuna.samplers.NoSuchSampler"],
        ["trial.max_steps=abc"],
        ["trial.max_stepz=5"],
        ["data.train.local_file=nope.csv"],
        ["trial.learning_rate=0.05"],  # tiny BERT, a transformer, at the static model's rate
        ["+experiment=mnrl_scale", "study.race.enabled=true", "study.race.min_seeds=5"],  # 3 seeds to race over
    ],
    ids=["lib", "swept", "target", "schema-type", "schema-key", "missing-file", "transformer-lr", "race-min-seeds"],
)
def test_bad_input_on_the_command_line_is_one_line_and_exit_code_2(tmp_path, args):
    done = run_sweep(*TINY, "name=x", *args, home=tmp_path, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"sweep: invalid config: {args[-1].split('=')[0]}=")
    assert not (tmp_path / "optuna.db").exists(), "refused before any study was opened"


RACE_GRID = ("+study.search_space.loss.scale=[1,20]", "study.race.enabled=true")


@pytest.mark.parametrize(
    ("overrides", "key", "message"),
    [
        ((*RACE_GRID,), "study.race.enabled", "races over seeds: give study.seeds"),
        ((*RACE_GRID, "study.seeds=[0,1,2]", "study.race.min_seeds=1"), "study.race.min_seeds", "must be 2 to 3"),
        ((*RACE_GRID, "study.seeds=[0,1,2]", "study.race.min_seeds=4"), "study.race.min_seeds", "must be 2 to 3"),
        (
            (
                "+study.search_space.loss.scale={type:float,low:1,high:50}",
                "study.race.enabled=true",
                "study.seeds=[0,1]",
            ),
            "study.race.enabled",
            "races grid points",
        ),
        ((*RACE_GRID, "study.seeds=[0,1]", "study.pruner.name=median"), "study.race.enabled", "study.pruner.name=none"),
        (
            ("+study.search_space.loss.scale=[1,20]", "study.seeds=[0,1]", "study.race.stop_early=true"),
            "study.race.stop_early",
            "study.race.enabled=true",
        ),
        (
            (*RACE_GRID, "study.seeds=[0,1]", "study.race.stop_early=true", "study.pack=2"),
            "study.race.stop_early",
            "pack=1",
        ),
        (
            (*RACE_GRID, "study.seeds=[0,1]", "study.race.stop_early=true", "eval.objective=sts_ood_spearman"),
            "study.race.stop_early",
            "not eval.objective=sts_ood_spearman",
        ),
    ],
    ids=[
        "no-seeds",
        "min-seeds-1",
        "min-seeds-above-the-seeds",
        "distribution",
        "pruner",
        "stop-unraced",
        "stop-packed",
        "stop-another-objective",
    ],
)
def test_a_race_without_seeds_grid_or_whole_trials_is_refused_before_training(compose_cfg, overrides, key, message):
    with pytest.raises(ConfigError, match=message) as error:
        open_sweep(compose_cfg(*overrides, "name=race"))
    assert error.value.key == key
    assert all("\n" not in str(found) for found in getattr(error.value, "errors", [error.value])), "a line per key"

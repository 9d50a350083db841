"""Hydra's multirun (`python -m sweep -m ...`): each job is its own study, with its own Optuna study and MLflow parent
run; a multirun two of whose jobs would share a study is refused with one line before any job starts."""

from __future__ import annotations

import optuna
import pytest

from sweep.app import multirun_job
from sweep.config.multirun import shared_study
from sweep.errors import ConfigError
from tests.conftest import TINY, Compose
from tests.helpers import mlflow_runs, run_sweep

# `++`: Hydra composes the multirun's own config without the swept experiment, where search_space has no loss key.
ONE_POINT = ["stats.enabled=false", "study.seeds=[0]", "++study.search_space.loss.scale=[20]"]


def test_jobs_of_one_experiment_share_its_study_unless_the_name_says_what_differs(compose_cfg: Compose):
    steps = [["+experiment=mnrl_scale", f"trial.max_steps={n}"] for n in (2, 4)]
    refusal = shared_study([multirun_job(job, compose_cfg(*job)) for job in steps])
    assert isinstance(refusal, ConfigError) and refusal.key == "name" and refusal.value == "mnrl_scale"
    assert "'name=mnrl_scale_${trial.max_steps}'" in str(refusal), "the fix names the swept key"
    named = [[*job, "name=mnrl_scale_${trial.max_steps}"] for job in steps]
    assert shared_study([multirun_job(job, compose_cfg(*job)) for job in named]) is None
    elsewhere = [[*job, f"paths.root={tmp}"] for job, tmp in zip(steps, ("a", "b"), strict=True)]
    assert shared_study([multirun_job(job, compose_cfg(*job)) for job in elsewhere]) is None, (
        "two storages: two studies"
    )


def test_a_multirun_whose_jobs_share_a_study_is_refused_before_any_job(tmp_path):
    done = run_sweep("-m", "+experiment=mnrl_scale", *TINY, *ONE_POINT, "trial.max_steps=2,4", home=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sweep: invalid config: name='mnrl_scale': is the study of"), lines
    assert not list(tmp_path.iterdir()), "nothing opened, trained or written"


@pytest.mark.slow
def test_a_multirun_over_two_experiments_runs_two_studies(tmp_path):
    names = ["mnrl_scale", "my_scales"]  # the shipped example and a user's own experiment
    mine = tmp_path / "conf" / "experiment"
    mine.mkdir(parents=True)
    (mine / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - /experiment/mnrl_scale\n  - _self_\nname: my_scales\n"
    )
    conf = ["--config-dir", str(tmp_path / "conf")]
    done = run_sweep(*conf, "-m", "+experiment=mnrl_scale,mine", *TINY, *ONE_POINT, home=tmp_path / "runs")
    assert done.returncode == 0, done.stderr[-3000:]
    storage = f"sqlite:///{tmp_path}/runs/optuna.db"
    studies = {s.study_name: s.n_trials for s in optuna.get_all_study_summaries(storage)}
    assert studies == dict.fromkeys(names, 1), studies
    for name in names:
        _, parents, children = mlflow_runs(f"sqlite:///{tmp_path}/runs/mlflow.db", name)
        assert len(parents) == 1 and len(children) == 1, name
        assert parents[0].info.status == "FINISHED"
        assert f"study {name}: 1 complete trials" in done.stdout
    (sweep_dir,) = (tmp_path / "runs" / "hydra" / "multirun").iterdir()
    assert sorted(job.name for job in sweep_dir.iterdir() if job.is_dir()) == sorted(names), "a folder per job"


@pytest.mark.slow
def test_the_workers_of_a_multirun_job_find_the_experiments_of_its_config_dir(tmp_path):
    """A user's experiment in a folder of theirs (`--config-dir`), run as a multirun job with two workers: the extra
    worker composes the job's overrides with the same folder (before, it was given the overrides alone and stopped
    with 'Could not find experiment/mine' while the coordinator trained every point by itself)."""
    folder = tmp_path / "my_configs" / "experiment"
    folder.mkdir(parents=True)
    (folder / "mine.yaml").write_text("# @package _global_\nname: mine\n")
    home = tmp_path / "home"
    grid = ["stats.enabled=false", "study.seeds=[0]", "++study.search_space.loss.scale=[10,20]", "study.n_workers=2"]
    done = run_sweep("-m", f"--config-dir={folder.parent}", "+experiment=mine", *TINY, *grid, home=home)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "invalid config" not in done.stdout + done.stderr, (done.stdout + done.stderr)[-3000:]
    assert "study mine: 2 complete trials" in done.stdout, done.stdout[-3000:]

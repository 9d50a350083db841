"""A study with worker processes (`study.n_workers=N`): the process the user started reports the study once, after
every worker has finished, with the figures of every trial on the parent run; a worker trains and leaves."""

from __future__ import annotations

import pytest

from tests.conftest import TINY
from tests.helpers import mlflow_runs, run_sweep

GRID = ["+experiment=mnrl_scale", *TINY, "stats.enabled=false", "study.seeds=[0,1]", "study.n_workers=2"]


@pytest.mark.slow
def test_a_study_with_two_workers_prints_its_answer_once_and_logs_its_figures(tmp_path):
    """Before, each worker printed the whole summary block and logged the report on its own (on a GPU, 8 workers
    printed it 8 times, each while the others' trials still ran)."""
    done = run_sweep(*GRID, "study.search_space.loss.scale=[10,20]", home=tmp_path, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("study mnrl_scale: 4 complete trials") == 1, done.stdout[-4000:]
    assert done.stdout.count("STSB validation Spearman: best scale") == 1, done.stdout[-4000:]
    assert done.stdout.count("Disk use:") == 1, done.stdout[-4000:]
    client, (parent,), children = mlflow_runs(f"sqlite:///{tmp_path}/mlflow.db", "mnrl_scale")
    assert len(children) == 4 and parent.info.status == "FINISHED"
    report = {item.path for item in client.list_artifacts(parent.info.run_id, "report")}
    assert "report/spearman_vs_scale.png" in report, report

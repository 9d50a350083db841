"""Fault: a raced study (`study.race`) with two workers killed (SIGKILL, no clean-up) in the middle of a round.

The rerun fails the dead workers' trials (no heartbeat), queues their points again, finishes the round, takes its
decision once and races on: every point the race keeps has every seed once, the dropped point is never trained
again, no MLflow run stays RUNNING, and the race's record is the one an uninterrupted race writes
(tests/study/test_race.py)."""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState

from sweep.names import ATTR_MLFLOW_RUN_ID, TAG_RACE, TAG_ROLE, TAG_WORKER
from sweep.stats.race import SEEDS_USED
from tests.faults.harness import Sweep, wait_for
from tests.helpers import child_pids, is_alive

pytestmark = pytest.mark.faults  # injected faults: left out of the default run, run by CI (-m "")

# tests/study/test_race.py's race, on the mnrl_scale experiment the harness runs
ARGS = [
    "model=static_minilm",
    "trial.max_steps=16",
    "trial.eval_steps=8",
    "trial.batch_size=32",
    "data.train.max_samples=512",
    "study.search_space.loss.scale=[0,19,20]",
    "study.seeds=[0,1,2]",
    "stats.paired.margin=0.001",
    "study.race.enabled=true",
    "study.n_workers=2",
    "study.heartbeat_interval=2",
]
LINE = f"race: eliminated after 2 seeds: 0; ended after 3 seeds ({SEEDS_USED}): 19, 20 left"


def mid_round(storage: str) -> bool:
    """Some trials of the first round done, others being trained (with their MLflow run)."""
    trials = optuna.load_study(study_name="mnrl_scale", storage=storage).trials
    done = sum(t.state == TrialState.COMPLETE for t in trials)
    running = sum(t.state == TrialState.RUNNING and ATTR_MLFLOW_RUN_ID in t.user_attrs for t in trials)
    return done >= 2 and running >= 1


def test_a_race_killed_mid_round_is_continued_by_the_rerun_and_trains_nothing_twice(tmp_path):
    storage = f"sqlite:///{tmp_path}/optuna.db"
    first = Sweep(*ARGS, home=tmp_path)
    wait_for(lambda: mid_round(storage), "a round half done")
    workers = [p for p in child_pids(first.process.pid) if "sweep" in Path(f"/proc/{p}/cmdline").read_text()]
    for pid in [*workers, first.process.pid]:  # a crash: no process runs its clean-up
        if is_alive(pid):
            os.kill(pid, signal.SIGKILL)
    first.process.wait()
    study = optuna.load_study(study_name="mnrl_scale", storage=storage)
    assert any(t.state == TrialState.RUNNING for t in study.trials), "killed with a trial in progress"
    assert "sweep.race.round_2" not in study.user_attrs, "killed before the round was decided"

    code, output = Sweep(*ARGS, home=tmp_path, log="rerun.log").finish()
    assert code == 0, output[-3000:]
    assert LINE in output.splitlines(), output[-3000:]
    study = optuna.load_study(study_name="mnrl_scale", storage=storage)
    complete = Counter(
        (t.params["loss.scale"], t.params["trial.seed"]) for t in study.trials if t.state == TrialState.COMPLETE
    )
    expected = Counter([(0, 0), (0, 1), *((s, seed) for s in (19, 20) for seed in (0, 1, 2))])
    assert complete == expected, "every kept point with every seed once, the dropped one with two"
    trained = [t for t in study.trials if t.state != TrialState.WAITING and t.params.get("loss.scale") == 0]
    assert {t.params["trial.seed"] for t in trained} <= {0, 1}, "scale 0 never trained after it was dropped"
    attrs = study.user_attrs
    assert attrs["sweep.race.round_2"]["eliminated"] == [json.dumps({"loss.scale": 0})]
    assert attrs["sweep.race.round_3"]["ended"] == {"": SEEDS_USED}

    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("mnrl_scale").experiment_id])
    assert not [r for r in runs if r.info.status == "RUNNING"], "the killed trials' runs were ended"
    parent = next(r for r in runs if r.data.tags[TAG_ROLE] == "study")
    assert parent.data.tags[TAG_RACE] == LINE
    trained_by = {r.data.tags[TAG_WORKER] for r in runs if r.data.tags[TAG_ROLE] == "trial"}
    print(f"race killed mid-round: {sum(complete.values())} trials, workers {len(trained_by)}")
    assert len(trained_by) >= 2, "both workers of a run trained"

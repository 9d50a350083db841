"""`study.devices` through the real command line, on two simulated GPUs (`SWEEP_SIMULATED_GPUS`: the workers train
on the CPU and never call CUDA): one worker process per GPU, each started with its own `CUDA_VISIBLE_DEVICES`, every
trial records the device of its worker, no worker trains on two devices, both devices train, the coordinating
process trains nothing; a device that is not visible is refused in one line before anything starts."""

from __future__ import annotations

import os
import signal
import time
from collections import defaultdict
from pathlib import Path

import pytest

from sweep.names import ATTR_DEVICE, TAG_DEVICE, TAG_WORKER
from tests.helpers import (
    child_pids,
    is_alive,
    load_trials,
    mlflow_runs,
    pause_between_database_calls,
    sweep_process,
    wait_for_training,
)

SIMULATED = {"SWEEP_SIMULATED_GPUS": "2"}
GRID = "study.search_space.loss.scale=[1,20]"  # one point per worker


def environment_of(pid: int) -> dict[str, str]:
    entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(entry.decode().partition("=")[::2] for entry in entries if entry)


def running_devices(storage: str) -> set[str]:
    """The devices of the running trials that have recorded theirs (a grid trial carries its queue's attributes,
    grid point and attempt, from before it starts: non-empty attributes do not mean a device yet)."""
    trials = load_trials(storage)
    return {t.user_attrs[ATTR_DEVICE] for t in trials if t.state.name == "RUNNING" and ATTR_DEVICE in t.user_attrs}


@pytest.mark.slow
def test_each_worker_trains_on_the_one_gpu_it_was_given(tmp_path):
    storage = f"sqlite:///{tmp_path}/optuna.db"
    # heartbeat 20 s: a worker paused below (SIGSTOP) keeps its trial within the 60 s grace
    args = [GRID, "study.devices=auto", "study.n_workers=2", "trial.device=auto", "study.heartbeat_interval=20"]
    process = sweep_process(*args, home=tmp_path, **SIMULATED)
    workers: list[int] = []
    try:
        wait_for_training(process, storage)
        workers = [p for p in child_pids(process.pid) if "sweep" in Path(f"/proc/{p}/cmdline").read_text()]
        pinned = {pid: environment_of(pid)["CUDA_VISIBLE_DEVICES"] for pid in workers}
        assert sorted(pinned.values()) == ["0", "1"], "one process per GPU, pinned before it started"
        assert "CUDA_VISIBLE_DEVICES" not in environment_of(process.pid), "the coordinator's own environment"
        # Both workers must train: pause the one in a trial until the other is in one too.
        first = running_devices(storage).pop()
        busy = next(pid for pid, gpu in pinned.items() if first == f"cuda:{gpu} (simulated)")
        pause_between_database_calls(busy, [tmp_path / "optuna.db", tmp_path / "mlflow.db"])
        try:
            deadline = time.monotonic() + 240
            while len(running_devices(storage)) < 2 and time.monotonic() < deadline:
                time.sleep(0.5)
        finally:
            os.kill(busy, signal.SIGCONT)
        output = process.communicate(timeout=600)[0]
    finally:
        for pid in [process.pid, *workers]:
            if is_alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert process.returncode == 0, output[-3000:]
    assert "study mnrl_scale: 2 trials" in output and "2 of 2 done" in output, "the coordinator reports progress"

    trials = load_trials(storage)
    assert sorted(t.params["loss.scale"] for t in trials if t.state.name == "COMPLETE") == [1, 20]
    _, _, runs = mlflow_runs(f"sqlite:///{tmp_path}/mlflow.db", "mnrl_scale")
    assert len(runs) == 2 and {r.info.status for r in runs} == {"FINISHED"}, "each point trained once, none left"
    by_run = {t.user_attrs["mlflow_run_id"]: t.user_attrs[ATTR_DEVICE] for t in trials}
    devices_of: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        assert run.data.tags[TAG_DEVICE] == by_run[run.info.run_id], "the MLflow tag is the Optuna attribute"
        assert run.data.params["trial.device"] == "cpu", "a simulated GPU never calls CUDA"
        devices_of[run.data.tags[TAG_WORKER].rsplit(":", 1)[1]].add(run.data.tags[TAG_DEVICE])
    assert {int(pid) for pid in devices_of} == set(pinned), "the workers trained, the coordinator did not"
    for pid, devices in devices_of.items():
        assert devices == {f"cuda:{pinned[int(pid)]} (simulated)"}, "each worker trains on its own GPU only"


def test_a_device_that_is_not_visible_stops_before_anything_starts(tmp_path):
    process = sweep_process(
        GRID, "study.devices=[0,3]", "study.n_workers=2", "trial.device=auto", home=tmp_path, **SIMULATED
    )
    output = process.communicate(timeout=300)[0]
    assert process.returncode == 2, output[-3000:]
    assert "sweep: invalid config: study.devices[1]=3: only 2 GPUs are visible (SWEEP_SIMULATED_GPUS=2)" in output
    assert "Traceback" not in output and not (tmp_path / "optuna.db").exists(), "nothing opened or trained"


@pytest.mark.slow
def test_auto_sizes_the_workers_to_the_gpus_free_memory_and_says_why(tmp_path):
    """Issue 50: `study.n_workers=auto` on two simulated GPUs of 40 GiB free with 30 GiB a trial: one worker each,
    placed as a count would be, and one line saying what auto chose and why."""
    simulated = {**SIMULATED, "SWEEP_SIMULATED_GPU_FREE_GIB": "40"}
    args = [GRID, "study.devices=auto", "study.n_workers=auto", "study.pack_memory_gib=30", "trial.device=auto"]
    process = sweep_process(*args, home=tmp_path, **simulated)
    output = process.communicate(timeout=600)[0]
    assert process.returncode == 0, output[-3000:]
    chosen = [line for line in output.splitlines() if "study.n_workers=auto:" in line]
    assert len(chosen) == 1, output[-3000:]
    assert "auto: 2 workers (2 GPUs (cuda:0: 40.0 GiB free, cuda:1: 40.0 GiB free; 30.0 GiB per worker" in chosen[0]
    assert "study.devices: 2 workers on cuda:0 (simulated), cuda:1 (simulated)" in output
    _, (parent,), runs = mlflow_runs(f"sqlite:///{tmp_path}/mlflow.db", "mnrl_scale")
    assert len(runs) == 2 and parent.data.params["study.n_workers"] == "2", "the study records the count auto chose"

"""`study.devices`: which GPUs the workers train on (the visible ones, a SLURM task's own, a list), the one-line
refusals, the round-robin placement of `study.n_workers` workers with each one's pinned environment, and the device a
trial records. GPUs are simulated (`SWEEP_SIMULATED_GPUS`) or named by `CUDA_VISIBLE_DEVICES`: no CUDA is called."""

from __future__ import annotations

import logging
import subprocess

import pytest
from omegaconf import OmegaConf

from sweep import signals
from sweep.config.devices import Placement, place_workers, resolve_devices, trial_records, visible_gpus
from sweep.errors import ConfigError
from sweep.names import TAG_DEVICE, TAG_SLURM_JOB_ID, TAG_SLURM_LOCALID

TWO = {"SWEEP_SIMULATED_GPUS": "2"}


def test_auto_is_every_visible_gpu_by_its_physical_id():
    assert resolve_devices("auto", TWO) == ["0", "1"]
    # CUDA_VISIBLE_DEVICES names the visible GPUs: cuda:0 is physical 2, cuda:1 physical 5 (UUIDs pass as they are)
    assert resolve_devices("auto", {**TWO, "CUDA_VISIBLE_DEVICES": "2,5"}) == ["2", "5"]
    uuids = {"SWEEP_SIMULATED_GPUS": "1", "CUDA_VISIBLE_DEVICES": "GPU-8f2a,GPU-77c1"}
    assert visible_gpus(uuids) == ["GPU-8f2a"], "torch's count decides how many of the entries are real"


def test_a_list_counts_the_visible_gpus_as_cuda_n_does():
    listed = OmegaConf.create({"devices": [1, "cuda:0"]}).devices  # as Hydra hands it over: a ListConfig
    assert resolve_devices(listed, {**TWO, "CUDA_VISIBLE_DEVICES": "2,3"}) == ["3", "2"]


def test_a_slurm_task_uses_exactly_the_gpus_it_was_given():
    task = {"SLURM_LOCALID": "1", "SLURM_JOB_ID": "4242", "CUDA_VISIBLE_DEVICES": "3", "SWEEP_SIMULATED_GPUS": "1"}
    assert [p.gpu for p in place_workers("auto", 2, "auto", task)] == ["3", "3"], "two workers on its one GPU"
    with pytest.raises(ConfigError, match=r"this SLURM task \(SLURM_LOCALID=0\) was given no GPU"):
        resolve_devices("auto", {"SLURM_LOCALID": "0"})  # never the node's other GPUs


@pytest.mark.parametrize(
    ("devices", "environ", "trial_device", "key", "message"),
    [
        (
            [0, 3],
            {**TWO, "CUDA_VISIBLE_DEVICES": "0,1"},
            "auto",
            "study.devices[1]",
            "study.devices[1]=3: only 2 GPUs are visible (SWEEP_SIMULATED_GPUS=2, CUDA_VISIBLE_DEVICES=0,1): use 0..1",
        ),
        ([0, "cuda:0"], TWO, "auto", "study.devices[1]", "is listed twice"),
        (["gpu0"], TWO, "auto", "study.devices[0]", "must be null, auto"),
        ("all", TWO, "auto", "study.devices", "must be null, auto"),
        ([], TWO, "auto", "study.devices", "must be null, auto"),
        ("auto", TWO, "cpu", "trial.device", "places each worker on one GPU: set trial.device=auto (or cuda)"),
        ("auto", TWO, "cuda:1", "trial.device", "set trial.device=auto (or cuda)"),
        ("auto", {"SWEEP_SIMULATED_GPUS": "0"}, "auto", "study.devices", "no GPU is visible here"),
        ([0], {"SWEEP_SIMULATED_GPUS": "4", "CUDA_VISIBLE_DEVICES": ""}, "auto", "study.devices", "no GPU is visible"),
        ("auto", {"SWEEP_SIMULATED_GPUS": "two"}, "auto", "SWEEP_SIMULATED_GPUS", "a hook for tests"),
    ],
)
def test_bad_devices_are_refused_in_one_line_naming_the_key(devices, environ, trial_device, key, message):
    with pytest.raises(ConfigError) as error:
        place_workers(devices, 2, trial_device, environ)
    assert error.value.key == key and message in str(error.value) and "\n" not in str(error.value)


def test_no_cuda_here_refuses_study_devices():
    """This machine's torch sees no GPU (the CPU wheel): study.devices cannot be honoured."""
    with pytest.raises(ConfigError, match=r"study.devices='auto': no GPU is visible here \(torch.cuda.device_count"):
        place_workers("auto", 2, "auto", {})


def test_workers_go_round_robin_and_more_workers_than_gpus_share_them():
    placed = place_workers("auto", 5, "auto", TWO)
    assert [p.gpu for p in placed] == ["0", "1", "0", "1", "0"]
    assert placed[1].environment() == {"CUDA_VISIBLE_DEVICES": "1", "SWEEP_DEVICE": "cuda:1 (simulated)"}
    assert placed[1].overrides() == ["trial.device=cpu", "study.devices=null"], "a simulated GPU trains on the CPU"
    real = Placement("3")
    assert real.environment() == {"CUDA_VISIBLE_DEVICES": "3", "SWEEP_DEVICE": "cuda:3"}
    assert real.overrides() == ["trial.device=cuda", "study.devices=null"], "it sees its one GPU as cuda"


def test_fewer_workers_than_gpus_warns_which_stay_idle(caplog):
    with caplog.at_level(logging.WARNING, logger="sweep.config.devices"):
        placed = place_workers("auto", 2, "auto", {"SWEEP_SIMULATED_GPUS": "4"})
    assert [p.gpu for p in placed] == ["0", "1"]
    assert "no worker on 2, 3 (study.n_workers=4 uses every GPU)" in caplog.text


def test_each_worker_process_is_started_pinned_with_its_own_overrides(monkeypatch):
    started: list[tuple[list[str], dict[str, str]]] = []

    class Recorder:
        def __init__(self, command: list[str], env: dict[str, str]) -> None:
            started.append((command, env))

    monkeypatch.setattr(subprocess, "Popen", Recorder)
    workers = [signals.Worker(p.environment(), p.overrides()) for p in place_workers("auto", 2, "auto", TWO)]
    arguments = ["+experiment=mnrl_scale", "study.devices=auto", "trial.device=auto", "study.n_workers=2"]
    signals.spawn_workers(workers, 3, arguments)
    assert [env["CUDA_VISIBLE_DEVICES"] for _, env in started] == ["0", "1"]
    for command, _ in started:
        overrides = command[3:]
        assert overrides == [
            "+experiment=mnrl_scale",
            "study.n_workers=1",
            "trial.torch_threads=3",
            "quiet=true",
            "trial.device=cpu",
            "study.devices=null",
        ], "the user's study.devices and trial.device are replaced, not given twice"


def test_a_trial_records_its_physical_device_and_slurm_task():
    assert trial_records("cpu", {}) == {TAG_DEVICE: "cpu"}
    assert trial_records("auto", {}) == {TAG_DEVICE: "cpu"}, "auto on a machine without a GPU"
    slurm = {"CUDA_VISIBLE_DEVICES": "4,6", "SLURM_JOB_ID": "4242", "SLURM_LOCALID": "1"}
    assert trial_records("cuda:1", slurm) == {TAG_DEVICE: "cuda:6", TAG_SLURM_JOB_ID: "4242", TAG_SLURM_LOCALID: "1"}
    assert trial_records("cuda", {"CUDA_VISIBLE_DEVICES": "GPU-8f2a"}) == {TAG_DEVICE: "cuda:GPU-8f2a"}
    assert trial_records("cpu", {"SWEEP_DEVICE": "cuda:1 (simulated)"}) == {TAG_DEVICE: "cuda:1 (simulated)"}

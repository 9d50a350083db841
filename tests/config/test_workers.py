"""`study.n_workers=auto`: the count read from the machine (one worker on the CPU; on GPUs, each one's free memory
over one worker's, capped by the usable cores), the facts read through the simulated GPUs of `sweep.config.devices`
(no CUDA is called), the one line that says why, and the refusal of anything but a positive integer or ``auto``."""

from __future__ import annotations

import logging
import os

import pytest

from sweep.config.checks import MAX_WORKERS
from sweep.config.workers import GIB, Machine, auto_workers, machine, resolve_n_workers, trial_memory
from sweep.errors import ConfigError
from sweep.study.validation import check_config

H200 = (("cuda:0", 140 * GIB),)


def test_on_the_cpu_auto_is_one_worker_whatever_the_cores():
    for cores in (1, 2, 16, 128):
        count, why = auto_workers(Machine(cores), trial_bytes=2 * GIB)
        assert count == 1 and f"all {cores} usable CPU core" in why, why


def test_on_a_gpu_auto_fits_workers_in_its_free_memory_within_the_cores():
    assert auto_workers(Machine(16, H200), 10 * GIB)[0] == 14, "140 GiB free / 10 GiB per trial"
    assert auto_workers(Machine(16, H200), 10 * GIB, pack=2)[0] == 7, "a worker of two packed trials needs twice"
    count, why = auto_workers(Machine(4, H200), 10 * GIB)
    assert count == 4 and "capped at the 4 usable CPU cores" in why, why
    assert auto_workers(Machine(16, H200), 500 * GIB)[0] == 1, "at least one worker per GPU"
    assert auto_workers(Machine(1024, H200), 0.1 * GIB)[0] == MAX_WORKERS


def test_on_several_gpus_the_fullest_sets_the_count_of_each():
    """The workers go to the GPUs in turn: a count per GPU above what the fullest holds would overfill it."""
    count, why = auto_workers(Machine(64, (("cuda:0", 80 * GIB), ("cuda:1", 30 * GIB))), 10 * GIB)
    assert count == 6 and "cuda:1: 30.0 GiB free" in why, why


def test_without_a_trial_memory_auto_is_one_worker_per_gpu_and_says_which_key_sizes_more():
    count, why = auto_workers(Machine(16, (("cuda:0", 80 * GIB), ("cuda:1", 80 * GIB))), trial_bytes=None)
    assert count == 2 and "study.pack_memory_gib" in why, why


def test_the_trial_memory_is_the_pack_guards(compose_cfg):
    assert trial_memory(compose_cfg().study) is None
    assert trial_memory(compose_cfg("study.pack_memory_gib=1.5").study) == 1.5 * GIB


def test_the_facts_are_read_from_the_simulated_gpus_and_the_usable_cores(compose_cfg, monkeypatch, caplog):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(12)), raising=False)
    simulated = {"SWEEP_SIMULATED_GPUS": "2", "SWEEP_SIMULATED_GPU_FREE_GIB": "40"}
    cfg = compose_cfg("study.devices=auto", "study.n_workers=auto", "study.pack_memory_gib=8", "trial.device=auto")
    assert machine(cfg.study, cfg.trial.device, simulated) == Machine(12, (("cuda:0", 40 * GIB), ("cuda:1", 40 * GIB)))
    shared = compose_cfg("study.n_workers=auto", "study.pack_memory_gib=8", "trial.device=cuda:1")
    assert machine(shared.study, shared.trial.device, simulated) == Machine(12, (("cuda:1", 40 * GIB),))
    assert machine(compose_cfg().study, "cpu", simulated) == Machine(12)
    with caplog.at_level(logging.INFO, logger="sweep.config.workers"):
        assert resolve_n_workers(cfg.study, cfg.trial.device, simulated) == 10, "5 a GPU, 12 cores"
    (line,) = [r.getMessage() for r in caplog.records if r.name == "sweep.config.workers"]
    assert line.startswith("study.n_workers=auto: 10 workers (2 GPUs (cuda:0: 40.0 GiB free") and "12 usable" in line


def test_a_number_is_its_own_count(compose_cfg):
    assert resolve_n_workers(compose_cfg("study.n_workers=2").study, "cpu", {}) == 2


@pytest.mark.parametrize("value", ["0", "-1", "lots", "true", "1.5", "AUTO"])
def test_anything_but_a_positive_count_or_auto_is_refused_in_one_line(compose_cfg, value):
    with pytest.raises(ConfigError) as error:
        check_config(compose_cfg(f"study.n_workers={value}"), load=False)
    assert error.value.key == "study.n_workers", str(error.value)
    assert "or auto" in str(error.value) and "\n" not in str(error.value)


def test_auto_passes_the_validation_pass_with_and_without_gpus(compose_cfg, monkeypatch):
    check_config(compose_cfg("study.n_workers=auto"), load=False)
    monkeypatch.setenv("SWEEP_SIMULATED_GPUS", "2")
    check_config(compose_cfg("study.n_workers=auto", "study.devices=auto", "trial.device=auto"), load=False)

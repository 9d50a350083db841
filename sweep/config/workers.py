"""How many worker processes `study.n_workers=auto` starts: the facts of the machine it reads (the usable CPU cores,
the GPUs the workers would train on and their free memory) and the rule that turns them into a count, resolved once
at the entry point (`sweep.study_command.open_study`), before any worker starts.

The rule:

- **CPU only: one worker.** A worker's torch threads already use every usable core (`worker_threads` shares them
  out), so N workers split the same cores N ways: more processes, each holding its own model and data, and no more
  arithmetic per second. Several CPU workers pay only for a model too small to keep the cores busy; give a number
  then.
- **GPUs: per GPU, its free memory over one worker's memory**, at least one per GPU, all capped by the usable cores
  (each worker is a process that feeds its GPU from the CPU) and `MAX_WORKERS`. The workers are placed on the GPUs
  in turn (`sweep.config.devices.place_workers`), so the GPU with the least free memory sets the count of each. One
  worker's memory is the estimate the pack guard uses (`sweep.study.packing.MemoryGuard`): `study.pack_memory_gib`
  per trial (`trial_memory`), times `study.pack`, the trials a worker trains together. A small model leaves a large
  GPU mostly idle with one worker, which spends much of each trial outside the GPU (data, evaluation, the storage),
  so several workers interleave. Without `study.pack_memory_gib` the entry point's estimate from the model's shape
  stands in (`sweep.inputs.estimated_trial_bytes`, an upper bound); without either, one worker per GPU, and the log
  line says which key sizes more.

The GPUs are `study.devices` (each entry's free memory), else, with `trial.device` on CUDA, the one GPU every worker
then shares (``cuda`` is its first, ``cuda:N`` the N-th). Reading the free memory creates a CUDA context in this
process (`torch.cuda.mem_get_info`). ``SWEEP_SIMULATED_GPUS=N`` (`sweep.config.devices`) with
``SWEEP_SIMULATED_GPU_FREE_GIB=F`` stands for N GPUs with F GiB free each, for tests and dry runs: nothing calls
CUDA."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sweep.config.checks import AUTO, MAX_WORKERS, usable_cores
from sweep.config.devices import SIMULATED_GPUS, resolve_devices, visible_gpus
from sweep.config.schema import StudyConfig
from sweep.errors import ConfigError

log = logging.getLogger(__name__)

GIB = 2**30
SIMULATED_FREE_GIB = "SWEEP_SIMULATED_GPU_FREE_GIB"  # tests and dry runs: each simulated GPU's free memory


def trial_memory(study: StudyConfig) -> float | None:
    """Bytes one trial needs on its GPU, as the study states it (`study.pack_memory_gib`); None when unstated (the
    pack guard then learns it from a pack's peak)."""
    return float(study.pack_memory_gib) * GIB if study.pack_memory_gib is not None else None


@dataclass(frozen=True)
class Machine:
    """What `auto_workers` decides from: the usable CPU cores and, per GPU the workers would train on, its label and
    free bytes (none: CPU only)."""

    cores: int
    gpus: tuple[tuple[str, int], ...] = ()


def auto_workers(
    machine: Machine, trial_bytes: float | None, pack: int = 1, source: str = "study.pack_memory_gib"
) -> tuple[int, str]:
    """The worker count of the module docstring's rule for ``machine``, with one worker needing ``pack`` trials of
    ``trial_bytes`` each (None: unknown; `source` says where the figure comes from), and why, in words."""
    cap = min(machine.cores, MAX_WORKERS)
    cores = f"{machine.cores} usable CPU core{'s' if machine.cores != 1 else ''}"
    if not machine.gpus:
        return 1, f"CPU only: one worker's torch threads use all {cores}; more workers would split them"
    if trial_bytes is None:
        per_gpu = [1] * len(machine.gpus)
        memory = "one per GPU: set study.pack_memory_gib (GiB one trial needs) to size several per GPU"
    else:
        worker_bytes = trial_bytes * pack
        fits = min(max(1, int(free // worker_bytes)) for _, free in machine.gpus)  # the workers go to each in turn
        per_gpu = [fits] * len(machine.gpus)
        trial = f"{trial_bytes / GIB:.1f} GiB a trial ({source})"
        each = f"{worker_bytes / GIB:.1f} GiB per worker: {trial} x study.pack={pack}"
        memory = ", ".join(f"{label}: {free / GIB:.1f} GiB free" for label, free in machine.gpus) + f"; {each}"
    count = min(sum(per_gpu), cap)
    capped = f", capped at the {cores}" if count < sum(per_gpu) else f", within the {cores}"
    return count, f"{len(machine.gpus)} GPU{'s' if len(machine.gpus) > 1 else ''} ({memory}){capped}"


def _cuda_index(device: str) -> int | None:
    """The index of a `trial.device` on CUDA (``cuda``: 0, ``cuda:N``: N), else None."""
    match = re.fullmatch(r"cuda(?::(\d+))?", device)
    return int(match.group(1) or 0) if match else None


def _free_bytes(indices: list[int], environ: Mapping[str, str]) -> list[int]:
    """The free bytes of the visible GPUs at `indices` (``cuda:N`` order), simulated or read from CUDA."""
    if SIMULATED_GPUS in environ:
        given = environ.get(SIMULATED_FREE_GIB, "0")
        try:
            return [int(float(given) * GIB)] * len(indices)
        except ValueError:
            raise ConfigError(SIMULATED_FREE_GIB, given, "must be a number of GiB (a hook for tests)") from None
    import torch  # slow to import: only for auto on a GPU

    return [torch.cuda.mem_get_info(index)[0] for index in indices]


def machine(study: StudyConfig, trial_device: Any, environ: Mapping[str, str] = os.environ) -> Machine:
    """The facts `auto_workers` needs for a study's `study.devices` and `trial.device` (``auto``: CUDA when a GPU is
    visible). Raises ConfigError (a `study.devices` entry no GPU answers to)."""
    cores = usable_cores()
    if study.devices is not None:
        visible = visible_gpus(environ)
        gpus = resolve_devices(study.devices, environ)
        indices = [visible.index(gpu) for gpu in gpus]
        return Machine(cores, tuple(zip((f"cuda:{g}" for g in gpus), _free_bytes(indices, environ), strict=True)))
    device = str(trial_device)
    if device == "auto":
        import torch  # what a trial on `auto` trains on: CUDA when available

        device = "cuda" if torch.cuda.is_available() else "cpu"
    index = _cuda_index(device)
    if index is None:
        return Machine(cores)
    return Machine(cores, ((f"cuda:{index}", _free_bytes([index], environ)[0]),))


def resolve_n_workers(
    study: StudyConfig,
    trial_device: Any,
    environ: Mapping[str, str] = os.environ,
    estimate: Callable[[], float] | None = None,
) -> int:
    """`study.n_workers` as a count: itself, or `auto`'s (`auto_workers` on this `machine`), logged in one line.
    A trial's memory is `study.pack_memory_gib`, else, on GPUs, `estimate()` (`sweep.inputs.estimated_trial_bytes`,
    given by the entry point; when it cannot read the model, one worker per GPU)."""
    if study.n_workers != AUTO:
        return int(study.n_workers)
    found, trial_bytes, source = machine(study, trial_device, environ), trial_memory(study), "study.pack_memory_gib"
    if trial_bytes is None and estimate is not None and found.gpus:
        try:
            trial_bytes, source = estimate(), "an upper-bound estimate from the model; study.pack_memory_gib states it"
        except (OSError, ValueError) as error:  # ValueError: a ConfigError (the model's config unreadable)
            log.warning("study.n_workers=auto: no estimate of a trial's GPU memory (%s)", error)
    count, why = auto_workers(found, trial_bytes, study.pack, source)
    log.info("study.n_workers=auto: %d worker%s (%s)", count, "s" if count > 1 else "", why)
    return count

"""Which GPUs the workers of a study train on (`study.devices`): the GPUs this process sees (``CUDA_VISIBLE_DEVICES``,
a SLURM task's own, or a simulated count), the one-line checks of the key, the placement of `study.n_workers`
workers on them (one worker process pinned to each GPU in turn) and the device a trial records (`trial_records`).

A worker is pinned by its environment: the coordinating process starts it with ``CUDA_VISIBLE_DEVICES=<its GPU>``,
so CUDA, initialised in the worker only, sees that one GPU as ``cuda:0`` (`sweep.study_command` says why the
coordinator does not train). Entries of ``study.devices`` count the GPUs this process sees, as ``cuda:N`` does: with
``CUDA_VISIBLE_DEVICES=2,3``, ``study.devices=[1]`` is the physical GPU 3, and the worker gets
``CUDA_VISIBLE_DEVICES=3`` (an entry may also be a ``GPU-...``/``MIG-...`` UUID; it is passed on as it is)."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omegaconf import ListConfig

from sweep.errors import ConfigError
from sweep.names import TAG_DEVICE, TAG_SLURM_JOB_ID, TAG_SLURM_LOCALID

log = logging.getLogger(__name__)

VISIBLE = "CUDA_VISIBLE_DEVICES"
SIMULATED_GPUS = "SWEEP_SIMULATED_GPUS"  # tests and dry runs: see `gpu_count`
WORKER_DEVICE = "SWEEP_DEVICE"  # set for each placed worker: the device it was given, recorded by its trials
SLURM_RECORDS = {"SLURM_JOB_ID": TAG_SLURM_JOB_ID, "SLURM_LOCALID": TAG_SLURM_LOCALID}
ENTRY = re.compile(r"(?:cuda:)?(\d+)")
FORMS = 'must be null, auto (every visible GPU) or a list of visible GPUs like [0, 1] or ["cuda:0", "cuda:2"]'


@dataclass(frozen=True)
class Placement:
    """One worker process's GPU: the ``CUDA_VISIBLE_DEVICES`` entry it is pinned to (`gpu`)."""

    gpu: str
    simulated: bool = False

    @property
    def label(self) -> str:
        """The device its trials record (`trial_records`): ``cuda:<physical id>``."""
        return f"cuda:{self.gpu}" + (" (simulated)" if self.simulated else "")

    def environment(self) -> dict[str, str]:
        return {VISIBLE: self.gpu, WORKER_DEVICE: self.label}

    def overrides(self) -> list[str]:
        """The worker's own keys: it trains on the one GPU it sees (a simulated GPU: on the CPU, never calling
        CUDA) and places nobody else."""
        return [f"trial.device={'cpu' if self.simulated else 'cuda'}", "study.devices=null"]


def gpu_count(environ: Mapping[str, str]) -> int:
    """How many GPUs this process sees: ``torch.cuda.device_count()``, which counts through NVML and honours
    ``CUDA_VISIBLE_DEVICES`` without initialising CUDA (torch falls back to ``cudaGetDeviceCount`` only where NVML
    fails).

    ``SWEEP_SIMULATED_GPUS=N`` stands for it and exists for tests and dry runs only: N GPUs that never call CUDA; the
    workers placed on them train on the CPU and record the simulated device."""
    simulated = environ.get(SIMULATED_GPUS)
    if simulated is not None:
        if not simulated.isdigit():
            raise ConfigError(SIMULATED_GPUS, simulated, "must be a number of GPUs >= 0 (a hook for tests)")
        return int(simulated)
    import torch  # slow to import: only when study.devices is set

    return torch.cuda.device_count()


def visible_gpus(environ: Mapping[str, str]) -> list[str]:
    """The GPUs this process sees, in ``cuda:N`` order, as ``CUDA_VISIBLE_DEVICES`` entries (physical ids or UUIDs)."""
    count = gpu_count(environ)
    listed = environ.get(VISIBLE)
    if listed is None:
        return [str(index) for index in range(count)]
    return [entry.strip() for entry in listed.split(",") if entry.strip()][:count]


def _seen(environ: Mapping[str, str], count: int) -> str:
    """Why this process sees the GPUs it sees, for a message."""
    reasons = [f"{SIMULATED_GPUS}={environ[SIMULATED_GPUS]}"] if SIMULATED_GPUS in environ else []
    if VISIBLE in environ:
        reasons.append(f"{VISIBLE}={environ[VISIBLE] or repr('')}")
    return ", ".join(reasons or [f"torch.cuda.device_count()={count}"])


def resolve_devices(devices: Any, environ: Mapping[str, str]) -> list[str]:
    """The ``CUDA_VISIBLE_DEVICES`` entries `devices` (``auto`` or a list, not null) names. Raises ConfigError.

    ``auto`` is every visible GPU; in a SLURM task (``SLURM_LOCALID`` set) exactly the GPUs SLURM gave it in
    ``CUDA_VISIBLE_DEVICES``, never the node's others, and none where SLURM set no ``CUDA_VISIBLE_DEVICES``."""
    if devices == "auto" and "SLURM_LOCALID" in environ and VISIBLE not in environ and SIMULATED_GPUS not in environ:
        raise ConfigError(
            "study.devices",
            devices,
            f"this SLURM task (SLURM_LOCALID={environ['SLURM_LOCALID']}) was given no GPU (CUDA_VISIBLE_DEVICES is "
            "unset): request GPUs (--gres=gpu:N or --gpus-per-task=1), or set study.devices=null",
        )
    if devices != "auto" and not isinstance(devices, (list, tuple, ListConfig)):
        raise ConfigError("study.devices", devices, FORMS)
    visible = visible_gpus(environ)
    seen = _seen(environ, len(visible))
    if not visible:
        raise ConfigError(
            "study.devices",
            devices,
            f"no GPU is visible here ({seen}): set study.devices=null to train on trial.device",
        )
    if devices == "auto":
        return visible
    chosen: list[str] = []
    for index, entry in enumerate(devices):
        match = ENTRY.fullmatch(str(entry)) if not isinstance(entry, bool) else None
        if match is None:
            raise ConfigError(f"study.devices[{index}]", entry, FORMS)
        number = int(match.group(1))
        if number >= len(visible):
            raise ConfigError(
                f"study.devices[{index}]",
                entry,
                f"only {len(visible)} GPU{'s are' if len(visible) > 1 else ' is'} visible ({seen}): "
                f"use 0..{len(visible) - 1} (study.devices counts the visible GPUs, as cuda:N does)",
            )
        if visible[number] in chosen:
            raise ConfigError(
                f"study.devices[{index}]",
                entry,
                "is listed twice: several workers share a GPU when study.n_workers exceeds the devices listed",
            )
        chosen.append(visible[number])
    if not chosen:
        raise ConfigError("study.devices", [], FORMS)
    return chosen


def placed_gpus(devices: Any, trial_device: Any, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The GPUs of ``study.devices`` (not null) with a `trial.device` that trains on them (`resolve_devices`).
    Raises ConfigError."""
    if trial_device not in ("auto", "cuda"):
        raise ConfigError(
            "trial.device",
            trial_device,
            f"study.devices={devices} places each worker on one GPU: set trial.device=auto (or cuda), or "
            "study.devices=null to train on trial.device",
        )
    return resolve_devices(devices, environ)


def place_workers(
    devices: Any, n_workers: int, trial_device: Any, environ: Mapping[str, str] = os.environ
) -> list[Placement]:
    """The `n_workers` workers of ``study.devices`` (not null) placed round-robin on its GPUs: one per GPU, several
    on each when there are more workers than GPUs (each worker's memory guard then watches its own GPU). Raises
    ConfigError; warns when GPUs stay idle."""
    gpus = placed_gpus(devices, trial_device, environ)
    if n_workers < len(gpus):
        log.warning(
            "study.devices: %d GPUs for study.n_workers=%d: no worker on %s (study.n_workers=%d uses every GPU)",
            len(gpus),
            n_workers,
            ", ".join(gpus[n_workers:]),
            len(gpus),
        )
    simulated = SIMULATED_GPUS in environ
    return [Placement(gpus[index % len(gpus)], simulated) for index in range(n_workers)]


def trial_device(device: str, environ: Mapping[str, str] = os.environ) -> str:
    """The device a trial trains on, with the physical GPU: the placed worker's (``SWEEP_DEVICE``), else
    `device` (``trial.device``) with ``cuda:N`` read through ``CUDA_VISIBLE_DEVICES`` (``cuda:3`` for the single GPU
    a SLURM task was given as ``CUDA_VISIBLE_DEVICES=3``)."""
    if environ.get(WORKER_DEVICE):
        return environ[WORKER_DEVICE]
    if device == "auto":
        from sentence_transformers.util import get_device_name  # what SentenceTransformer(device=None) picks

        device = get_device_name()
    match = re.fullmatch(r"cuda(?::(\d+))?", device)
    if match is None:
        return device
    index = int(match.group(1) or 0)
    listed = [entry.strip() for entry in environ.get(VISIBLE, "").split(",") if entry.strip()]
    return f"cuda:{listed[index] if index < len(listed) else index}"


def trial_records(device: str, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """What a trial records of where it ran, as Optuna user attributes and MLflow tags (the same names): its device
    (`trial_device`) and, in a SLURM task, the job id and the task's local id."""
    records = {TAG_DEVICE: trial_device(device, environ)}
    records.update({name: environ[variable] for variable, name in SLURM_RECORDS.items() if variable in environ})
    return records

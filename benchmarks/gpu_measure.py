"""The measurements of `python -m benchmarks.gpu_check`: the machine, a sampler of GPU utilisation and memory, studies
read back per (scale, seed), and the comparisons against a reference and between runs."""

from __future__ import annotations

import csv
import math
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.runners import STUDY, run_framework
from benchmarks.table import machine_description
from sweep.names import ATTR_DISCARDED, ATTR_SCALE, ATTR_WALL_TIME_S, PARAM_SEED

SAMPLE_COLUMNS = ("t_s", "section", "gpu_util_pct", "gpu_mem_used_mib", "host_load_1min")
TRIAL_COLUMNS = ("scale", "seed", "spearman", "wall_s", "first_in_process")


def nvidia_smi(*query: str) -> str | None:
    """`nvidia-smi` with these arguments, or None where there is no such command or it fails."""
    if shutil.which("nvidia-smi") is None:
        return None
    done = subprocess.run(["nvidia-smi", *query], capture_output=True, text=True, timeout=30)
    return done.stdout if done.returncode == 0 else None


def machine() -> dict[str, Any]:
    """The host (CPU, memory, library versions), the GPU as torch and nvidia-smi see it."""
    import torch

    described = machine_description()
    described["torch_cuda"] = torch.version.cuda
    described["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    if torch.cuda.is_available():
        properties = torch.cuda.get_device_properties(0)
        described["gpu"] = properties.name
        described["gpu_memory_gib"] = round(properties.total_memory / 2**30, 1)
        described["gpu_capability"] = f"{properties.major}.{properties.minor}"
        described["gpu_multiprocessors"] = properties.multi_processor_count
    described["nvidia_smi"] = nvidia_smi() or "no nvidia-smi on this machine"
    return described


class Sampler:
    """GPU utilisation and memory (nvidia-smi) and the host's 1-minute load average, once per `interval_s`, tagged
    with the section that runs; written to a CSV as they come, so that a run stopped at its limit still leaves them."""

    def __init__(self, path: Path, interval_s: float = 1.0) -> None:
        self.path, self.interval_s = path, interval_s
        self.section = "start"
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.loop, name="gpu-sampler", daemon=True)
        self.start_time = time.perf_counter()

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop_event.set()
        self.thread.join()

    def sample(self) -> list[object]:
        gpu = nvidia_smi("--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits")
        util, memory = (float(x) for x in gpu.splitlines()[0].split(",")) if gpu else (math.nan, math.nan)
        elapsed = round(time.perf_counter() - self.start_time, 1)
        return [elapsed, self.section, util, memory, os.getloadavg()[0]]

    def loop(self) -> None:
        with self.path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(SAMPLE_COLUMNS)
            while not self.stop_event.wait(self.interval_s):
                writer.writerow(self.sample())
                handle.flush()


@dataclass
class StudyRun:
    """One `python -m sweep` process of the check: its label and its trials per (scale, seed)."""

    label: str
    trials: pd.DataFrame  # TRIAL_COLUMNS, one row per complete trial
    span_s: float  # first trial start to last trial end (Optuna), so process start and imports do not count

    @property
    def trials_per_hour(self) -> float:
        return 3600 * len(self.trials) / self.span_s if self.span_s else math.nan

    def later_trial_seconds(self) -> float:
        """Median wall time of the trials after the first of the process (the first also loads data and model)."""
        later = self.trials[~self.trials.first_in_process].wall_s
        return float(later.median()) if len(later) else math.nan


def read_study(root: Path, label: str) -> StudyRun:
    """The complete trials of the study under `root` per (scale, seed), with their time span."""
    import optuna

    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{root}/optuna.db")
    trials = [
        t
        for t in study.get_trials(deepcopy=False)
        if t.state.name == "COMPLETE" and not t.user_attrs.get(ATTR_DISCARDED)
    ]
    first = min((t.datetime_start for t in trials if t.datetime_start), default=None)
    rows = [
        (
            float(t.user_attrs.get(ATTR_SCALE, t.params.get("loss.scale", math.nan))),
            int(t.params.get(PARAM_SEED, 0)),
            t.value,
            t.user_attrs.get(ATTR_WALL_TIME_S, math.nan),
            t.datetime_start == first,
        )
        for t in trials
    ]
    ends = [t.datetime_complete for t in trials if t.datetime_complete]
    span = (max(ends) - first).total_seconds() if first and ends else math.nan
    return StudyRun(label, pd.DataFrame(rows, columns=list(TRIAL_COLUMNS)).sort_values(["scale", "seed"]), span)


def run_study(work: Path, label: str, overrides: Sequence[str], data_dir: str, timeout_s: int) -> StudyRun:
    """Run one study (`benchmarks.runners.run_framework`, in a fresh folder under `work`) and read it back."""
    root = work / label
    run_framework(root, overrides, data_dir, timeout_s)
    return read_study(root, label)


def against_reference(run: StudyRun, reference: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """Each trial's Spearman beside the reference's for the same (scale, seed), their difference, and whether it is
    within `tolerance`."""
    merged = run.trials.merge(reference, on=["scale", "seed"], how="left")
    merged["difference"] = merged.spearman - merged.reference_spearman
    merged["within_tolerance"] = merged.difference.abs() <= tolerance
    return merged


def between_runs(runs: Sequence[StudyRun], tolerance: float) -> pd.DataFrame:
    """The trials of several runs of the same grid, each beside the first run's Spearman for its (scale, seed)."""
    base = runs[0].trials[["scale", "seed", "spearman"]].rename(columns={"spearman": "first_run_spearman"})
    frames = []
    for run in runs:
        merged = run.trials.merge(base, on=["scale", "seed"], how="left")
        merged.insert(0, "run", run.label)
        merged["trials_per_hour"] = run.trials_per_hour
        merged["difference"] = merged.spearman - merged.first_run_spearman
        merged["within_tolerance"] = merged.difference.abs() <= tolerance
        frames.append(merged)
    return pd.concat(frames, ignore_index=True)


def read_reference(path: Path) -> pd.DataFrame:
    """(scale, seed, reference_spearman) of a study's `trials.csv` (as `python -m sweep.report` writes it)."""
    table = pd.read_csv(path)
    table = table[table.state == "COMPLETE"] if "state" in table else table
    return pd.DataFrame(
        {
            "scale": table["loss.scale"].astype(float),
            "seed": table["trial.seed"].astype(int),
            "reference_spearman": table["stsb_validation_spearman"].astype(float),
        }
    )

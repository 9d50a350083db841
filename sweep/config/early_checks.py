"""Checks of values that are valid one by one but would fail or mislead only once training runs: the study's name (a
folder name under ``paths.root``), its seeds, the training rows against the batch size. Each raises `ConfigError`
naming the key and the fix, before any training."""

from __future__ import annotations

import re
from typing import Any

from sweep.config.checks import require_seed
from sweep.errors import ConfigError

# A study name becomes a folder (``<paths.root>/models/<name>``), an Optuna study and an MLflow run name: a name,
# never a path. Letters, digits and _ first (no hidden or relative folder), then also . - + = , @ (``lr_1e-05``).
STUDY_NAME = re.compile(r"\w[\w.+=,@-]*")
STUDY_NAME_RULE = (
    "a study name is a name, not a path: letters, digits and _ . - + = , @ only, starting with a letter, digit or _"
)


def check_study_name(name: Any, key: str = "name") -> None:
    """`name` (the study's, of config key `key`) is one folder name: no path separator, no ``..``, not hidden."""
    if isinstance(name, str) and not STUDY_NAME.fullmatch(name):
        raise ConfigError(key, name, STUDY_NAME_RULE)


def check_seeds(seeds: Any) -> None:
    """`study.seeds` is null (one run per point, at `trial.seed`) or a non-empty list: an empty list would train as if
    it were null, and a user who wrote it meant seeds."""
    if seeds is not None and len(seeds) == 0:
        raise ConfigError(
            "study.seeds", [], "must list at least one seed (e.g. study.seeds=[0,1,2]), or null to train at trial.seed"
        )
    for seed in seeds or []:
        require_seed("study.seeds", seed)
    if seeds is not None and len(set(seeds)) < len(seeds):
        repeated = sorted({seed for seed in seeds if list(seeds).count(seed) > 1})
        raise ConfigError("study.seeds", list(seeds), f"lists {repeated} more than once: list each seed once")


def check_batch_fits(max_samples: Any, batch_size: Any) -> None:
    """`data.train.max_samples` leaves at least one `trial.batch_size` batch: with fewer training rows every batch
    would be smaller than asked, so the in-batch negatives the batch size stands for would not exist."""
    if isinstance(max_samples, int) and isinstance(batch_size, int) and max_samples < batch_size:
        raise ConfigError(
            "data.train.max_samples",
            max_samples,
            f"is fewer training rows than one batch (trial.batch_size={batch_size}): raise data.train.max_samples to "
            f">= {batch_size} or lower trial.batch_size",
        )


def check_precision(precision: Any, device: Any) -> None:
    """`trial.precision=bf16` runs on the device `trial.device` picks: transformers refuses bf16 off the CPU unless
    the accelerator supports it (`is_torch_bf16_gpu_available`, its own test), which would fail every trial."""
    if precision != "bf16" or device == "cpu":
        return
    from transformers.utils import is_torch_bf16_gpu_available  # slow to import: only for bf16

    if not is_torch_bf16_gpu_available():
        raise ConfigError(
            "trial.precision",
            precision,
            f"needs an accelerator with bf16 and trial.device={device} finds none here (transformers' "
            "is_torch_bf16_gpu_available() is false): use trial.precision=fp32, or trial.device=cpu (bf16 on the CPU)",
        )

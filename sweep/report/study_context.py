"""What a study's figures need besides its trials' metrics, read from the trials' config params: the loss's
library default scale, the learning-rate schedule, the number of MNRL candidates and the untrained baseline."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

# loss name -> (default scale, legend text): sentence-transformers' defaults, GIST's as a temperature
LIBRARY_DEFAULTS: dict[str, tuple[float, str]] = {
    "mnrl": (20.0, "library default, scale 20"),
    "cached_mnrl": (20.0, "library default, scale 20"),
    "mnrl_uniformity": (20.0, "MNRL's library default, scale 20"),
    "cosent": (20.0, "library default, scale 20"),
    "angle": (20.0, "library default, scale 20"),
    "gist": (100.0, "library default, temperature 0.01"),
}
# losses whose training loss is a cross-entropy over in-batch candidates: ln(#candidates) at scale 0
CANDIDATE_LOSSES = {"mnrl", "cached_mnrl", "learnable_scale"}
UNTRAINED_SCALE = 0.0


def config_value(trials: pd.DataFrame, key: str) -> Any:
    """The config value ``key`` (e.g. ``trial.max_steps``) shared by the trials (a scalar of the table: a number
    or a string), or None when absent or not shared."""
    column = f"param.{key}"
    if column not in trials:
        return None
    values = trials[column].dropna().unique()
    return values[0] if len(values) == 1 else None


def loss_name(trials: pd.DataFrame) -> str | None:
    """The loss every trial used (``loss.name``), or None."""
    name = config_value(trials, "loss.name")
    return str(name) if name is not None else None


def library_default(trials: pd.DataFrame) -> tuple[float | None, str]:
    """The library default scale of the trials' loss and its legend text ((None, '') when it has none)."""
    return LIBRARY_DEFAULTS.get(loss_name(trials) or "", (None, ""))


def scale_axis_label(trials: pd.DataFrame) -> str:
    """``initial scale`` for a learnable scale (the swept value is where it starts), else ``scale``."""
    return "initial scale" if loss_name(trials) == "learnable_scale" else "scale"


def _count_columns(columns: object) -> int:
    """How many names a logged list param holds (a list, or its string form ``['a', 'b']`` / ``a,b``)."""
    if isinstance(columns, list | tuple):
        return len(columns)
    return len([part for part in re.split(r"[\[\],\s'\"]+", str(columns)) if part])


def n_candidates(trials: pd.DataFrame) -> int | None:
    """Candidates per anchor of an unwrapped MNRL-family loss: batch size x (text columns - 1), else None."""
    wrappers = set(trials.get("param.loss.wrapper.name", pd.Series(dtype=object)).dropna().astype(str))
    if loss_name(trials) not in CANDIDATE_LOSSES or wrappers - {"None", "null"}:  # a wrapper sums other losses
        return None
    batch, columns = config_value(trials, "trial.batch_size"), config_value(trials, "data.train.columns")
    if batch is None or columns is None:
        return None
    return int(float(batch)) * (_count_columns(columns) - 1)


def lr_schedule(trials: pd.DataFrame) -> pd.DataFrame:
    """``step, learning_rate`` of the trials' schedule (transformers' linear / cosine / constant, with warmup
    ceil(warmup_ratio x max_steps)); empty when the params do not say."""
    keys = ("trial.learning_rate", "trial.max_steps", "trial.warmup_ratio", "trial.lr_scheduler")
    lr, steps, ratio, kind = (config_value(trials, key) for key in keys)
    if lr is None or steps in (None, "None") or kind not in ("linear", "cosine", "constant", "constant_with_warmup"):
        return pd.DataFrame(columns=["step", "learning_rate"])
    total = int(float(steps))
    warmup = math.ceil(float(ratio or 0.0) * total) if kind != "constant" else 0
    step = np.arange(total + 1)
    progress = np.clip((step - warmup) / max(1, total - warmup), 0.0, 1.0)
    decay = {"linear": 1 - progress, "cosine": 0.5 * (1 + np.cos(np.pi * progress))}.get(str(kind), np.ones_like(step))
    factor = np.where(step < warmup, step / max(1, warmup), decay)
    return pd.DataFrame({"step": step, "learning_rate": float(lr) * factor})


def untrained_values(summary: pd.DataFrame) -> dict[str, float]:
    """split -> the untrained model's Spearman: the scale-0 rows of a ``spearman_summary`` (zero gradient)."""
    rows = summary[summary["scale"] == UNTRAINED_SCALE]
    return {str(split): float(group["mean"].mean()) for split, group in rows.groupby("split", sort=False)}


def untrained_rows(trials: pd.DataFrame, history: pd.DataFrame, conditions: Mapping[str, str]) -> pd.DataFrame:
    """Scale-0 validation rows of a ``spearman_summary`` from the step-0 (before training) values of
    ``stsb_validation_spearman`` (a ``load_metric_history`` frame), per condition (``param.<key>`` -> name)."""
    columns = [*conditions.values(), "scale", "split", "n", "mean", "ci_low", "ci_high"]
    if history.empty or "run_id" not in trials:
        return pd.DataFrame(columns=columns)
    start = history[history["step"] == 0].merge(trials[["run_id", *conditions]], on="run_id")
    start = start.rename(columns=dict(conditions))
    keys = list(conditions.values())
    groups = start.groupby(keys, dropna=False) if keys else [((), start)]
    rows = [
        {**dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)), "scale": UNTRAINED_SCALE}
        | {"split": "validation", "n": len(group), "mean": float(group["value"].mean())}
        for key, group in groups
        if len(group)
    ]
    return pd.DataFrame(rows, columns=columns)

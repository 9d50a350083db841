"""How a study's runs read in the MLflow UI: a trial run's name, its Description (its grid point in words, then how it
ended)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sweep.config import SCALE_KEYS, LossConfig
from sweep.names import ATTR_TEST_SPEARMAN, ATTR_VALIDATION_SPEARMAN


def trial_run_name(number: int, params: Mapping[str, Any]) -> str:
    """A trial run's name, short enough for the runs table: the values that vary, scale first and seed last
    (``scale=10 seed=1 #024``), then the trial number."""
    order = sorted(params, key=lambda key: (key not in SCALE_KEYS, key == "trial.seed"))
    varied = " ".join(f"{key.rsplit('.', 1)[-1]}={params[key]}" for key in order)
    return f"{varied} #{number:03d}" if varied else f"trial #{number:03d}"


def trial_description(loss: LossConfig, params: Mapping[str, Any]) -> str:
    """A trial run's Description (markdown, the run page's first line): its grid point in words, the loss and its
    scale and temperature first, then the seed and any other swept value (``` `mnrl` at scale 10 (temperature
    0.1), seed 1; trial.batch_size 64 ```). `loss`: the trial's resolved ``loss`` config."""
    words = f"`{loss['name']}`"
    schedule = (loss.get("scale_schedule") or {}).get("kind", "constant")
    if loss.get("scale") is not None:
        at = "at" if schedule == "constant" else f"on a {schedule} scale schedule starting at"
        words += f" {at} scale {loss['scale']:g} (temperature {loss['temperature']:g})"
    if "trial.seed" in params:
        words += f", seed {params['trial.seed']}"
    others = [f"{key} {value}" for key, value in params.items() if key not in (*SCALE_KEYS, "trial.seed")]
    return words + (f"; {', '.join(others)}" if others else "")


def trial_outcome(state: str, reason: str | None, user_attrs: Mapping[str, Any]) -> str:
    """The outcome a trial run's Description ends with: its state (Optuna's, or KILLED when interrupted), and its
    STSB scores (from the trial's `user_attrs`) or why it stopped."""
    scores = {"STSB validation": ATTR_VALIDATION_SPEARMAN, "test": ATTR_TEST_SPEARMAN}
    found = [f"{name} {user_attrs[key]:.4f}" for name, key in scores.items() if key in user_attrs]
    detail = ", ".join(found) if state == "COMPLETE" else reason
    return f"**{state}**" + (f": {detail}" if detail else "")

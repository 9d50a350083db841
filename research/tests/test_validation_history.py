"""A published folder gains its study's validation history from a deterministic rerun, under its own trial numbers,
only when every rerun trial ended on the published Spearman."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from research.notebooks.validation_history import published_history
from sweep.report import HISTORY_CSV, TRIALS_CSV


def _folder(path: Path, numbers: list[int], finals: list[float]) -> Path:
    path.mkdir()
    points = [(1.0, 0), (20.0, 0), (1.0, 1)]
    trials = {"trial_number": numbers, "loss.scale": [p[0] for p in points], "trial.seed": [p[1] for p in points]}
    pd.DataFrame({**trials, "stsb_validation_spearman": finals}).to_csv(path / TRIALS_CSV, index=False)
    history = [
        {"run_id": f"r{n}", "trial_number": n, "state": "COMPLETE", "scale": p[0], "step": step, "value": value}
        for n, p, final in zip(numbers, points, finals, strict=True)
        for step, value in ((0, 0.5), (40, final - 0.01), (120, final))
    ]
    pd.DataFrame(history).to_csv(path / HISTORY_CSV, index=False)
    return path


def test_the_rerun_history_takes_the_published_trial_numbers(tmp_path: Path) -> None:
    published = _folder(tmp_path / "published", [0, 1, 2], [0.6, 0.7, 0.65])
    (published / HISTORY_CSV).unlink()
    rerun = _folder(tmp_path / "rerun", [2, 0, 1], [0.6, 0.7, 0.65])
    history = published_history(rerun, published)
    last = history[history["step"] == 120].set_index("trial_number")["value"]
    assert last.to_dict() == {0: 0.6, 1: 0.7, 2: 0.65} and set(history["run_id"]) == {"r0", "r1", "r2"}


def test_a_rerun_that_ended_a_trial_elsewhere_is_refused(tmp_path: Path) -> None:
    published = _folder(tmp_path / "published", [0, 1, 2], [0.6, 0.7, 0.65])
    rerun = _folder(tmp_path / "rerun", [0, 1, 2], [0.6, 0.7, 0.6500001])
    with pytest.raises(ValueError, match="1 trial"):
        published_history(rerun, published)

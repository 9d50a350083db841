"""``python -m sweep.report pooled`` on small results folders written here: the per-condition and pooled lines, the
duplicate folder it refuses and names, the files of ``--out``, and one line with exit code 2 (no traceback) for a
missing folder or a missing scale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sweep.report.__main__ import main
from sweep.report.pooled import folder_frame

CONFIG = {"name": "x", "loss": {"name": "mnrl", "scale": 20.0}, "trial": {"learning_rate": 0.05, "seed": 0}}
CONFIG |= {"study": {"search_space": {"loss.scale": [10, 20]}, "seeds": [0, 1, 2]}, "paths": {"root": "runs"}}


def write_folder(path: Path, rows: list[dict[str, float]], name: str, quiet: bool = False) -> Path:
    """A results folder: ``trials.csv`` (COMPLETE trials) and a ``config.yaml`` naming the study ``name``."""
    path.mkdir(parents=True)
    table = pd.DataFrame(rows).assign(state="COMPLETE")
    table.insert(0, "trial_number", range(len(table)))
    table.to_csv(path / "trials.csv", index=False)
    (path / "config.yaml").write_text(yaml.safe_dump(CONFIG | {"name": name, "quiet": quiet}))
    return path


def lr_rows(rng: np.random.Generator, gaps: dict[float, float]) -> list[dict[str, float]]:
    """Trials at scales 10 and 20 for 3 seeds per learning rate; scale 10 ahead by ``gaps[lr]``."""
    return [
        {"loss.scale": scale, "trial.learning_rate": lr, "trial.seed": float(seed)}
        | {"stsb_validation_spearman": 0.7 + (gap if scale == 10.0 else 0.0) + rng.normal(0, 0.002)}
        for lr, gap in gaps.items()
        for seed in range(3)
        for scale in (10.0, 20.0)
    ]


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """A two-condition study and its re-run under another study name (identical trials)."""
    rows = lr_rows(np.random.default_rng(0), {0.01: 0.01, 0.1: 0.03})
    return write_folder(tmp_path / "lr", rows, "lr"), write_folder(tmp_path / "lr_again", rows, "again", quiet=True)


def test_the_tidy_frame_carries_conditions_seeds_and_a_config_without_study_keys(folders):
    frame = folder_frame(folders[0], "stsb_validation_spearman", (10.0, 20.0))
    assert frame["condition"].unique().tolist() == ["learning_rate=0.01", "learning_rate=0.1"]
    assert sorted(frame["seed"].unique()) == [0.0, 1.0, 2.0] and set(frame["source"]) == {"lr"}
    assert "trial.learning_rate=0.01" in frame["config"].iloc[0]
    keys = {item.split("=")[0] for item in frame["config"].iloc[0].split(";")}
    assert keys == {"loss.name", "trial.learning_rate"}  # no study, paths, name, quiet, scale or seed


def test_pooled_prints_each_condition_and_the_pooled_line_and_names_the_refused_duplicate(folders, capsys):
    assert main(["pooled", *map(str, folders), "--a", "10", "--b", "20"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("lr (learning_rate=0.01): +0.010 [") and lines[0].endswith("3 of 3 seed pairs")
    assert lines[1].startswith("lr (learning_rate=0.1): +0.030 [")
    pooled = lines[-1]
    assert pooled.startswith("scale 10 vs 20, STSB validation Spearman, pooled over 2 distinct conditions (6 seed ")
    assert "(random effects over conditions, 95%); 10 beats 20 in 6 of 6 seed pairs" in pooled
    assert "dropped as duplicates: lr_again (learning_rate=0.01; seeds 0..2) = lr (learning_rate=0.01) (same " in pooled
    assert "lr_again (learning_rate=0.1; seeds 0..2) = lr (learning_rate=0.1) (same config)" in pooled
    assert len(lines) == 3


def test_pooled_writes_its_table_and_lines_with_out(folders, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["pooled", str(folders[0]), "--a", "10", "--b", "20", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(out / "pooled_10_vs_20.csv")
    assert table["role"].tolist() == ["condition", "condition", "pooled"]
    pooled = table.set_index("role").loc["pooled"]
    assert pooled["n_pairs"] == 6 and pooled["mean"] == pytest.approx(0.02, abs=0.002)
    markdown = (out / "pooled_10_vs_20.md").read_text()
    assert "dropped as duplicates: none" in markdown and "| role | source |" in markdown
    assert str(out / "provenance.json") in printed


def test_a_missing_folder_is_one_line_and_exit_code_2(folders, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["pooled", str(folders[0]), str(tmp_path / "nowhere"), "--a", "10", "--b", "20"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert (
        err == f"python -m sweep.report pooled: error: {tmp_path / 'nowhere'}: no results folder there (no trials.csv)"
    )


def test_a_scale_the_folder_lacks_is_one_line_and_exit_code_2(folders, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["pooled", str(folders[0]), "--a", "15", "--b", "20"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"python -m sweep.report pooled: error: {folders[0]}: no COMPLETE trial at scale 15 (its scales: 10, 20)"
    ]

"""The GPU check (`python -m benchmarks.gpu_check`): its CPU rehearsal writes every file with its columns and the
fused sections' members equal to the same trials one at a time, its README's rows made from those files, its one-line
refusals, its comparisons; and the kit's size budget (benchmarks/gpu_kit/build.py), on fake folders."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest
import torch

from benchmarks import gpu_check
from benchmarks.gpu_fused import MEMBER_COLUMNS, FusedStudy, fused_floor_row, fused_table
from benchmarks.gpu_measure import SAMPLE_COLUMNS, StudyRun, against_reference, between_runs
from benchmarks.gpu_report import fused_lines, utilisation
from sweep.inputs.data import find_local_dir

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "research" / "results" / "mnrl_scale" / "trials.csv"
FILES = {"machine.json", "samples.csv", "static_grid.csv", "static_fused.csv", "transformer_grid.csv", "floor.csv"}
SECTIONS = ["static_fp32", "static_fused", "fused_floor", "static_pack", "bf16_pack1", "floor", "bf16_pack2"]
SECTIONS += ["bf16_workers2", "fp32_pack1"]


def kit_builder() -> ModuleType:
    """benchmarks/gpu_kit/build.py, which is a script beside the package, not a module of it."""
    spec = importlib.util.spec_from_file_location("gpu_kit_build", REPO / "benchmarks" / "gpu_kit" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(label: str, rows: list[tuple[float, int, float, float, bool]]) -> StudyRun:
    columns = ["scale", "seed", "spearman", "wall_s", "first_in_process"]
    return StudyRun(label, pd.DataFrame(rows, columns=columns), span_s=36.0)


@pytest.mark.e2e
def test_the_cpu_rehearsal_writes_every_file_with_its_columns(tmp_path: Path) -> None:
    data = find_local_dir(None)
    out = tmp_path / "out"
    args = ["--rehearsal", "--out", str(out), "--reference-trials", str(REFERENCE), "--data-dir", str(data)]
    record = gpu_check.main(args)
    assert all(isinstance(seconds, float) for seconds in record["sections"].values()), record["sections"]
    assert list(record["sections"]) == SECTIONS  # the fused sections right after the one-at-a-time static trials
    assert {p.name for p in out.iterdir()} == FILES | {"README.md"}  # with the kit's log: the 8 files a call returns
    both = pd.read_csv(out / "static_grid.csv")
    expected = [(run, scale, 0) for run in ("static_fp32", "static_pack") for scale in (5.0, 20.0)]
    assert sorted(both[["run", "scale", "seed"]].itertuples(index=False, name=None)) == expected
    assert both.reference_spearman.notna().all()  # the reference's (5, 0) and (20, 0), beside the rehearsal's
    assert {"spearman", "difference", "within_tolerance", "wall_s", "span_s"} <= set(both.columns)
    # the product's fused pack (`study.pack=2`) gives each trial's Spearman as the same trial one at a time
    pack = both[both.run == "static_pack"]
    assert (pack.spearman - pack.first_run_spearman).abs().max() < 1e-4, pack
    static = both[both.run == "static_fp32"]
    grid = pd.read_csv(out / "transformer_grid.csv")
    assert sorted(grid.run.unique()) == ["bf16_pack1", "bf16_pack2", "bf16_workers2", "fp32_pack1"]
    assert (grid.groupby("run").scale.nunique() == 2).all()
    packed = grid[grid.run.isin(["bf16_pack1", "bf16_pack2", "bf16_workers2"])]
    assert packed.within_tolerance.all(), packed  # a packed trial, or a worker's, equals the same trial run alone
    assert (grid.trials_per_hour > 0).all()
    fused = pd.read_csv(out / "static_fused.csv")
    assert list(fused[["scale", "seed"]].itertuples(index=False, name=None)) == [(5.0, 0), (20.0, 0)]
    assert fused.live.all() and all(math.isfinite(v) for v in [*fused.spearman, *fused.test_spearman])
    assert fused.reference_spearman.notna().all()
    # the rehearsal's fused members are its one-at-a-time trials (the same 6 steps on the same data), trained fused
    assert fused.one_at_a_time_spearman.tolist() == static.spearman.tolist()
    assert (fused.difference_one_at_a_time.abs() <= 0.005).all(), fused
    assert (fused.difference_floor.abs() < 1e-4).all(), fused  # the floor scores the same members the same
    assert (fused.start_s >= 0).all() and (fused.end_s > fused.start_s).all()
    floor = pd.read_csv(out / "floor.csv")
    assert sorted(floor.model) == ["static", "static_fused", "transformer"] and (floor.floor_s > 0).all()
    assert floor.framework_s.notna().all()  # each model's trials after the first of its process; the fused span
    assert floor.framework_over_floor.tolist() == pytest.approx((floor.framework_s / floor.floor_s).tolist())
    fused_floor = floor.set_index("model").loc["static_fused"]
    span = fused.end_s.max() - fused.start_s.min()
    assert fused_floor.trials == 2 and fused_floor.framework_s == pytest.approx(span)
    assert {"bf16_pack1", "fp32_pack1"} <= set(grid.run)  # bf16 against fp32 (the README's line) reads these rows
    samples = pd.read_csv(out / "samples.csv")
    assert tuple(samples.columns) == SAMPLE_COLUMNS and len(samples) > 0
    assert set(samples.section) <= {"start", *SECTIONS}
    assert json.loads((out / "machine.json").read_text())["settings"]["name"] == "rehearsal"
    readme = (out / "README.md").read_text()
    assert "trials/h" in readme and "bare torch loop" in readme and "failed" not in readme
    assert "bf16 against fp32 on the same 2 transformer trials" in readme
    gap = (pack.spearman - pack.first_run_spearman).abs().max()
    assert "fused packs (`study.pack`) (`static_pack`): 2 of 2 trials have a reference" in readme
    assert f"largest |Spearman difference| from the same trial one at a time {gap:.5f}" in readme
    rates = grid.groupby("run").trials_per_hour.first()
    workers = rates["bf16_workers2"] / rates["bf16_pack1"]
    assert (
        f"bf16, 2 workers sharing the device, one trial each: {rates['bf16_workers2']:.0f} trials/h = {workers:.2f}x"
        in readme
    )
    worst = fused.difference.abs().max()
    assert f"2 trials in {span:.2f} s from the first member's start to the last member's end" in readme
    assert f"largest |Spearman - reference| {worst:.5f}" in readme
    alone = fused.difference_one_at_a_time.abs().max()
    assert f"same trials one at a time (`static_fp32`): largest |Spearman difference| {alone:.5f}" in readme
    ratio = fused_floor.framework_over_floor
    assert f"{span:.2f} s / bare fused loop {fused_floor.floor_s:.2f} s = {ratio:.2f} (goal <= 1.2: " in readme
    for section in SECTIONS:  # GPU utilisation per section: no nvidia-smi on the CPU, so each row says so
        rows = samples[samples.section == section]
        expected = f"no nvidia-smi ({len(rows)})" if len(rows) else "no samples"
        assert f"| {section} | {record['sections'][section]} | {expected} |" in readme


def test_without_a_gpu_the_check_is_refused_in_one_line_unless_rehearsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as stopped:
        gpu_check.main(["--out", str(tmp_path), "--reference-trials", str(REFERENCE), "--data-dir", str(tmp_path)])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--rehearsal" in error
    assert not any(tmp_path.iterdir())  # refused before any work


def test_a_reference_without_the_study_columns_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "trials.csv"
    bad.write_text("scale,value\n1,0.5\n")
    args = ["--rehearsal", "--out", str(tmp_path / "o"), "--reference-trials", str(bad)]
    with pytest.raises(SystemExit):
        gpu_check.main([*args, "--data-dir", str(find_local_dir(None))])
    assert "--reference-trials" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_trials_are_compared_with_the_reference_and_the_first_run_within_the_tolerance() -> None:
    reference = pd.DataFrame({"scale": [1.0, 20.0], "seed": [0, 0], "reference_spearman": [0.5, 0.7]})
    gpu = run("gpu", [(1.0, 0, 0.504, 9.0, True), (20.0, 0, 0.7060, 3.0, False), (30.0, 0, 0.6, 3.0, False)])
    compared = against_reference(gpu, reference, tolerance=0.005)
    assert compared.within_tolerance.tolist() == [True, False, False]  # 0.004; 0.006; no reference for 30
    assert compared.difference.iloc[0] == pytest.approx(0.004)
    assert gpu.later_trial_seconds() == 3.0 and gpu.trials_per_hour == 300.0
    packed = run("pack4", [(1.0, 0, 0.504, 2.0, True), (20.0, 0, 0.71, 2.0, False), (30.0, 0, 0.6, 2.0, False)])
    table = between_runs([gpu, packed], tolerance=0.003)
    assert table[table.run == "pack4"].difference.round(4).tolist() == [0.0, 0.004, 0.0]
    assert table[table.run == "pack4"].within_tolerance.tolist() == [True, False, True]


def test_the_kit_budget_fails_loudly_over_64_mib_counting_the_tree_and_the_kit(tmp_path: Path) -> None:
    build = kit_builder()
    kit = tmp_path / "kit"
    (kit / "whl").mkdir(parents=True)
    (kit / "whl" / "a.whl").write_bytes(b"\0" * (40 * 2**20))
    assert build.check_budget(20 * 2**20, kit, 64.0)["total_mib"] == 60.0
    with pytest.raises(SystemExit, match=r"OVER BUDGET: tree 30\.0 MiB \+ kit 40\.0 MiB = 70\.0 MiB > 64 MiB"):
        build.check_budget(30 * 2**20, kit, 64.0)


def test_the_tree_counts_tracked_and_untracked_files_but_not_ignored_ones(tmp_path: Path) -> None:
    build = kit_builder()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("/.gpukit/\n")  # 10 bytes
    (tmp_path / "tracked.py").write_bytes(b"x" * 100)
    (tmp_path / "untracked.txt").write_bytes(b"y" * 1000)
    (tmp_path / ".gpukit").mkdir()
    (tmp_path / ".gpukit" / "big.whl").write_bytes(b"z" * 10_000)
    subprocess.run(["git", "-C", str(tmp_path), "add", "tracked.py", ".gitignore"], check=True)
    assert build.tree_bytes(tmp_path) == 10 + 100 + 1000


def test_fused_members_are_read_against_the_reference_the_trials_alone_and_the_floor_and_the_goals() -> None:
    members = pd.DataFrame(
        [(1.0, 0, 0.504, 0.4, True, 0.0, 4.0), (20.0, 0, 0.7060, 0.6, True, 0.0, 4.5)]
        + [(s, seed, 0.6, 0.5, True, 4.5 * seed, 4.5 * seed + 4.0) for seed in (1, 2) for s in (1.0, 20.0)],
        columns=list(MEMBER_COLUMNS),
    )
    study = FusedStudy([], "", (1.0, 20.0), (0, 1, 2), Path("."), members=members, floor_s=6.0)
    study.floor_members = members[["scale", "seed"]].assign(floor_spearman=members.spearman + 1e-6)
    reference = pd.DataFrame({"scale": [1.0, 20.0], "seed": [0, 0], "reference_spearman": [0.5, 0.7]})
    alone = run("alone", [(1.0, 0, 0.505, 2.0, True), (20.0, 0, 0.7, 2.0, False)])
    table = fused_table(study, reference, alone, tolerance=0.005)
    assert table is not None
    assert table.within_tolerance.tolist() == [True, False, False, False, False, False]  # 0.004, 0.006, no reference
    assert table.difference_one_at_a_time.round(4).tolist()[:2] == [-0.001, 0.006]
    assert table.difference_one_at_a_time.isna().sum() == 4 and (table.difference_floor.abs() < 1e-5).all()
    assert fused_floor_row(table, study.floor_s) == ("static_fused", 6, 6.0, 13.0, 13.0 / 6.0)
    lines = fused_lines(table, 0.005)
    assert "6 trials in 13.00 s from the first member's start" in lines[0] and "<= 10 s: NOT met" in lines[0]
    assert "2 of 6 members have a reference; largest |Spearman - reference| 0.00600" in lines[0]
    assert "largest |Spearman difference| 0.00600 (tolerance 0.005: NOT met)" in lines[1]
    fast = table.assign(end_s=table.end_s / 2, seed=range(6)).loc[table.index.repeat(5)].head(27)
    assert "27 trials in 6.50 s" in fused_lines(fast, 0.005)[0] and "<= 10 s: met" in fused_lines(fast, 0.005)[0]
    assert fused_table(FusedStudy([], "", (), (), Path(".")), reference, alone, 0.005) is None


def test_gpu_utilisation_is_the_mean_of_a_sections_samples() -> None:
    samples = pd.DataFrame(
        {"section": ["a", "a", "b", "c"], "gpu_util_pct": [10.0, 30.0, float("nan"), 5.0]},
    )
    assert utilisation(samples, "a") == "20.0 (2)"
    assert utilisation(samples, "b") == "no nvidia-smi (1)"
    assert utilisation(samples, "d") == "no samples" and utilisation(None, "a") == "no samples"

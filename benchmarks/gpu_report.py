"""The files of `python -m benchmarks.gpu_check`: its tables, made from the runs of its sections, and its README,
those tables and the GPU samples read against the goals, every number from them."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from benchmarks.gpu_fused import FusedStudy, fused_floor_row, fused_table
from benchmarks.gpu_measure import StudyRun, against_reference, between_runs

if TYPE_CHECKING:
    from benchmarks.gpu_check import CheckSettings

GOAL_PACKED = 3.0  # trials per hour packed / one at a time
GOAL_FLOOR = 1.1  # framework trial / bare torch loop
GOAL_FUSED_TRIALS, GOAL_FUSED_S = 27, 10.0  # the default static study's trials, fused, first start to last end
GOAL_FUSED_FLOOR = 1.2  # the fused study / the bare fused loop of the same steps and evaluations


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def static_grid(runs: Sequence[StudyRun], reference: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """The static runs' trials (one at a time, then the product's fused packs), each beside the reference's Spearman
    and the first run's, with the run's label and span."""
    frames = []
    for run in runs:
        table = against_reference(run, reference, tolerance)
        table.insert(0, "run", run.label)
        table["span_s"] = run.span_s
        frames.append(table)
    first = frames[0][["scale", "seed", "spearman"]].rename(columns={"spearman": "first_run_spearman"})
    return pd.concat(frames, ignore_index=True).merge(first, on=["scale", "seed"], how="left")


def static_lines(table: pd.DataFrame, tolerance: float) -> list[str]:
    lines = []
    for label, run in table.groupby("run", sort=False):
        compared = run.dropna(subset=["reference_spearman"])
        worst = compared.difference.abs().max() if len(compared) else float("nan")
        how = "one trial at a time" if label == "static_fp32" else "through the product's fused packs (`study.pack`)"
        line = (
            f"- Default study on the device, fp32, {how} (`{label}`): {len(compared)} of {len(run)} trials have a "
            f"reference; largest |Spearman - reference| {worst:.5f} (tolerance {tolerance}): "
            f"{verdict(bool(len(compared)) and bool(compared.within_tolerance.all()))}; median "
            f"{run.wall_s.median():.2f} s per trial; {run.span_s.iloc[0]:.2f} s from the first trial's start to the "
            "last one's end"
        )
        if label != "static_fp32":
            fast = len(run) >= GOAL_FUSED_TRIALS and run.span_s.iloc[0] <= GOAL_FUSED_S
            line += f" (goal: {GOAL_FUSED_TRIALS} trials in <= {GOAL_FUSED_S:.0f} s: {verdict(fast)})"
            if "static_fp32" in set(table.run):  # the first run, one trial at a time, ran
                alone = (run.spearman - run.first_run_spearman).abs().max()
                line += f"; largest |Spearman difference| from the same trial one at a time {alone:.5f}"
        lines.append(line + ".")
    return lines


def largest(differences: pd.Series) -> str:
    """The largest |difference| of the values there are, or 'none' (the other run did not run)."""
    present = differences.dropna().abs()
    return f"{present.max():.5f}" if len(present) else "none"


def fused_lines(table: pd.DataFrame, tolerance: float) -> list[str]:
    """The fused study: its span against the goal, each member's Spearman against the reference's, the same trial's
    one at a time and the fused floor's evaluation of the same member."""
    span = float(table.end_s.max() - table.start_s.min())
    compared = table.dropna(subset=["reference_spearman"])
    fast = len(table) >= GOAL_FUSED_TRIALS and span <= GOAL_FUSED_S
    lines = [
        f"- Default static study fused (`FusedStaticPack`, one pack per seed): {len(table)} trials in {span:.2f} s "
        f"from the first member's start to the last member's end (goal: its {GOAL_FUSED_TRIALS} trials in <= "
        f"{GOAL_FUSED_S:g} s: {verdict(fast)}); {len(compared)} of {len(table)} members have a reference; largest "
        f"|Spearman - reference| {largest(compared.difference)} (tolerance {tolerance}): "
        f"{verdict(bool(len(compared)) and bool(compared.within_tolerance.all()))}.",
    ]
    if "difference_one_at_a_time" in table:
        ok = bool((table.difference_one_at_a_time.abs() <= tolerance).all())
        lines.append(
            f"- Fused members against the same trials one at a time (`static_fp32`): largest |Spearman difference| "
            f"{largest(table.difference_one_at_a_time)} (tolerance {tolerance}: {verdict(ok)})."
        )
    if "difference_floor" in table:
        lines.append(
            f"- Fused members against the fused floor's own scoring of the same members: largest |Spearman "
            f"difference| {largest(table.difference_floor)} (the floor does the same work)."
        )
    return lines


def floor_line(row: Mapping[Any, Any]) -> str:
    ratio = float(row["framework_over_floor"])
    if row["model"] == "static_fused":
        return (
            f"- static, fused: the study's {row['trials']} trials {row['framework_s']:.2f} s / bare fused loop "
            f"{row['floor_s']:.2f} s = {ratio:.2f} (goal <= {GOAL_FUSED_FLOOR}: {verdict(ratio <= GOAL_FUSED_FLOOR)})."
        )
    return (
        f"- {row['model']}: framework trial {row['framework_s']:.2f} s / bare torch loop {row['floor_s']:.2f} s = "
        f"{ratio:.2f} (goal <= {GOAL_FLOOR}: {verdict(ratio <= GOAL_FLOOR)})."
    )


def utilisation(samples: pd.DataFrame | None, section: str) -> str:
    """The mean GPU utilisation of a section's samples, and how many there are."""
    rows = samples[samples.section == section] if samples is not None else pd.DataFrame()
    if not len(rows):
        return "no samples"
    mean = rows.gpu_util_pct.mean()
    return f"{mean:.1f} ({len(rows)})" if not math.isnan(mean) else f"no nvidia-smi ({len(rows)})"


def packing_lines(table: pd.DataFrame, packs: Sequence[int], workers: int, low: str, tolerance: float) -> list[str]:
    """A line per run of the transformer grid that ran: packs of each size in one process, then `workers` processes
    sharing the device, each against one trial at a time (the first pack size) in trials per hour and Spearman."""
    lines = []
    rates = table.groupby("run").trials_per_hour.first()
    alone = f"{low}_pack{packs[0]}"
    runs = [(f"{low}_pack{pack}", f"pack {pack}", pack != packs[0]) for pack in packs]
    runs.append((f"{low}_workers{workers}", f"{workers} workers sharing the device, one trial each", True))
    for label, words, against_goal in runs:
        if label not in rates:
            continue
        run = table[table.run == label]
        ratio = rates[label] / rates[alone] if alone in rates else float("nan")
        goal = f" (goal >= {GOAL_PACKED:g}x: {verdict(ratio >= GOAL_PACKED)})" if against_goal else ""
        lines.append(
            f"- Transformer grid, {low}, {words}: {rates[label]:.0f} trials/h = {ratio:.2f}x one at a time{goal}; "
            f"largest |Spearman - one at a time| {run.difference.abs().max():.5f} (tolerance {tolerance}: "
            f"{verdict(bool(run.within_tolerance.all()))})."
        )
    return lines


def render(
    name: str,
    packs: Sequence[int],
    workers: int,
    low: str,
    tables: dict[str, pd.DataFrame],
    record: dict[str, Any],
    tolerance: float,
    samples: pd.DataFrame | None = None,
) -> str:
    """The README: the machine, the numbers against the goals, the sections that failed or were skipped."""
    m = record["machine"]
    lines = [
        f"# GPU check ({name})",
        "",
        f"Machine: {m.get('gpu', 'no GPU')}, torch {m.get('torch')} (CUDA {m.get('torch_cuda')}), "
        f"sentence-transformers {m.get('sentence-transformers')}, transformers {m.get('transformers')}, "
        f"{m.get('cpu')} ({m.get('usable_cores')} cores), {m.get('date')}; run took {record['elapsed_s']:.0f} s.",
        "",
        "## Against the goals",
        "",
    ]
    if "static_grid" in tables:
        lines += static_lines(tables["static_grid"], tolerance)
    if "static_fused" in tables:
        lines += fused_lines(tables["static_fused"], tolerance)
    if record["settings"]["static_steps"]:
        lines.append(
            f"  (Rehearsal: the static trials, one at a time and fused, stop at {record['settings']['static_steps']} "
            "steps, so their Spearman is not comparable with the reference's, only with each other; the files and the "
            "code paths are what it checks.)"
        )
    if "transformer_grid" in tables:
        lines += packing_lines(tables["transformer_grid"], packs, workers, low, tolerance)
    lines += [floor_line(row) for row in (tables["floor"].to_dict("records") if "floor" in tables else [])]
    if "precision" in tables:
        p = tables["precision"]
        speed = p[f"wall_s_{low}"].median() / p.wall_s_fp32.median()
        lines.append(
            f"- {low} against fp32 on the same {len(p)} transformer trials: largest |Spearman difference| "
            f"{p.difference.abs().max():.5f}; seconds per trial {low} / fp32 {speed:.2f}."
        )
    lines += [
        "",
        "The transformer has random weights (`model.reinit=true`): its trials per hour and framework / floor do not",
        "depend on the weights, and its Spearman says only whether two runs of the same trial agree.",
        "",
        "## Sections",
        "",
        "| section | seconds or outcome | mean GPU utilisation, % (samples.csv: its samples) |",
        "|---|---|---|",
    ]
    lines += [
        f"| {k} | {str(v).splitlines()[0][:300]} | {utilisation(samples, k)} |" for k, v in record["sections"].items()
    ]
    return "\n".join(lines) + "\n"


def write_files(
    out: Path,
    s: CheckSettings,
    runs: dict[str, StudyRun],
    fused: FusedStudy,
    reference: pd.DataFrame,
    record: dict[str, Any],
    tolerance: float,
) -> None:
    """The CSVs of whatever ran, machine.json and README.md (its utilisation per section read from samples.csv)."""
    tables: dict[str, pd.DataFrame] = {}
    static_runs = [runs[label] for label in ("static_fp32", "static_pack") if label in runs]
    if static_runs:
        tables["static_grid"] = static_grid(static_runs, reference, tolerance)
    fused_members = fused_table(fused, reference, runs.get("static_fp32"), tolerance)
    if fused_members is not None:
        tables["static_fused"] = fused_members
    labels = [f"{s.low_precision}_pack{p}" for p in s.packs] + [f"{s.low_precision}_workers{s.workers}", "fp32_pack1"]
    transformer_runs = [runs[k] for k in labels if k in runs]
    if transformer_runs:
        tables["transformer_grid"] = between_runs(transformer_runs, tolerance)
    alone = runs.get(f"{s.low_precision}_pack{s.packs[0]}")
    floor_s = record.get("floor_s", {})
    framework = {"transformer": alone, "static": runs.get("static_fp32")}
    floor_rows = [
        (model, 1, floor_s[model], run.later_trial_seconds(), run.later_trial_seconds() / floor_s[model])
        for model, run in framework.items()
        if run is not None and model in floor_s
    ]
    fused_row = fused_floor_row(fused_members, fused.floor_s)
    floor_rows += [fused_row] if fused_row else []
    if floor_rows:
        columns = ["model", "trials", "floor_s", "framework_s", "framework_over_floor"]
        tables["floor"] = pd.DataFrame(floor_rows, columns=columns)
    if alone is not None and "fp32_pack1" in runs:
        low = f"_{s.low_precision}"
        precision = alone.trials.merge(runs["fp32_pack1"].trials, on=["scale", "seed"], suffixes=(low, "_fp32"))
        precision["difference"] = precision[f"spearman{low}"] - precision.spearman_fp32
        tables["precision"] = precision
    for name, table in tables.items():
        if name != "precision":  # its rows are transformer_grid.csv's (a call brings back 8 files: no room for it)
            table.to_csv(out / f"{name}.csv", index=False)
    (out / "machine.json").write_text(json.dumps(record, indent=1, default=str))
    samples = pd.read_csv(out / "samples.csv") if (out / "samples.csv").is_file() else None
    readme = render(s.name, s.packs, s.workers, s.low_precision, tables, record, tolerance, samples)
    (out / "README.md").write_text(readme)
    print((out / "README.md").read_text())

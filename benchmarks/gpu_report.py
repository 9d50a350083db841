"""The README of `python -m benchmarks.gpu_check`: its tables read against the goals, every number from them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

GOAL_PACKED = 3.0  # trials per hour packed / one at a time
GOAL_FLOOR = 1.1  # framework trial / bare torch loop


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def static_lines(table: pd.DataFrame, tolerance: float) -> list[str]:
    compared = table.dropna(subset=["reference_spearman"])
    worst = compared.difference.abs().max() if len(compared) else float("nan")
    return [
        f"- Default study on the device, fp32: {len(compared)} of {len(table)} trials have a reference; largest "
        f"|Spearman - reference| {worst:.5f} (tolerance {tolerance}): "
        f"{verdict(bool(len(compared)) and bool(compared.within_tolerance.all()))}; median "
        f"{table.wall_s.median():.2f} s per trial.",
    ]


def packing_lines(table: pd.DataFrame, packs: Sequence[int], low: str, tolerance: float) -> list[str]:
    lines = []
    rates = table.groupby("run").trials_per_hour.first()
    alone = f"{low}_pack{packs[0]}"
    for pack in packs:
        label = f"{low}_pack{pack}"
        if label not in rates:
            continue
        run = table[table.run == label]
        ratio = rates[label] / rates[alone] if alone in rates else float("nan")
        goal = f" (goal >= {GOAL_PACKED:g}x: {verdict(ratio >= GOAL_PACKED)})" if pack != packs[0] else ""
        lines.append(
            f"- Transformer grid, {low}, pack {pack}: {rates[label]:.0f} trials/h = {ratio:.2f}x one at a time{goal}; "
            f"largest |Spearman - one at a time| {run.difference.abs().max():.5f} (tolerance {tolerance}: "
            f"{verdict(bool(run.within_tolerance.all()))})."
        )
    return lines


def render(
    name: str, packs: Sequence[int], low: str, tables: dict[str, pd.DataFrame], record: dict[str, Any], tolerance: float
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
    if record["settings"]["static_steps"]:
        lines.append(
            f"  (Rehearsal: these trials stop at {record['settings']['static_steps']} steps, so their Spearman is not "
            "comparable with the reference's; the files and the code paths are what it checks.)"
        )
    if "transformer_grid" in tables:
        lines += packing_lines(tables["transformer_grid"], packs, low, tolerance)
    for row in tables["floor"].to_dict("records") if "floor" in tables else []:
        ratio = float(row["framework_over_floor"])
        lines.append(
            f"- {row['model']}: framework trial {row['framework_s']:.2f} s / bare torch loop {row['floor_s']:.2f} s = "
            f"{ratio:.2f} (goal <= {GOAL_FLOOR}: {verdict(ratio <= GOAL_FLOOR)})."
        )
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
        "| section | seconds or outcome |",
        "|---|---|",
    ]
    lines += [f"| {k} | {str(v).splitlines()[0][:300]} |" for k, v in record["sections"].items()]
    return "\n".join(lines) + "\n"

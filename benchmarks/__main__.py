"""The command line `python -m benchmarks`: runs the chosen items and writes `<out>/README.md` and `bench.json`."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import benchmarks
from benchmarks.between_trials import measure_between_trials
from benchmarks.eval_speed import measure_eval_speed
from benchmarks.gpu import gpu_rows
from benchmarks.inprocess import quiet_libraries
from benchmarks.live_race import measure_live_race
from benchmarks.naive_layer_grid import measure_layer_grid
from benchmarks.packing import measure_packing
from benchmarks.pruning import measure_pruning, pruning_rows
from benchmarks.quick_answers import measure_quick_answers
from benchmarks.race import measure_race
from benchmarks.runners import REPO_ROOT
from benchmarks.settings import FULL, QUICK, expected_seconds, reuses_sweep
from benchmarks.sweeps import (
    SweepMeasurements,
    agreement_details,
    baseline_rows,
    measure_sweeps,
    trial_overhead_rows,
    whole_sweep_rows,
)
from benchmarks.table import Row, machine_description, render_report

DEFAULT_DATA_DIR = os.environ.get("SWEEP_DATA_DIR") or str(REPO_ROOT.parent / "shared" / "data")
ITEMS = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12")


def guarded(item: str, label: str, measure: Callable[[], list[Row]]) -> list[Row]:
    """The rows of one measurement, or one "failed" row naming the error: a long run keeps its other results."""
    try:
        return measure()
    except Exception as error:  # noqa: BLE001
        message = f"{type(error).__name__}: {error}".splitlines()
        return [Row(item, label, "-", "-", None, "", " ".join(message[:1] + message[-3:])[:500], status="failed")]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's options (see the package docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=benchmarks.__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny steps, scales and repeats (checks the benchmark in a couple of minutes)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=default_out(),
        help="folder for README.md and bench.json (default: $SWEEP_HOME/bench, else sweep_runs/bench)",
    )
    parser.add_argument(
        "--data-dir",
        default=DEFAULT_DATA_DIR,
        help="folder holding nli/ and stsb/ (default: $SWEEP_DATA_DIR or ../shared/data)",
    )
    parser.add_argument("--only", default=",".join(ITEMS), help="comma list of items to run (1-3 run together)")
    parser.add_argument("--keep-runs", action="store_true", help="keep the studies' Optuna/MLflow folders (printed)")
    parser.add_argument(
        "--race-folders",
        type=lambda text: tuple(part for part in text.split(",") if part),
        default=(),
        metavar="DIR,...",
        help="item 9: results folders that trained every scale with every seed and ship predictions.npz, replayed "
        "as races (the first against the goals); none: item 9 is skipped",
    )
    parser.add_argument(
        "--live-races",
        type=lambda text: tuple(part for part in text.split(",") if part),
        default=None,
        metavar="EXPERIMENT,...",
        help="item 10: experiments whose full grid and race over seeds and steps are run live (default: "
        f"{','.join(FULL.live_races)}; quick: {','.join(QUICK.live_races)})",
    )
    return parser.parse_args(argv)


def default_out() -> Path:
    """Where the report goes without --out: beside the studies' own outputs (`paths.root`), never the checkout."""
    return Path(os.environ.get("SWEEP_HOME") or "sweep_runs") / "bench"


def main(argv: Sequence[str] | None = None) -> str:
    """Run the benchmark; write and print the report, which it returns."""
    args = parse_args(argv)
    settings = replace(QUICK if args.quick else FULL, race_folders=args.race_folders)
    if args.live_races is not None:
        settings = replace(settings, live_races=args.live_races)
    command = shlex.join(["python", "-m", "benchmarks", *(sys.argv[1:] if argv is None else argv)])
    items = set(args.only.split(","))
    start = time.perf_counter()

    def log(text: str) -> None:
        print(f"[{time.perf_counter() - start:6.0f} s] {text}", flush=True)

    quiet_libraries()
    machine = machine_description()
    log(f"{settings.name} mode: expected about {expected_seconds(settings) / 60:.0f} min on a quiet 2-core machine")
    work = Path(tempfile.mkdtemp(prefix="sweep_bench_"))
    rows: list[Row] = []
    details: list[str] = []
    raw: dict[str, Any] = {"settings": asdict(settings), "machine": machine}
    sweeps: list[SweepMeasurements] = []

    def items_1_3() -> list[Row]:
        sweeps.append(measure_sweeps(settings, args.data_dir, work, log))
        m = sweeps[0]
        raw["sweeps"] = asdict(m)
        details.extend(agreement_details(m))
        return baseline_rows(m) + trial_overhead_rows(m) + whole_sweep_rows(m)

    def item_4() -> list[Row]:
        reference = sweeps[0].framework_off[0] if sweeps and reuses_sweep(settings) else None
        results = measure_pruning(settings, args.data_dir, work, log, reference)
        raw["pruning"] = [asdict(r) for r in results]
        return pruning_rows(settings, results)

    def item_9() -> list[Row]:
        rows, results = measure_race(settings, log)
        raw["race"] = [asdict(result) for result in results]
        return rows

    def item_10() -> list[Row]:
        rows, results = measure_live_race(settings, args.data_dir, work, log)
        raw["live_race"] = [asdict(result) for result in results]
        return rows

    measurements: list[tuple[set[str], str, Callable[[], list[Row]]]] = [
        ({"1", "2", "3"}, "items 1-3: baseline processes and framework sweeps", items_1_3),
        ({"4"}, "item 4: pruning", item_4),
        ({"5"}, "item 5: layer x dim grid evaluation", lambda: measure_layer_grid(settings, args.data_dir, log)),
        ({"6"}, "item 6: evaluation speed", lambda: measure_eval_speed(settings, args.data_dir, log)),
        ({"7"}, "item 7: GPU", gpu_rows),
        ({"8"}, "item 8: packed trials and workers", lambda: measure_packing(settings, args.data_dir, work, log)),
        ({"9"}, "item 9: racing the seeds (replayed)", item_9),
        ({"10"}, "item 10: racing the seeds and steps (live)", item_10),
        (
            {"11"},
            "item 11: time outside the training steps",
            lambda: measure_between_trials(settings, args.data_dir, work, log),
        ),
        (
            {"12"},
            "item 12: commands that train nothing",
            lambda: measure_quick_answers(settings, args.data_dir, work, log),
        ),
    ]
    try:
        for wanted, label, measure in measurements:
            if items & wanted:
                log(label)
                rows.extend(guarded(min(wanted), label, measure))
    finally:
        if args.keep_runs:
            log(f"studies kept under {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    machine["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    elapsed = time.perf_counter() - start
    report = render_report(rows, machine, settings, elapsed, details, command)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "README.md").write_text(report)
    raw["rows"] = [{**asdict(r), "verdict": r.verdict} for r in rows]
    (args.out / "bench.json").write_text(json.dumps(raw, indent=1, default=str))
    print(report)
    log(f"written {args.out / 'README.md'} and {args.out / 'bench.json'}")
    return report


if __name__ == "__main__":
    main()

"""The GPU checks in one run: `python -m benchmarks.gpu_check --out DIR --reference-trials TRIALS_CSV`.

Writes at most 7 files to DIR (a time budget, `--budget-s`, skips the sections it leaves no time for):
  machine.json         the host, torch/CUDA versions, `nvidia-smi`, the settings and each section's seconds or error
  samples.csv          GPU utilisation and memory (nvidia-smi) and the host's load average each second, by section
  static_grid.csv      the default study (`+experiment=mnrl_scale`, static model, fp32) on the device: each
                       (scale, seed)'s Spearman beside the reference study's (`--reference-trials`), seconds per trial
  transformer_grid.csv a short transformer grid (random weights: `model.reinit=true`) one trial at a time and packed
                       (`study.pack`), in bf16, and one at a time in fp32: Spearman and trials per hour of each run
  floor.csv            the bare torch loop of the same steps (`benchmarks.packing.bare_loop`): framework / floor
  precision.csv        bf16 against fp32 on the same transformer trials: Spearman and seconds per trial
  README.md            the numbers against the goals (packed >= 3x trials per hour, framework / floor <= 1.1, the
                       same Spearman within the tolerance)

GPU kernels sum in other orders than CPU ones (cuBLAS's tiled matrix products, atomic adds in the embedding
backward), so the same trial's floats differ at about 1e-7 relative per operation, and the differences grow over the
trained steps: a trial's Spearman on the GPU is compared within `--tolerance` (0.005 by default: about what changing
the seed moves a short trial's Spearman by, so smaller differences change no conclusion the seeds allow), not for
equality. Packed members train on CUDA
streams in lockstep, which reorders kernels too, hence the same tolerance between packed and one-at-a-time trials.

`--rehearsal` runs the same code on the CPU with tiny settings (two reference trials cut to 6 steps, so not comparable
with the reference; a 2-layer 32-dim transformer; packs of 1 and 2; 200 STSB pairs) in a couple of minutes on a quiet
2-core machine: it checks the script, not the GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.gpu_measure import (
    Sampler,
    StudyRun,
    against_reference,
    between_runs,
    machine,
    read_reference,
    run_study,
)
from benchmarks.gpu_report import render
from benchmarks.inprocess import quiet_libraries
from benchmarks.packing import bare_loop
from benchmarks.runners import grid_override
from benchmarks.settings import DEFAULT_GRID

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True)
class CheckSettings:
    """Sizes of one check. `GPU` is the measurement (about 6 minutes expected on one H100, not yet measured);
    `REHEARSAL` checks the script on a CPU."""

    name: str
    device: str
    static_scales: tuple[float, ...] | None  # None: every (scale, seed) of the reference
    static_seeds: tuple[int, ...] | None
    static_steps: int | None  # None: the experiment's (as the reference trained); else shorter, not comparable
    transformer: tuple[str, ...]  # the transformer's model overrides (random weights)
    scales: tuple[float, ...]  # the transformer grid
    steps: int
    eval_steps: int
    packs: tuple[int, ...]  # the first is the reference: one trial at a time
    low_precision: str = "bf16"
    data: tuple[str, ...] = ()  # data overrides of every study (the rehearsal's subsets)
    budget_s: float = 330.0  # no section starts after it; the last takes about a minute (expected)


GPU = CheckSettings(
    name="gpu",
    device="cuda",
    static_scales=None,
    static_seeds=None,
    static_steps=None,
    transformer=("model=minilm", "model.reinit=true"),
    scales=DEFAULT_GRID,
    steps=100,
    eval_steps=50,
    packs=(1, 4, 8),
)
REHEARSAL = CheckSettings(
    name="rehearsal",
    device="cpu",
    static_scales=(5.0, 20.0),  # two: the floor ratio reads the trials after the first of the process
    static_seeds=(0,),
    static_steps=6,
    transformer=("model=tiny_bert",),
    scales=(5.0, 20.0),
    steps=2,
    eval_steps=2,
    packs=(1, 2),
    data=("data.train.max_samples=1024", "data.validation.max_samples=200", "data.test.max_samples=200"),
    budget_s=900.0,  # a CPU shared with other work can be many times slower than a quiet one
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the files (created)")
    parser.add_argument(
        "--reference-trials",
        type=Path,
        required=True,
        help="trials.csv of the default study run elsewhere (columns loss.scale, trial.seed, stsb_validation_spearman)",
    )
    parser.add_argument("--static-model", default=MINILM, help="base of the static model (hub name or folder)")
    parser.add_argument(
        "--transformer-model", default=MINILM, help="the transformer's architecture and tokenizer (weights unused)"
    )
    parser.add_argument("--data-dir", default=os.environ.get("SWEEP_DATA_DIR"), help="folder holding nli/ and stsb/")
    parser.add_argument("--tolerance", type=float, default=0.005, help="largest Spearman difference taken as equal")
    parser.add_argument("--budget-s", type=float, default=None, help="seconds after which no section starts")
    parser.add_argument("--rehearsal", action="store_true", help="the CPU rehearsal: tiny settings, device cpu")
    return parser.parse_args(argv)


def refuse(message: str) -> None:
    """A one-line error before any work, exit 2."""
    print(f"gpu_check: {message}", file=sys.stderr)
    raise SystemExit(2)


def check_inputs(args: argparse.Namespace) -> pd.DataFrame:
    """The reference trials, after checking every input: refuses with one line naming the option and the fix."""
    import torch

    if not args.rehearsal and not torch.cuda.is_available():
        refuse("no CUDA device (torch.cuda.is_available() is False): run it on a GPU, or add --rehearsal")
    if not args.data_dir or not all(Path(args.data_dir, f).is_file() for f in ("nli/triplet.csv", "stsb/test.csv")):
        refuse(f"--data-dir {args.data_dir!r} holds no nli/triplet.csv and stsb/test.csv: pass the data folder")
    if not args.reference_trials.is_file():
        refuse(f"--reference-trials {args.reference_trials}: no such file; pass the default study's trials.csv")
    try:
        return read_reference(args.reference_trials)
    except KeyError as error:
        refuse(f"--reference-trials {args.reference_trials} has no column {error}: pass a study's trials.csv")
        raise  # unreachable: refuse exits


def release_device_memory() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


@contextmanager
def removed(folder: Path) -> Iterator[None]:
    """Remove `folder` (the studies' databases) on the way out, whatever happened."""
    try:
        yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the check; returns what machine.json holds."""
    args = parse_args(argv)
    s = REHEARSAL if args.rehearsal else GPU
    budget = args.budget_s or s.budget_s
    reference = check_inputs(args)
    args.out.mkdir(parents=True, exist_ok=True)
    quiet_libraries()
    start = time.perf_counter()
    record: dict[str, Any] = {"settings": asdict(s), "budget_s": budget, "tolerance": args.tolerance, "sections": {}}
    record["machine"] = machine()
    work = Path(tempfile.mkdtemp(prefix="sweep_gpu_check_"))
    common = [f"trial.device={s.device}", "stats.enabled=false", *s.data]
    runs: dict[str, StudyRun] = {}

    def timeout() -> int:
        return int(max(120.0, budget - (time.perf_counter() - start) + 120))

    static_scales = s.static_scales or tuple(sorted(reference.scale.unique()))
    static_seeds = s.static_seeds or tuple(sorted(reference.seed.unique()))
    static_trial = [
        f"model.name_or_path={args.static_model}",
        "trial.precision=fp32",
        *([f"trial.max_steps={s.static_steps}", f"trial.eval_steps={s.static_steps}"] if s.static_steps else []),
        *common,
    ]
    seeds = "study.seeds=[" + ",".join(map(str, static_seeds)) + "]"
    static = [*static_trial, grid_override(static_scales), seeds]
    transformer = [
        *s.transformer,
        f"model.name_or_path={args.transformer_model}",
        grid_override(s.scales),
        f"trial.max_steps={s.steps}",
        f"trial.eval_steps={s.eval_steps}",
        *common,
    ]

    def study(label: str, overrides: Sequence[str]) -> Callable[[], None]:
        def go() -> None:
            runs[label] = run_study(work, label, overrides, args.data_dir, timeout())

        return go

    def floors() -> None:
        low = [*transformer, f"trial.precision={s.low_precision}"]
        record["floor_s"] = {
            "transformer": statistics.median(bare_loop(low, args.data_dir, scale) for scale in s.scales[:2]),
            "static": statistics.median(bare_loop(static_trial, args.data_dir, sc) for sc in static_scales[-2:]),
        }
        release_device_memory()  # the studies after it run in their own processes

    sections: list[tuple[str, Callable[[], None]]] = [("static_fp32", study("static_fp32", static))]
    for pack in s.packs:
        label = f"{s.low_precision}_pack{pack}"
        overrides = [*transformer, f"trial.precision={s.low_precision}", f"study.pack={pack}"]
        sections.append((label, study(label, overrides)))
        if pack == s.packs[0]:
            sections.append(("floor", floors))
    sections.append(("fp32_pack1", study("fp32_pack1", [*transformer, "trial.precision=fp32", "study.pack=1"])))

    with Sampler(args.out / "samples.csv") as sampler, removed(work):
        for name, section in sections:
            elapsed = time.perf_counter() - start
            if elapsed > budget:
                record["sections"][name] = f"skipped: {elapsed:.0f} s of the {budget:.0f} s budget spent"
                continue
            sampler.section = name
            print(f"[{elapsed:5.0f} s] {name}", flush=True)
            try:
                section()
                record["sections"][name] = round(time.perf_counter() - start - elapsed, 1)
            except Exception as error:  # noqa: BLE001 - a failed section is reported; the others still run
                record["sections"][name] = f"failed: {type(error).__name__}: {str(error)[-1500:]}"
    record["elapsed_s"] = round(time.perf_counter() - start, 1)
    write_files(args.out, s, runs, reference, record, args.tolerance)
    return record


def write_files(
    out: Path,
    s: CheckSettings,
    runs: dict[str, StudyRun],
    reference: pd.DataFrame,
    record: dict[str, Any],
    tolerance: float,
) -> None:
    """The CSVs of whatever ran, machine.json and README.md."""
    tables: dict[str, pd.DataFrame] = {}
    if "static_fp32" in runs:
        tables["static_grid"] = against_reference(runs["static_fp32"], reference, tolerance)
    transformer_runs = [runs[k] for k in [f"{s.low_precision}_pack{p}" for p in s.packs] + ["fp32_pack1"] if k in runs]
    if transformer_runs:
        tables["transformer_grid"] = between_runs(transformer_runs, tolerance)
    alone = runs.get(f"{s.low_precision}_pack{s.packs[0]}")
    floor_s = record.get("floor_s", {})
    framework = {"transformer": alone, "static": runs.get("static_fp32")}
    floor_rows = [
        (model, floor_s[model], run.later_trial_seconds(), run.later_trial_seconds() / floor_s[model])
        for model, run in framework.items()
        if run is not None and model in floor_s
    ]
    if floor_rows:
        tables["floor"] = pd.DataFrame(floor_rows, columns=["model", "floor_s", "framework_s", "framework_over_floor"])
    if alone is not None and "fp32_pack1" in runs:
        low = f"_{s.low_precision}"
        precision = alone.trials.merge(runs["fp32_pack1"].trials, on=["scale", "seed"], suffixes=(low, "_fp32"))
        precision["difference"] = precision[f"spearman{low}"] - precision.spearman_fp32
        tables["precision"] = precision
    for name, table in tables.items():
        table.to_csv(out / f"{name}.csv", index=False)
    (out / "machine.json").write_text(json.dumps(record, indent=1, default=str))
    (out / "README.md").write_text(render(s.name, s.packs, s.low_precision, tables, record, tolerance))
    print((out / "README.md").read_text())


if __name__ == "__main__":
    main()

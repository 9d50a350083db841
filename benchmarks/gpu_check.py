"""The GPU checks in one run: `python -m benchmarks.gpu_check --out DIR --reference-trials TRIALS_CSV`.

Writes at most 7 files to DIR (a time budget, `--budget-s`, skips the sections it leaves no time for):
  machine.json         the host, torch/CUDA versions, `nvidia-smi`, the settings and each section's seconds or error
  samples.csv          GPU utilisation and memory (nvidia-smi) and the host's load average each second, by section
  static_grid.csv      the default study (`+experiment=mnrl_scale`, static model, fp32) on the device, one trial at
                       a time (run `static_fp32`) and through the product's fused packs (`static_pack`:
                       `study.pack=9`): each (scale, seed)'s Spearman beside the reference study's
                       (`--reference-trials`) and the one-at-a-time trial's, seconds per trial, the run's span
  static_fused.csv     the same trials trained as fused packs (`sweep.training.FusedStaticPack`, one per seed) and
                       scored as a trial is: each member's Spearman beside the reference's, the one-at-a-time
                       trial's and the fused floor's, and its start and end (the section's span: first start to last
                       end)
  transformer_grid.csv a short transformer grid (random weights: `model.reinit=true`) one trial at a time, packed
                       (`study.pack`) and by worker processes sharing the device (`study.n_workers`), in bf16, and
                       one at a time in fp32: Spearman, seconds and trials per hour of each run (bf16 against fp32 on
                       the same trials: its runs bf16_pack1 and fp32_pack1)
  floor.csv            framework / floor: a trial one at a time against the bare torch loop of the same steps
                       (`benchmarks.packing.bare_loop`), and the fused study against the bare fused loop of the same
                       steps and evaluations (the `fused_floor` section)
  README.md            the numbers against the goals (packed >= 3x trials per hour, framework / floor <= 1.1; the
                       fused study's 27 trials in <= 10 s, by `FusedStaticPack` and by the product's packs; fused /
                       fused floor <= 1.2; the same Spearman within the tolerance; GPU utilisation per section)
A lent machine brings back at most 8 files: these 7 and the kit's log.

GPU kernels sum in other orders than CPU ones (cuBLAS's tiled matrix products, atomic adds in the embedding
backward), so the same trial's floats differ at about 1e-7 relative per operation, and the differences grow over the
trained steps: a trial's Spearman on the GPU is compared within `--tolerance` (0.005 by default: about what changing
the seed moves a short trial's Spearman by, so smaller differences change no conclusion the seeds allow), not for
equality. Packed members train on CUDA
streams in lockstep, which reorders kernels too, hence the same tolerance between packed and one-at-a-time trials.

`--rehearsal` runs the same code on the CPU with tiny settings (two reference trials cut to 6 steps, so not comparable
with the reference, but the fused section trains the same two, so its members are comparable with them; a 2-layer
32-dim transformer; packs of 1 and 2; 200 STSB pairs) in a few minutes on a quiet 2-core machine: it checks the
script, not the GPU.
"""

from __future__ import annotations

import argparse
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

from benchmarks.gpu_fused import FusedStudy
from benchmarks.gpu_measure import (
    Sampler,
    StudyRun,
    machine,
    read_reference,
    run_study,
)
from benchmarks.gpu_report import write_files
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
    workers: int  # worker processes sharing the device, one trial at a time each (`study.n_workers`)
    static_pack: int = 9  # the default study through the product's fused packs (`study.pack`, `study.fuse=true`)
    low_precision: str = "bf16"
    data: tuple[str, ...] = ()  # data overrides of every study (the rehearsal's subsets)
    budget_s: float = 300.0  # no section starts after it: about 8 min in all on an H200 (a section can take 140 s)


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
    workers=8,
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
    workers=2,
    static_pack=2,
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

    fused = FusedStudy(static_trial, args.data_dir, static_scales, static_seeds, work)

    def fused_floor() -> None:
        try:
            fused.floor()
        finally:
            fused.release()  # the static fused models and batches, off the device
            release_device_memory()

    sections: list[tuple[str, Callable[[], None]]] = [
        ("static_fp32", study("static_fp32", static)),
        ("static_fused", fused.run),
        ("fused_floor", fused_floor),
        ("static_pack", study("static_pack", [*static, f"study.pack={s.static_pack}", "study.fuse=true"])),
    ]
    for pack in s.packs:
        label = f"{s.low_precision}_pack{pack}"
        overrides = [*transformer, f"trial.precision={s.low_precision}", f"study.pack={pack}"]
        sections.append((label, study(label, overrides)))
        if pack == s.packs[0]:
            sections.append(("floor", floors))
    label = f"{s.low_precision}_workers{s.workers}"
    overrides = [*transformer, f"trial.precision={s.low_precision}", "study.pack=1", f"study.n_workers={s.workers}"]
    sections.append((label, study(label, overrides)))
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
    write_files(args.out, s, runs, fused, reference, record, args.tolerance)
    return record


if __name__ == "__main__":
    main()

"""Benchmark of the framework against plain sentence-transformers code, in ONE run, as ratios.

    python -m sweep.bench [--quick] [--out results/bench] [--data-dir DIR] [--keep-runs] [--only 1,2,3,...]

Every measurement is a ratio against a baseline measured in the same run (so that a slow or busy machine
cancels out), reported as median [min, max] over repeats (and scales). The markdown table, the machine
description and the raw numbers go to `<out>/README.md` and `<out>/bench.json`; the table is printed.

Rows (see `ITEMS`):
  1  baseline: `sweep/bench/plain_st.py` (plain sentence-transformers, no `sweep` import), one process per scale
  2  per-trial overhead: framework trial wall time / baseline trial time, same steps and evaluations,
     with the similarity statistics disabled and enabled; and trainer time / trainer time
  3  whole sweep: one `python -m sweep` process over N scales / the sum of N baseline processes
  4  pruning: training steps of a pruned study / steps of the full grid, to find the same best scale
  5  layer x dim grid evaluation (`sweep.layer_grid`) / one full-model STSB evaluation; naive per-layer re-encoding
  6  evaluation speed: the project's STSB evaluator / `model.encode` with default settings (sentences/s)
  7  GPU: skipped when there is none

`--quick` shrinks steps, scales and repeats so that the whole run takes a couple of minutes: it checks that
the benchmark works; its ratios are dominated by fixed costs and say little about the full mode.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
PLAIN_ST = REPO_ROOT / "sweep" / "bench" / "plain_st.py"
DEFAULT_OUT = REPO_ROOT / "results" / "bench"
DEFAULT_DATA_DIR = os.environ.get("SWEEP_DATA_DIR") or str(REPO_ROOT.parent / "shared" / "data")
STUDY = "bench"
VALIDATION_METRIC = "stsb_validation_spearman"


# ----------------------------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class PruneVariant:
    """One pruned study compared with the full grid."""

    label: str
    pruner: str  # median | successive_halving | hyperband
    order: str  # ascending (the grid as written) | shuffled (the grid in a seeded random order) | tpe | random
    sampler: str = "grid"


@dataclass(frozen=True)
class Settings:
    """Sizes of one benchmark run. `QUICK` checks the code; `FULL` is the measurement (<= 15 min on 2 cores)."""

    name: str
    scales: tuple[float, ...]  # items 1-3
    steps: int
    eval_steps: int
    repeats: int  # of the sweeps of items 1-3
    prune_scales: tuple[float, ...]  # item 4
    prune_steps: int
    prune_eval_steps: int
    prune_variants: tuple[PruneVariant, ...]
    layer_pairs: int | None  # item 5: STSB validation pairs (None: all 1500)
    layers: tuple[int, ...]
    dims: tuple[int, ...]
    layer_repeats: int
    encode_pairs: int | None  # item 6
    encode_repeats: int
    timeout_s: int = 900  # per subprocess


PRUNE_VARIANTS = (
    PruneVariant(
        "median, grid listed as in the experiment (the study queues it in a seeded shuffle)", "median", "ascending"
    ),
    PruneVariant(
        "successive halving, grid listed as in the experiment (same queue order)", "successive_halving", "ascending"
    ),
    PruneVariant(
        "successive halving, grid listed shuffled (queued in another seeded shuffle)", "successive_halving", "shuffled"
    ),
    PruneVariant("median, TPE over the scales as a categorical", "median", "tpe", sampler="tpe"),
)
# sweep/conf/experiment/mnrl_scale.yaml's grid without its scale-0 control, which sentence-transformers' MNRL refuses
# ("Scale must be a positive value"), so the plain baseline cannot run it
DEFAULT_GRID = (1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 50.0)

QUICK = Settings(
    name="quick",
    scales=(5.0, 20.0),
    steps=20,
    eval_steps=10,
    repeats=1,
    prune_scales=(1.0, 5.0, 20.0, 50.0),
    prune_steps=12,
    prune_eval_steps=4,
    prune_variants=(PRUNE_VARIANTS[3],),  # the categorical (non-grid) path; the reference runs the grid path
    layer_pairs=100,
    layers=(1, 2, 3),
    dims=(384, 128),
    layer_repeats=1,
    encode_pairs=200,
    encode_repeats=1,
)

# Items 1-3 run the default sweep's grid (mnrl_scale's 8 positive scales) once, at half its steps; item 4 prunes the same
# grid at the same settings, so item 3's full framework sweep (statistics off) is its reference.
FULL = Settings(
    name="full",
    scales=DEFAULT_GRID,
    steps=150,
    eval_steps=25,
    repeats=1,
    prune_scales=DEFAULT_GRID,
    prune_steps=150,
    prune_eval_steps=25,
    prune_variants=PRUNE_VARIANTS,
    layer_pairs=750,
    layers=(1, 2, 3),
    dims=(384, 256, 128, 64),
    layer_repeats=3,
    encode_pairs=750,
    encode_repeats=3,
)

# Rough costs on a quiet 2-core machine (seconds), for the printed estimate only: a process's fixed cost
# (interpreter, imports, loading; the framework also creates its Optuna and MLflow databases), a training step,
# an STSB validation evaluation of the static model, the statistics of one trial, and MiniLM-3-layer encoding.
COST = {
    "baseline_process": 7.0,
    "framework_process": 15.0,
    "step": 0.07,
    "eval": 0.4,
    "stats": 3.0,
    "minilm_sentence": 1 / 600,
}


def expected_seconds(s: Settings) -> float:
    """A rough duration of a run with settings `s` on a quiet 2-core machine."""

    def trial(steps: int, eval_steps: int) -> float:
        return COST["step"] * steps + COST["eval"] * (steps // eval_steps + 3)

    baseline = len(s.scales) * (COST["baseline_process"] + trial(s.steps, s.eval_steps))
    framework = 2 * COST["framework_process"] + len(s.scales) * (2 * trial(s.steps, s.eval_steps) + COST["stats"])
    reference = 0 if reuses_sweep(s) else 1
    pruning = (reference + 0.5 * len(s.prune_variants)) * (
        COST["framework_process"] + len(s.prune_scales) * trial(s.prune_steps, s.prune_eval_steps)
    )
    layer_sentences = 2 * (s.layer_pairs or 1500)
    layer = (s.layer_repeats + 1) * layer_sentences * COST["minilm_sentence"] * (
        1 + 1.2 + sum(s.layers) / max(s.layers)
    ) + 10
    encode_sentences = 2 * (s.encode_pairs or 1500)
    encode = (s.encode_repeats + 1) * encode_sentences * COST["minilm_sentence"] * 3 + 10
    return s.repeats * (baseline + framework) + pruning + layer + encode


# ----------------------------------------------------------------------------------------------- table


@dataclass(frozen=True)
class Stat:
    """Repeated measurements of one quantity."""

    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat:
        return cls(tuple(float(v) for v in values))

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def fmt(self, unit: str = "", digits: int = 2) -> str:
        if not self.values:
            return "-"
        number = f"{{:.{digits}f}}"
        text = number.format(self.median) + (f" {unit}" if unit else "")
        if len(self.values) > 1:
            text += f" [{number.format(min(self.values))}, {number.format(max(self.values))}]"
        return text


@dataclass
class Row:
    """One line of the result table: a framework quantity, its baseline, and their ratio (median [min, max])."""

    item: str
    measurement: str
    framework: str
    baseline: str
    ratio: Stat | None
    goal: str  # "<= 1.05", ">= 1", or "" (informational)
    note: str = ""
    status: str | None = None  # forces the verdict ("skipped", "not met", ...)

    @property
    def verdict(self) -> str:
        if self.status is not None:
            return self.status
        if self.ratio is None or not self.ratio.values or not self.goal:
            return "info"
        op, bound = self.goal.split()
        value = self.ratio.median
        return "met" if (value <= float(bound) if op == "<=" else value >= float(bound)) else "not met"


COLUMNS = ("#", "measurement", "framework", "baseline", "ratio: median [min, max]", "goal", "verdict", "n", "notes")


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: Sequence[Row]) -> str:
    """The result rows as a GitHub markdown table with the ratio columns."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for r in rows:
        ratio = r.ratio.fmt(digits=3) if r.ratio is not None else "-"
        n = len(r.ratio.values) if r.ratio is not None else 0
        cells = (r.item, r.measurement, r.framework, r.baseline, ratio, r.goal or "-", r.verdict, n, r.note)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def machine_description() -> dict[str, Any]:
    """CPU model, cores, memory, load, library versions and the date."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = "unknown"
    try:
        kib = int(
            next(
                line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")
            ).split()[1]
        )
        memory = f"{kib / 2**20:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    versions = {}
    for package in ("torch", "sentence-transformers", "transformers", "optuna", "mlflow"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory": memory,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        **versions,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def render_report(
    rows: Sequence[Row], machine: dict[str, Any], settings: Settings, elapsed_s: float, details: Sequence[str] = ()
) -> str:
    """The README: what was run, on what, the table and the details."""
    described = ", ".join(f"{k} {v}" for k, v in machine.items())
    lines = [
        "# Benchmark: sweep vs plain sentence-transformers",
        "",
        f"Command: `python -m sweep.bench{' --quick' if settings.name == 'quick' else ''}` ({settings.name} mode, {elapsed_s / 60:.1f} min).",
        "",
        f"Machine: {described}.",
        "",
        f"Settings: scales {list(settings.scales)}, {settings.steps} steps, eval every {settings.eval_steps}, {settings.repeats} repeat(s); "
        f"pruning over {list(settings.prune_scales)} at {settings.prune_steps} steps, eval every {settings.prune_eval_steps}; "
        f"layer grid layers {list(settings.layers)} x dims {list(settings.dims)}, {settings.layer_repeats} repeat(s).",
        "",
    ]
    if settings.name == "quick":
        lines += [
            "**Quick mode**: tiny step counts and one repeat, to check that the benchmark runs. The ratios are dominated by",
            "fixed costs and by other load on the machine; use the full mode for numbers.",
            "",
        ]
    lines += [
        f"A full run is expected to take about {expected_seconds(FULL) / 60:.0f} min on a quiet 2-core machine.",
        "",
        "Ratios are framework / baseline (for throughput: framework / baseline sentences per second), each pair measured",
        "in this run; median [min, max] over repeats x scales (n). Times are wall-clock seconds.",
        "",
        markdown_table(rows),
        "",
    ]
    if details:
        lines += ["## Details", "", *details, ""]
    lines += ["## What each row measures", "", *ROW_DESCRIPTIONS, ""]
    return "\n".join(lines)


ROW_DESCRIPTIONS = (
    "1. **Baseline**: `sweep/bench/plain_st.py --scale S` (plain sentence-transformers, no `sweep` import), one process per scale, "
    "wall time of the whole process measured from outside (interpreter start, imports, loading, training, evaluations).",
    "2. **Per-trial overhead**: a framework trial's wall time (Optuna user attribute `wall_time_s` = MLflow `trial_wall_time_s`) / "
    "the baseline's in-process trial time at the same scale, steps and evaluations (initial validation, every eval step, "
    "final validation, test), paired by scale and repeat. The framework's first trial of a process also loads the data "
    "and builds the base model, so its baseline adds the baseline's loading time. Reported with the similarity statistics "
    "disabled and enabled (`stats.enabled`), and for the trainer alone (`train_seconds`).",
    "3. **Whole sweep**: one `python -m sweep` process over all scales / the sum of the baseline processes, per repeat.",
    "4. **Pruning**: training steps actually trained (sum over trials of the last `stsb_validation_spearman` step in MLflow) "
    "by a pruned study / by the full grid without pruner (item 3's framework sweep with statistics off when the grid and "
    "schedule are the same), with the condition that the pruned study's best complete trial "
    "is within one grid point of the grid's best scale and within 0.005 Spearman. A grid runs its points in queue order, "
    "a seeded shuffle of the listed grid (the notes give the order actually run), so two orders, two pruners and a TPE "
    "sampler over the same values are measured. Pruners compare the validation Spearman reported at every evaluation "
    "(Optuna steps = training steps); successive halving's first rung is the first evaluation.",
    "5. **Layer x dim grid**: `sweep.layer_grid.layer_dim_spearman` on MiniLM cut to a few layers / one full-model STSB "
    "evaluation with the project's evaluator; also the naive way (re-encode once per layer with `model.encode`). "
    "The grid's Spearman values are checked against the naive ones.",
    "6. **Evaluation speed**: sentences per second of the project's STSB evaluator (`sweep.trial.stsb_evaluator`, "
    "trial eval batch size, including the Spearman) / `model.encode` with default settings (batch 32). Warm: the "
    "evaluated model's `preprocess` goes through the study's tokenization cache filled by an earlier evaluation (every "
    "evaluation of a study after its first); cold: a plain model (a study's first evaluation).",
    "7. **GPU**: needs a GPU; skipped otherwise.",
)


# ----------------------------------------------------------------------------------------------- processes


def subprocess_env(data_dir: str) -> dict[str, str]:
    """The same environment for the baseline and the framework: local data, no inherited tracking URI."""
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "SWEEP_HOME")}
    env.update(SWEEP_DATA_DIR=data_dir, TOKENIZERS_PARALLELISM="false", PYTHONWARNINGS="ignore")
    return env


@dataclass
class BaselineRun:
    """One `sweep/bench/plain_st.py` process."""

    scale: float
    process_wall_s: float  # measured from outside: interpreter start, imports, loading, training, evaluations
    result: dict[str, Any]  # its JSON line (train_s, trial_s, load_s, spearman values)


def run_baseline(scale: float, steps: int, eval_steps: int, data_dir: str, timeout_s: int) -> BaselineRun:
    command = [
        sys.executable,
        str(PLAIN_ST),
        "--scale",
        f"{scale:g}",
        "--steps",
        str(steps),
        "--eval-steps",
        str(eval_steps),
        "--data-dir",
        data_dir,
    ]
    start = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, env=subprocess_env(data_dir), timeout=timeout_s, cwd=REPO_ROOT
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"baseline failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-3000:]}")
    line = next(line for line in reversed(done.stdout.splitlines()) if line.startswith("{"))
    return BaselineRun(scale, wall, json.loads(line))


@dataclass
class FrameworkTrial:
    number: int
    scale: float
    state: str
    value: float | None
    wall_s: float | None  # Optuna user attr wall_time_s (= MLflow trial_wall_time_s)
    train_s: float | None  # user attr train_seconds (trainer construction + train), complete trials only
    steps: int | None  # last step of stsb_validation_spearman in MLflow (= steps actually trained)
    first_in_process: bool  # the trial that also loaded the data and built the base model


@dataclass
class FrameworkSweep:
    """One `python -m sweep` process and its trials, read back from Optuna and MLflow."""

    wall_s: float
    trials: list[FrameworkTrial]
    command: list[str]

    def complete(self) -> list[FrameworkTrial]:
        return [t for t in self.trials if t.state == "COMPLETE"]

    def best(self) -> FrameworkTrial | None:
        done = self.complete()
        return max(done, key=lambda t: t.value) if done else None


def grid_override(scales: Sequence[float]) -> str:
    return "study.search_space.loss.scale=[" + ",".join(f"{s:g}" for s in scales) + "]"


def categorical_overrides(scales: Sequence[float]) -> list[str]:
    """The same scale values as a categorical distribution (a TPE/random study instead of a grid)."""
    choices = ",".join(f"{s:g}" for s in scales)
    return [
        "~study.search_space.loss.scale",
        f"+study.search_space.loss.scale={{type:categorical,choices:[{choices}]}}",
        f"study.n_trials={len(scales)}",
    ]


def run_framework(root: Path, overrides: Sequence[str], data_dir: str, timeout_s: int) -> FrameworkSweep:
    """Run one study in a fresh state folder `root` and read its trials back."""
    command = [
        sys.executable,
        "-m",
        "sweep",
        "+experiment=mnrl_scale",
        f"name={STUDY}",
        f"paths.root={root}",
        f"data.local_dir={data_dir}",
        "quiet=true",
        *overrides,
    ]
    root.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, env=subprocess_env(data_dir), timeout=timeout_s, cwd=REPO_ROOT
    )
    wall = time.perf_counter() - start
    (root / "stdout.txt").write_text(done.stdout)
    (root / "stderr.txt").write_text(done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"framework failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-3000:]}")
    return FrameworkSweep(wall, read_trials(root), command)


def read_trials(root: Path) -> list[FrameworkTrial]:
    """Trials of the study under `root`: Optuna user attributes, and the steps trained from MLflow."""
    import optuna
    from mlflow.tracking import MlflowClient

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{root}/optuna.db")
    client = MlflowClient(f"sqlite:///{root}/mlflow.db")
    trials = [
        t
        for t in study.get_trials(deepcopy=False)
        if t.state.name in ("COMPLETE", "PRUNED") and not t.user_attrs.get("sweep.discarded")
    ]
    first = min((t.number for t in trials), default=-1)
    out = []
    for t in trials:
        run_id = t.user_attrs.get("mlflow_run_id")
        history = client.get_metric_history(run_id, VALIDATION_METRIC) if run_id else []
        out.append(
            FrameworkTrial(
                number=t.number,
                scale=float(t.user_attrs.get("scale", t.params.get("loss.scale", float("nan")))),
                state=t.state.name,
                value=t.value,
                wall_s=t.user_attrs.get("wall_time_s"),
                train_s=t.user_attrs.get("train_seconds"),
                steps=max((m.step for m in history), default=None),
                first_in_process=t.number == first,
            )
        )
    return sorted(out, key=lambda t: t.number)


# ----------------------------------------------------------------------------------------------- items 1-3


@dataclass
class SweepMeasurements:
    """Items 1-3: per repeat, the baseline processes and the framework sweeps (statistics off and on)."""

    baseline: list[list[BaselineRun]] = field(default_factory=list)
    framework_off: list[FrameworkSweep] = field(default_factory=list)
    framework_on: list[FrameworkSweep] = field(default_factory=list)


def measure_sweeps(s: Settings, data_dir: str, work: Path, log: Callable[[str], None]) -> SweepMeasurements:
    """Interleaved repeats (baseline, framework without statistics, framework with statistics), so that drift in
    the machine's load hits all three alike."""
    m = SweepMeasurements()
    common = [grid_override(s.scales), f"trial.max_steps={s.steps}", f"trial.eval_steps={s.eval_steps}"]
    for r in range(s.repeats):
        runs = []
        for scale in s.scales:
            runs.append(run_baseline(scale, s.steps, s.eval_steps, data_dir, s.timeout_s))
            log(f"  repeat {r + 1}: baseline scale {scale:g}: {runs[-1].process_wall_s:.1f} s")
        m.baseline.append(runs)
        m.framework_off.append(
            run_framework(work / f"sweep_off_{r}", [*common, "stats.enabled=false"], data_dir, s.timeout_s)
        )
        log(f"  repeat {r + 1}: framework, statistics off: {m.framework_off[-1].wall_s:.1f} s")
        m.framework_on.append(
            run_framework(work / f"sweep_on_{r}", [*common, "stats.enabled=true"], data_dir, s.timeout_s)
        )
        log(f"  repeat {r + 1}: framework, statistics on: {m.framework_on[-1].wall_s:.1f} s")
    return m


def baseline_rows(m: SweepMeasurements) -> list[Row]:
    """Item 1: what one baseline process costs, split into its parts."""
    runs = [run for rep in m.baseline for run in rep]
    part = lambda key: Stat.of([run.result[key] for run in runs])  # noqa: E731
    walls = Stat.of([run.process_wall_s for run in runs])
    note = f"imports {part('import_s').fmt('s', 1)}, loading {part('load_s').fmt('s', 1)}, trainer {part('train_s').fmt('s', 1)}, trial {part('trial_s').fmt('s', 1)}"
    return [
        Row(
            "1",
            "baseline: one `sweep/bench/plain_st.py` process per scale (process wall time)",
            "-",
            walls.fmt("s", 1),
            None,
            "",
            note,
            status="reference",
        )
    ]


def _pairs(m: SweepMeasurements, sweeps: list[FrameworkSweep]) -> list[tuple[FrameworkTrial, BaselineRun]]:
    pairs = []
    for rep, sweep in zip(m.baseline, sweeps, strict=True):
        by_scale = {run.scale: run for run in rep}
        pairs += [(t, by_scale[t.scale]) for t in sweep.complete() if t.scale in by_scale]
    return pairs


def trial_overhead_rows(m: SweepMeasurements) -> list[Row]:
    """Item 2: framework trial wall time / baseline trial time at the same scale, steps and evaluations.

    The baseline's trial time is everything after imports and loading (initial evaluation, trainer, final
    validation, test); the framework's first trial in a process also loads the data and builds the base model,
    so its baseline is trial_s + load_s."""
    rows = []
    for label, sweeps in (("statistics disabled", m.framework_off), ("statistics enabled", m.framework_on)):
        pairs = _pairs(m, sweeps)
        fw = [t.wall_s for t, _ in pairs]
        base = [b.result["trial_s"] + (b.result["load_s"] if t.first_in_process else 0.0) for t, b in pairs]
        later = [t.wall_s / b.result["trial_s"] for t, b in pairs if not t.first_in_process]
        note = f"trials after the first: {Stat.of(later).fmt(digits=3)}" if later else ""
        rows.append(
            Row(
                "2",
                f"per-trial wall time, {label}",
                Stat.of(fw).fmt("s", 2),
                Stat.of(base).fmt("s", 2),
                Stat.of([f / b for f, b in zip(fw, base, strict=True)]),
                "<= 1.05",
                note,
            )
        )
    pairs = _pairs(m, m.framework_off)
    fw = [t.train_s for t, _ in pairs]
    base = [b.result["train_s"] for _, b in pairs]
    rows.append(
        Row(
            "2",
            "trainer time only (construction + train), statistics disabled",
            Stat.of(fw).fmt("s", 2),
            Stat.of(base).fmt("s", 2),
            Stat.of([f / b for f, b in zip(fw, base, strict=True)]),
            "<= 1.05",
            "MLflow `train_seconds` vs the baseline's train_s",
        )
    )
    return rows


def whole_sweep_rows(m: SweepMeasurements) -> list[Row]:
    """Item 3: one framework process over all scales / the sum of the baseline processes, per repeat."""
    rows = []
    base = [sum(run.process_wall_s for run in rep) for rep in m.baseline]
    for label, sweeps in (("statistics disabled", m.framework_off), ("statistics enabled", m.framework_on)):
        fw = [sweep.wall_s for sweep in sweeps]
        rows.append(
            Row(
                "3",
                f"whole sweep of {len(m.baseline[0])} scales, {label} (process wall time)",
                Stat.of(fw).fmt("s", 1),
                Stat.of(base).fmt("s", 1),
                Stat.of([f / b for f, b in zip(fw, base, strict=True)]),
                "<= 0.75",
                "baseline: sum of one process per scale",
            )
        )
    return rows


def agreement_details(m: SweepMeasurements) -> list[str]:
    """The baseline and the framework (statistics off: same training data) should give the same Spearman."""
    diffs = [abs(t.value - b.result["stsb_validation_spearman"]) for t, b in _pairs(m, m.framework_off)]
    lines = [
        f"- Same result check: |framework - baseline| STSB validation Spearman, statistics off, max over {len(diffs)} trials: {max(diffs, default=float('nan')):.2e}."
    ]
    first = [t.wall_s for s in m.framework_off for t in s.trials if t.first_in_process]
    if first:
        lines.append(
            f"- Framework first trial of a process (includes data loading and model building), statistics off: {Stat.of(first).fmt('s')}."
        )
    outside = [s.wall_s - sum(t.wall_s for t in s.trials) for s in m.framework_off + m.framework_on]
    base_outside = [run.process_wall_s - run.result["trial_s"] for rep in m.baseline for run in rep]
    lines.append(
        f"- Fixed cost per process (wall time outside the trials: interpreter, imports, Hydra, Optuna and MLflow databases, final table): "
        f"framework {Stat.of(outside).fmt('s', 1)}; baseline (interpreter, imports, loading) {Stat.of(base_outside).fmt('s', 1)}."
    )
    stats_cost = []
    for off, on in zip(m.framework_off, m.framework_on, strict=True):
        walls = {t.scale: t.wall_s for t in off.complete() if not t.first_in_process}
        stats_cost += [t.wall_s - walls[t.scale] for t in on.complete() if t.scale in walls]
    if stats_cost:
        lines.append(
            f"- Cost of the statistics per trial (statistics-on minus statistics-off trial wall time, same scale, trials after the first): {Stat.of(stats_cost).fmt('s')}."
        )
    return lines


# ----------------------------------------------------------------------------------------------- item 4


@dataclass
class PruneResult:
    variant: PruneVariant | None  # None: the full grid
    sweep: FrameworkSweep

    @property
    def steps(self) -> int:
        return sum(t.steps or 0 for t in self.sweep.trials)


def prune_overrides(s: Settings, variant: PruneVariant | None) -> list[str]:
    common = [f"trial.max_steps={s.prune_steps}", f"trial.eval_steps={s.prune_eval_steps}", "stats.enabled=false"]
    if variant is None:
        return [grid_override(s.prune_scales), *common, "study.pruner.name=none"]
    pruner = [
        f"study.pruner.name={variant.pruner}",
        "study.pruner.n_startup_trials=2",
        "study.pruner.n_warmup_steps=0",
        # Optuna steps are training steps (the trial reports at global_step), so the first rung is the first evaluation.
        f"study.pruner.min_resource={s.prune_eval_steps}",
    ]
    if variant.sampler == "grid":
        scales = list(s.prune_scales)
        if variant.order == "shuffled":
            random.Random(0).shuffle(scales)
        return [grid_override(scales), *common, *pruner]
    return [*categorical_overrides(s.prune_scales), f"study.sampler.name={variant.sampler}", *common, *pruner]


def reuses_sweep(s: Settings) -> bool:
    """Whether item 3's framework sweep (statistics off) is item 4's full-grid reference: same grid and schedule."""
    return (s.scales, s.steps, s.eval_steps) == (s.prune_scales, s.prune_steps, s.prune_eval_steps)


def measure_pruning(
    s: Settings, data_dir: str, work: Path, log: Callable[[str], None], reference: FrameworkSweep | None = None
) -> list[PruneResult]:
    """The full grid without pruner (``reference``, or run here), then each pruned variant."""
    if reference is None:
        reference = run_framework(work / "prune_grid", prune_overrides(s, None), data_dir, s.timeout_s)
        log(f"  full grid: {reference.wall_s:.1f} s")
    results = [PruneResult(None, reference)]
    log(f"  full grid: {results[0].steps} steps")
    for i, variant in enumerate(s.prune_variants):
        results.append(
            PruneResult(variant, run_framework(work / f"prune_{i}", prune_overrides(s, variant), data_dir, s.timeout_s))
        )
        log(f"  {variant.label}: {results[-1].steps} steps, {results[-1].sweep.wall_s:.1f} s")
    return results


def pruning_rows(s: Settings, results: Sequence[PruneResult]) -> list[Row]:
    """Item 4: steps of each pruned study / steps of the full grid, and whether it found the same best scale
    (within one grid point) with a Spearman within 0.005."""
    reference = results[0]
    ref_best = reference.sweep.best()
    grid = sorted(s.prune_scales)
    rows = [
        Row(
            "4",
            f"pruning reference: full grid of {len(grid)} scales, no pruner (training steps)",
            "-",
            f"{reference.steps} steps",
            None,
            "",
            f"best scale {ref_best.scale:g}, Spearman {ref_best.value:.4f}" if ref_best else "no complete trial",
            status="reference",
        )
    ]
    for result in results[1:]:
        best = result.sweep.best()
        ratio = result.steps / reference.steps if reference.steps else float("nan")
        if best is None or ref_best is None:
            same, note = False, "no complete trial"
        else:
            distance = abs(grid.index(best.scale) - grid.index(ref_best.scale))
            gap = ref_best.value - best.value
            same = distance <= 1 and abs(gap) <= 0.005
            pruned = sum(t.state == "PRUNED" for t in result.sweep.trials)
            tried = sorted({t.scale for t in result.sweep.trials})
            note = (
                f"best scale {best.scale:g} ({distance} grid point(s) from the reference), Spearman {best.value:.4f} (gap {gap:+.4f}); "
                f"{pruned}/{len(result.sweep.trials)} trials pruned; scales tried {[f'{x:g}' for x in tried]}; order {[f'{t.scale:g}' for t in result.sweep.trials]}"
            )
        status = None if same else "not met"
        rows.append(
            Row(
                "4",
                f"pruned study: {result.variant.label} (training steps)",
                f"{result.steps} steps",
                f"{reference.steps} steps",
                Stat.of([ratio]),
                "<= 0.5",
                note,
                status=status,
            )
        )
    return rows


# ----------------------------------------------------------------------------------------------- item 5


def _layer_setup(s: Settings, data_dir: str, pairs: int | None) -> tuple[Any, Any]:
    """MiniLM cut to max(s.layers) layers and the STSB validation split (first `pairs` rows)."""
    from sweep.config import compose_config
    from sweep.data import load_split
    from sweep.model import build_model

    cfg = compose_config(["model=minilm_l1", f"model.num_layers={max(s.layers)}", f"data.local_dir={data_dir}"])
    model = build_model(cfg.model, seed=0, device="cpu")
    dataset = load_split(cfg.data, "validation")
    if pairs is not None:
        dataset = dataset.select(range(min(pairs, len(dataset))))
    return model, dataset


def naive_layer_dim_spearman(
    model: Any,
    sentences1: Sequence[str],
    sentences2: Sequence[str],
    scores: Sequence[float],
    layers: Sequence[int],
    dims: Sequence[int],
    batch_size: int,
) -> dict[tuple[int, int], float]:
    """The naive grid: for each layer k, re-encode everything with the model cut to k layers (`model.encode`), then
    slice each dim. Returns {(layer, dim): Spearman}."""
    import torch
    from scipy.stats import spearmanr

    bert = model[0].auto_model
    all_layers, n_layers = bert.encoder.layer, bert.config.num_hidden_layers
    out = {}
    try:
        for layer in layers:
            bert.encoder.layer, bert.config.num_hidden_layers = all_layers[:layer], layer
            first = model.encode(list(sentences1), batch_size=batch_size, convert_to_tensor=True)
            second = model.encode(list(sentences2), batch_size=batch_size, convert_to_tensor=True)
            for dim in dims:
                cosine = torch.nn.functional.cosine_similarity(first[:, :dim], second[:, :dim])
                out[(layer, dim)] = float(spearmanr(scores, cosine.numpy()).statistic)
    finally:
        bert.encoder.layer, bert.config.num_hidden_layers = all_layers, n_layers
    return out


def measure_layer_grid(s: Settings, data_dir: str, log: Callable[[str], None]) -> list[Row]:
    """Item 5: `sweep.layer_grid.layer_dim_spearman` (one forward pass for every layer) and the naive per-layer
    re-encoding, each / one full-model STSB evaluation (the project's evaluator), on MiniLM cut to a few layers."""
    try:
        from sweep.layer_grid import layer_dim_spearman
    except ImportError as error:
        return [
            Row(
                "5",
                "layer x dim grid evaluation",
                "-",
                "-",
                None,
                "<= 1.2",
                f"sweep.layer_grid not available ({error})",
                status="skipped",
            )
        ]
    try:
        return _measure_layer_grid(s, data_dir, log, layer_dim_spearman)
    except Exception as error:  # noqa: BLE001 - another engineer's module in progress: report, do not stop the run
        return [
            Row(
                "5",
                "layer x dim grid evaluation",
                "-",
                "-",
                None,
                "<= 1.2",
                f"sweep.layer_grid failed: {type(error).__name__}: {error}",
                status="skipped",
            )
        ]


def _measure_layer_grid(
    s: Settings, data_dir: str, log: Callable[[str], None], layer_dim_spearman: Callable[..., Any]
) -> list[Row]:
    from sweep.trial import stsb_evaluator

    batch = 64
    model, dataset = _layer_setup(s, data_dir, s.layer_pairs)
    s1, s2, scores = dataset["sentence1"], dataset["sentence2"], dataset["score"]
    evaluator = stsb_evaluator(dataset, "stsb_validation", batch)
    full, grid, naive, diffs = [], [], [], []
    evaluator(model)  # warm-up (first-call allocations), not timed
    for _ in range(s.layer_repeats):
        start = time.perf_counter()
        evaluator(model)
        full.append(time.perf_counter() - start)
        start = time.perf_counter()
        table = layer_dim_spearman(model, s1, s2, scores, s.layers, s.dims, batch_size=batch)
        grid.append(time.perf_counter() - start)
        start = time.perf_counter()
        reference = naive_layer_dim_spearman(model, s1, s2, scores, s.layers, s.dims, batch_size=batch)
        naive.append(time.perf_counter() - start)
        diffs += [abs(r.spearman - reference[(r.layer, r.dim)]) for r in table.itertuples()]
    log(
        f"  full {statistics.median(full):.2f} s, grid {statistics.median(grid):.2f} s, naive {statistics.median(naive):.2f} s"
    )
    cells = f"{len(s.layers)} layers x {len(s.dims)} dims, {len(s1)} pairs, batch {batch}; MiniLM cut to {max(s.layers)} layers"
    full_stat = Stat.of(full).fmt("s", 2)
    return [
        Row(
            "5",
            "layer x dim grid, `sweep.layer_grid.layer_dim_spearman` / one full-model STSB evaluation",
            Stat.of(grid).fmt("s", 2),
            full_stat,
            Stat.of([g / f for g, f in zip(grid, full, strict=True)]),
            "<= 1.2",
            f"{cells}; max |grid - naive| Spearman {max(diffs):.1e}",
        ),
        Row(
            "5",
            "layer x dim grid, naive (re-encode once per layer with `model.encode`) / one full-model STSB evaluation",
            Stat.of(naive).fmt("s", 2),
            full_stat,
            Stat.of([n / f for n, f in zip(naive, full, strict=True)]),
            "",
            cells,
        ),
    ]


# ----------------------------------------------------------------------------------------------- item 6


def measure_eval_speed(s: Settings, data_dir: str, log: Callable[[str], None]) -> list[Row]:
    """Item 6: sentences/s of the project's STSB evaluator (sweep.trial.stsb_evaluator, the trial's batch size)
    vs `model.encode` with default settings, on the default static model and on MiniLM cut to a few layers.
    The evaluator runs cold (a model without the study's tokenization cache, as in a study's first evaluation)
    and warm (a model from `StudyResources`, whose cache an earlier evaluation filled: every later evaluation)."""
    from sweep.config import compose_config, resolve_eval_batch_size
    from sweep.data import load_split
    from sweep.model import build_model
    from sweep.preprocess_cache import PreprocessCache
    from sweep.trial import stsb_evaluator

    overrides = {
        "static_minilm (default)": [],
        f"MiniLM, {max(s.layers)} layers": ["model=minilm_l1", f"model.num_layers={max(s.layers)}"],
    }
    configs = {
        label: compose_config([*extra, f"data.local_dir={data_dir}", "trial.device=cpu"])
        for label, extra in overrides.items()
    }
    for cfg in configs.values():
        resolve_eval_batch_size(cfg)
    dataset = load_split(configs["static_minilm (default)"].data, "validation")
    if s.encode_pairs is not None:
        dataset = dataset.select(range(min(s.encode_pairs, len(dataset))))
    sentences = [*dataset["sentence1"], *dataset["sentence2"]]
    rows = []
    for label, cfg in configs.items():
        model = build_model(cfg.model, seed=0, device="cpu")
        warm_model = PreprocessCache().install(copy.deepcopy(model))
        evaluator = stsb_evaluator(dataset, "stsb_validation", cfg.trial.eval_batch_size)
        evaluator(model)
        evaluator(warm_model)  # fills the cache, as a study's first evaluation does
        model.encode(sentences[:64])  # warm-up
        cold, warm, theirs = [], [], []
        for _ in range(s.encode_repeats):
            for run, into in ((lambda: evaluator(model), cold), (lambda: evaluator(warm_model), warm)):
                start = time.perf_counter()
                run()
                into.append(len(sentences) / (time.perf_counter() - start))
            start = time.perf_counter()
            model.encode(list(dataset["sentence1"]))
            model.encode(list(dataset["sentence2"]))
            theirs.append(len(sentences) / (time.perf_counter() - start))
        log(
            f"  {label}: evaluator cold {statistics.median(cold):.0f}/s, warm {statistics.median(warm):.0f}/s, encode {statistics.median(theirs):.0f}/s"
        )
        note = f"{len(sentences)} sentences; evaluator batch {cfg.trial.eval_batch_size} (trial.eval_batch_size=auto) incl. Spearman; encode batch 32 (default)"
        for state, ours in (
            ("warm: tokenization cached by the study", warm),
            ("cold: a study's first evaluation", cold),
        ):
            rows.append(
                Row(
                    "6",
                    f"STSB validation encoding throughput, {label}, {state}",
                    Stat.of(ours).fmt("sent/s", 0),
                    Stat.of(theirs).fmt("sent/s", 0),
                    Stat.of([o / t for o, t in zip(ours, theirs, strict=True)]),
                    "",
                    note,
                )
            )
    return rows


# ----------------------------------------------------------------------------------------------- item 7


def gpu_rows() -> list[Row]:
    """Item 7: the GPU comparison needs a GPU; without one the row says so."""
    try:
        import torch

        available = torch.cuda.is_available()
    except ImportError:
        available = False
    if not available:
        return [
            Row(
                "7",
                "GPU (trial=gpu)",
                "-",
                "-",
                None,
                "",
                "skipped: no GPU on this machine (torch.cuda.is_available() is False)",
                status="skipped",
            )
        ]
    return [
        Row(
            "7",
            "GPU (trial=gpu)",
            "-",
            "-",
            None,
            "",
            "not measured by this benchmark yet: run items 1-3 with trial.device=cuda",
            status="skipped",
        )
    ]


# ----------------------------------------------------------------------------------------------- main

ITEMS = ("1", "2", "3", "4", "5", "6", "7")


def _quiet_libraries() -> None:
    """No progress bars or load reports from the in-process measurements (items 5 and 6)."""
    import logging

    for name in ("transformers", "sentence_transformers", "datasets"):
        logging.getLogger(name).setLevel(logging.ERROR)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import datasets
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()
        datasets.disable_progress_bars()
    except ImportError:
        pass


def guarded(item: str, label: str, measure: Callable[[], list[Row]]) -> list[Row]:
    """The rows of one measurement, or one "failed" row naming the error: a long run keeps its other results."""
    try:
        return measure()
    except Exception as error:  # noqa: BLE001
        message = f"{type(error).__name__}: {error}".splitlines()
        return [Row(item, label, "-", "-", None, "", " ".join(message[:1] + message[-3:])[:500], status="failed")]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m sweep.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny steps, scales and repeats (checks the benchmark in a couple of minutes)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"folder for README.md and bench.json (default {DEFAULT_OUT.relative_to(REPO_ROOT)})",
    )
    parser.add_argument(
        "--data-dir",
        default=DEFAULT_DATA_DIR,
        help="folder holding nli/ and stsb/ (default: $SWEEP_DATA_DIR or ../shared/data)",
    )
    parser.add_argument("--only", default=",".join(ITEMS), help="comma list of items to run (1-3 run together)")
    parser.add_argument("--keep-runs", action="store_true", help="keep the studies' Optuna/MLflow folders (printed)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> str:
    args = parse_args(argv)
    settings = QUICK if args.quick else FULL
    items = set(args.only.split(","))
    start = time.perf_counter()
    log = lambda text: print(f"[{time.perf_counter() - start:6.0f} s] {text}", flush=True)  # noqa: E731
    _quiet_libraries()
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

    measurements: list[tuple[set[str], str, Callable[[], list[Row]]]] = [
        ({"1", "2", "3"}, "items 1-3: baseline processes and framework sweeps", items_1_3),
        ({"4"}, "item 4: pruning", item_4),
        ({"5"}, "item 5: layer x dim grid evaluation", lambda: measure_layer_grid(settings, args.data_dir, log)),
        ({"6"}, "item 6: evaluation speed", lambda: measure_eval_speed(settings, args.data_dir, log)),
        ({"7"}, "item 7: GPU", gpu_rows),
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
    report = render_report(rows, machine, settings, elapsed, details)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "README.md").write_text(report)
    raw["rows"] = [{**asdict(r), "verdict": r.verdict} for r in rows]
    (args.out / "bench.json").write_text(json.dumps(raw, indent=1, default=str))
    print(report)
    log(f"written {args.out / 'README.md'} and {args.out / 'bench.json'}")
    return report


if __name__ == "__main__":
    main()

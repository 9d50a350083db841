"""The result table: repeated measurements (Stat), rows with verdicts, the machine description and the report."""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.settings import FULL, Settings, expected_seconds
from sweep.config.checks import usable_cores
from sweep.names import ATTR_TRAIN_SECONDS, ATTR_WALL_TIME_S


@dataclass(frozen=True)
class Stat:
    """Repeated measurements of one quantity."""

    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat:
        return cls(tuple(float(v) for v in values))

    @classmethod
    def ratios(cls, numerators: Sequence[float], denominators: Sequence[float]) -> Stat:
        """The pairwise ratios numerator / denominator (the two sequences are paired, same length)."""
        return cls.of([n / d for n, d in zip(numerators, denominators, strict=True)])

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

    @classmethod
    def compare(
        cls,
        item: str,
        measurement: str,
        ours: Sequence[float],
        theirs: Sequence[float],
        unit: str,
        digits: int = 2,
        goal: str = "",
        note: str = "",
    ) -> Row:
        """A row from paired repeated measurements of the framework (``ours``) and its baseline (``theirs``)."""
        return cls(
            item,
            measurement,
            Stat.of(ours).fmt(unit, digits),
            Stat.of(theirs).fmt(unit, digits),
            Stat.ratios(ours, theirs),
            goal,
            note,
        )

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
        "usable_cores": usable_cores(),
        "memory": memory,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        **versions,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def render_report(
    rows: Sequence[Row],
    machine: dict[str, Any],
    settings: Settings,
    elapsed_s: float,
    details: Sequence[str] = (),
    command: str = "",
) -> str:
    """The README: what was run (`command`, the command line as typed; by default the mode's), on what, the table
    and the details."""
    s = settings
    described = ", ".join(f"{k} {v}" for k, v in machine.items())
    command = command or f"python -m benchmarks{' --quick' if s.name == 'quick' else ''}"
    lines = [
        "# Benchmark: sweep vs plain sentence-transformers",
        "",
        f"Command: `{command}` ({s.name} mode, {elapsed_s / 60:.1f} min).",
        "",
        f"Machine: {described}.",
        "",
        f"Settings: scales {list(s.scales)}, {s.steps} steps, eval every {s.eval_steps}, {s.repeats} repeat(s); "
        f"pruning over {list(s.prune_scales)} at {s.prune_steps} steps, eval every {s.prune_eval_steps}; "
        f"layer grid layers {list(s.layers)} x dims {list(s.dims)}, {s.layer_repeats} repeat(s).",
        "",
    ]
    if s.name == "quick":
        lines += [
            "**Quick mode**: tiny step counts and one repeat, to check that the benchmark runs. "
            "The ratios are dominated by",
            "fixed costs and by other load on the machine; use the full mode for numbers.",
            "",
        ]
    lines += [
        f"A full run is expected to take about {expected_seconds(FULL) / 60:.0f} min on a quiet 2-core machine.",
        "",
        "Ratios are framework / baseline (for throughput: framework / baseline sentences per second), "
        "each pair measured",
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
    "1. **Baseline**: `benchmarks/plain_st.py --scale S` (plain sentence-transformers, no `sweep` import), one "
    "process per scale, wall time of the whole process measured from outside (interpreter start, imports, loading, "
    "training, evaluations).",
    f"2. **Per-trial overhead**: a framework trial's wall time (Optuna user attribute `{ATTR_WALL_TIME_S}` = MLflow "
    "`trial_wall_time_s`) / the baseline's in-process trial time at the same scale, steps and evaluations (initial "
    "validation, every eval step, final validation, test), paired by scale and repeat. The framework's first trial of "
    "a process also loads the data and builds the base model, so its baseline adds the baseline's loading time. "
    "Reported with the similarity statistics disabled and enabled (`stats.enabled`), and for the trainer alone "
    f"(`{ATTR_TRAIN_SECONDS}`).",
    "3. **Whole sweep**: one `python -m sweep` process over all scales / the sum of the baseline processes, per "
    "repeat.",
    "4. **Pruning**: training steps actually trained (sum over trials of the last `stsb_validation_spearman` step in "
    "MLflow) by a pruned study / by the full grid without pruner (item 3's framework sweep with statistics off when "
    "the grid and schedule are the same), with the condition that the pruned study's best complete trial is within "
    "one grid point of the grid's best scale and within 0.005 Spearman. A grid runs its points in queue order, a "
    "seeded shuffle of the listed grid (the notes give the order actually run), so two orders, two pruners and a TPE "
    "sampler over the same values are measured. Pruners compare the validation Spearman reported at every evaluation "
    "(Optuna steps = training steps); successive halving's first rung is the first evaluation.",
    "5. **Layer x dim grid**: `sweep.evaluation.layer_grid.layer_dim_spearman` on MiniLM cut to a few layers / one "
    "full-model STSB evaluation with the project's evaluator; also the naive way (re-encode once per layer with "
    "`model.encode`). "
    "The grid's Spearman values are checked against the naive ones.",
    "6. **Evaluation speed**: sentences per second of the project's STSB evaluator "
    "(`sweep.training.resources.stsb_evaluator`, trial eval batch size, including the Spearman) / `model.encode` "
    "with default settings (batch 32). Warm: the "
    "evaluated model's `preprocess` goes through the study's tokenization cache filled by an earlier evaluation "
    "(every evaluation of a study after its first); cold: a plain model (a study's first evaluation).",
    "7. **GPU**: needs a GPU; skipped otherwise.",
    "8. **Packed trials and workers**: trials per hour of a grid study with `study.pack=K` (one process training K "
    "trials together: a static model's as one fused model, `study.fuse=true`; a transformer's, and a static "
    "model's with `study.fuse=false`, in lockstep turns on the same batches) and with `study.n_workers=N`, each / "
    "the same study one trial at a time, all measured in this run; trials per hour = trials / (last trial end - "
    "first trial start), so process start and imports do not count. The physical floor is the same steps, "
    "optimizer, schedule and evaluations in a bare torch loop over pre-tokenized batches "
    "(`benchmarks.packing.bare_loop_seconds`); its row compares one framework trial with it, and every "
    "trials-per-hour row says how far it is from the floor's rate.",
    "9. **Racing the seeds**: a race (`study.race`: every scale with the first 2 seeds, then one seed more a round "
    "for the scales the paired statistics have not put out) replayed offline over a published study that trained "
    "every scale with every seed (its shipped per-pair predictions, its own statistics settings, the decision "
    "function a live race calls, each round at the race's round level: the study's level spent over the rounds "
    "the race may take), in every order of its seeds: the first folder of `--race-folders` against the "
    "goals, the others beside it (skipped when none is given); a grid with other axes races each of their values "
    "apart, and a study chosen by another `eval.objective` races on it over the seeds alone. Training steps "
    "(trials x steps; a one-pass study: its family's last evaluation step) and wall time (the "
    "trials' `trial_wall_time_s`) of the race / the full grid, and the share of orders whose race ends on the full "
    "grid's 95% confidence set for the best. A folder that ships `validation_history.csv` is also replayed as a "
    "race over seeds and steps (`study.race.stop_early`: the first round's trials, queued point by point in a "
    "seeded shuffle, each judged at each of its validations by `sweep.stats.early_stop`; a stopped trial counts "
    "its steps up to the stop and its share of the trial's wall time).",
    "10. **Racing the seeds and steps, live**: each experiment of the run's settings with its seeds, the full grid "
    "and then the same study with `study.race.enabled=true study.race.stop_early=true`, both run in this run: "
    "training steps (each trial's last validation step; a trial the race discarded before training: none), the "
    "processes' wall times, and whether the race's 95% confidence set for the best (its own paired comparison) is "
    "the full grid's.",
    "11. **Between trials**: the default experiment (`mnrl_scale`, the best model kept) with the similarity "
    "statistics on, on without their histogram figures, and off: each trial's seconds outside its training steps "
    "(before the first step and after the last; the validations at its evaluation steps count as steps) over its "
    "wall time, from the trial's own clock (`time_phases`), over the trials after the first of each process.",
    "12. **Commands that train nothing**: the wall time of a fresh process for `python -m sweep --help`, a refused "
    "config (the study's command with `study.timeout=-5`: one line, exit 2) and the rerun of a finished study (a "
    '2-scale grid of 4-step trials trained once first), each against `python -c "import sweep"` run alternately '
    "with them; the verdict is the command's median seconds against the issue's goal of 5 s.",
)

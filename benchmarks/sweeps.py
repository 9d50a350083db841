"""Items 1-3: the baseline processes, the per-trial overhead and the whole sweep, from the same interleaved runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.runners import (
    BaselineRun,
    FrameworkSweep,
    FrameworkTrial,
    grid_override,
    recorded,
    run_baseline,
    run_framework,
)
from benchmarks.settings import Settings
from benchmarks.table import Row, Stat
from sweep.names import ATTR_TRAIN_SECONDS


@dataclass
class SweepMeasurements:
    """Items 1-3: per repeat, the baseline processes and the framework sweeps (statistics off and on)."""

    baseline: list[list[BaselineRun]] = field(default_factory=list)
    framework_off: list[FrameworkSweep] = field(default_factory=list)
    framework_on: list[FrameworkSweep] = field(default_factory=list)

    def by_statistics(self) -> tuple[tuple[str, list[FrameworkSweep]], ...]:
        """The framework sweeps, statistics disabled then enabled, each with its label."""
        return (("statistics disabled", self.framework_off), ("statistics enabled", self.framework_on))


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
        for state, enabled, sweeps in (("off", "false", m.framework_off), ("on", "true", m.framework_on)):
            root = work / f"sweep_{state}_{r}"
            sweeps.append(run_framework(root, [*common, f"stats.enabled={enabled}"], data_dir, s.timeout_s))
            log(f"  repeat {r + 1}: framework, statistics {state}: {sweeps[-1].wall_s:.1f} s")
    return m


def baseline_rows(m: SweepMeasurements) -> list[Row]:
    """Item 1: what one baseline process costs, split into its parts."""
    runs = [run for rep in m.baseline for run in rep]

    def part(key: str) -> str:
        return Stat.of([run.result[key] for run in runs]).fmt("s", 1)

    walls = Stat.of([run.process_wall_s for run in runs])
    note = f"imports {part('import_s')}, loading {part('load_s')}, trainer {part('train_s')}, trial {part('trial_s')}"
    return [
        Row(
            "1",
            "baseline: one `benchmarks/plain_st.py` process per scale (process wall time)",
            "-",
            walls.fmt("s", 1),
            None,
            "",
            note,
            status="reference",
        )
    ]


def _pairs(m: SweepMeasurements, sweeps: list[FrameworkSweep]) -> list[tuple[FrameworkTrial, BaselineRun]]:
    """Each complete framework trial with the baseline run of the same repeat and scale."""
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
    for label, sweeps in m.by_statistics():
        pairs = _pairs(m, sweeps)
        fw = [recorded(t.wall_s) for t, _ in pairs]
        base = [b.result["trial_s"] + (b.result["load_s"] if t.first_in_process else 0.0) for t, b in pairs]
        later = [recorded(t.wall_s) / b.result["trial_s"] for t, b in pairs if not t.first_in_process]
        note = f"trials after the first: {Stat.of(later).fmt(digits=3)}" if later else ""
        rows.append(Row.compare("2", f"per-trial wall time, {label}", fw, base, "s", 2, "<= 1.05", note))
    pairs = _pairs(m, m.framework_off)
    fw = [recorded(t.train_s) for t, _ in pairs]
    base = [b.result["train_s"] for _, b in pairs]
    rows.append(
        Row.compare(
            "2",
            "trainer time only (construction + train), statistics disabled",
            fw,
            base,
            "s",
            2,
            "<= 1.05",
            f"MLflow `{ATTR_TRAIN_SECONDS}` vs the baseline's train_s",
        )
    )
    return rows


def whole_sweep_rows(m: SweepMeasurements) -> list[Row]:
    """Item 3: one framework process over all scales / the sum of the baseline processes, per repeat."""
    rows = []
    base = [sum(run.process_wall_s for run in rep) for rep in m.baseline]
    for label, sweeps in m.by_statistics():
        fw = [sweep.wall_s for sweep in sweeps]
        rows.append(
            Row.compare(
                "3",
                f"whole sweep of {len(m.baseline[0])} scales, {label} (process wall time)",
                fw,
                base,
                "s",
                1,
                "<= 0.75",
                "baseline: sum of one process per scale",
            )
        )
    return rows


def agreement_details(m: SweepMeasurements) -> list[str]:
    """The baseline and the framework (statistics off: same training data) should give the same Spearman."""
    diffs = [abs(recorded(t.value) - b.result["stsb_validation_spearman"]) for t, b in _pairs(m, m.framework_off)]
    lines = [
        f"- Same result check: |framework - baseline| STSB validation Spearman, statistics off, max over {len(diffs)} "
        f"trials: {max(diffs, default=float('nan')):.2e}."
    ]
    first = [recorded(t.wall_s) for s in m.framework_off for t in s.trials if t.first_in_process]
    if first:
        lines.append(
            "- Framework first trial of a process (includes data loading and model building), statistics off: "
            f"{Stat.of(first).fmt('s')}."
        )
    outside = [s.wall_s - sum(recorded(t.wall_s) for t in s.trials) for s in m.framework_off + m.framework_on]
    base_outside = [run.process_wall_s - run.result["trial_s"] for rep in m.baseline for run in rep]
    lines.append(
        "- Fixed cost per process (wall time outside the trials: interpreter, imports, Hydra, Optuna and MLflow "
        f"databases, final table): framework {Stat.of(outside).fmt('s', 1)}; baseline (interpreter, imports, "
        f"loading) {Stat.of(base_outside).fmt('s', 1)}."
    )
    stats_cost = []
    for off, on in zip(m.framework_off, m.framework_on, strict=True):
        walls = {t.scale: recorded(t.wall_s) for t in off.complete() if not t.first_in_process}
        stats_cost += [recorded(t.wall_s) - walls[t.scale] for t in on.complete() if t.scale in walls]
    if stats_cost:
        lines.append(
            "- Cost of the statistics per trial (statistics-on minus statistics-off trial wall time, same scale, "
            f"trials after the first): {Stat.of(stats_cost).fmt('s')}."
        )
    return lines

"""Item 11: what a trial spends outside its training steps, on the default experiment as a user runs it.

Three studies of `mnrl_scale` (the study's best model kept, `Settings.between_seeds` seeds) are run here: with the
similarity statistics on (the default), on without their histogram figures, and off. The statistics are
measurements the user asks for; the rest is the framework's. Each trial's own clock (`sweep.training.step_clock`,
the Optuna user attribute ``time_phases``) splits its wall time into the seconds before its first training step, in
its steps (with their validations) and after its last one, and names the spans within them: preparing (data, model
copy, the untrained model's scores and statistics), the final scoring (validation, test, statistics, predictions)
and keeping the model. The ratio is each trial's own: seconds outside its steps / its wall time, over the trials
after the first of the process (the first also loads the data and builds the base model, a cost of the study, not
of a trial).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchmarks.runners import FrameworkSweep, run_framework
from benchmarks.settings import Settings
from benchmarks.table import Row, Stat
from sweep.training.step_clock import AFTER, BEFORE, OUTSIDE_SHARE, STEPS, span_metric

EXPERIMENT = "mnrl_scale"
VARIANTS = (
    ("statistics on", ()),
    ("statistics on, no histogram figures", ("stats.histogram=false",)),
    ("statistics off", ("stats.enabled=false",)),
)


def measure_between_trials(s: Settings, data_dir: str, work: Path, log: Callable[[str], None]) -> list[Row]:
    """Item 11's rows (see the module docstring)."""
    rows = []
    for index, (label, extra) in enumerate(VARIANTS):
        sweep = run_framework(
            work / f"between_trials_{index}",  # a path Hydra reads as one value: no commas
            (*s.between_overrides, *extra),
            data_dir,
            s.timeout_s,
            EXPERIMENT,
            tuple(range(s.between_seeds)),
            save_model="best",
        )
        log(f"  {EXPERIMENT}, {label}: {len(sweep.trials)} trials, {sweep.wall_s:.0f} s")
        rows += between_trials_rows(sweep, s.between_seeds, label)
    return rows


def _seconds(values: list[float]) -> str:
    return Stat.of(values).fmt("s", 2)


def between_trials_rows(sweep: FrameworkSweep, seeds: int, label: str) -> list[Row]:
    """The share of each trial's wall time outside its steps (against the goal), and its two parts."""
    later = [t for t in sweep.complete() if not t.first_in_process and t.phases]
    first = [t for t in sweep.complete() if t.first_in_process and t.phases]
    walls = [t.phases[BEFORE] + t.phases[STEPS] + t.phases[AFTER] for t in later]
    where = f"{EXPERIMENT}, {seeds} seed(s), {label}, best model kept; trials after the first"
    before, after = ([t.phases[part] for t in later] for part in (BEFORE, AFTER))
    outside = [b + a for b, a in zip(before, after, strict=True)]

    def spans(*names: str) -> str:
        return ", ".join(f"{name} {_seconds([t.phases[span_metric(name)] for t in later])}" for name in names)

    first_share = ""
    if first:
        share = first[0].phases[OUTSIDE_SHARE]
        first_share = f"; the first trial of the process: {share:.3f} (it also loads the data and the base model)"
    return [
        Row.compare(
            "11",
            f"time outside the training steps / trial wall time ({where})",
            outside,
            walls,
            "s",
            2,
            "<= 0.05",
            f"in the steps (with their validations): {_seconds([t.phases[STEPS] for t in later])}" + first_share,
        ),
        Row.compare(
            "11",
            f"before the first training step / trial wall time ({label})",
            before,
            walls,
            "s",
            2,
            "",
            f"of it {spans('preparing')}; the rest: the trial's MLflow run, parameters and tags, the loss, the trainer",
        ),
        Row.compare(
            "11",
            f"after the last training step / trial wall time ({label})",
            after,
            walls,
            "s",
            2,
            "",
            f"of it {spans('final_scoring', 'keeping')}; the rest: the trial's end (its scores, attributes and run)",
        ),
    ]

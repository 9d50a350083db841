"""Item 10: a race over seeds and steps, live: an experiment's full grid against the same study raced
(`study.race.enabled=true study.race.stop_early=true`), both run here, one after the other.

Per experiment of `Settings.live_races`, with `Settings.live_race_seeds` seeds: the training steps both trained (each
trial's last logged validation step: a stopped trial counts up to its stop, a trial the race discarded not at all),
their process wall times, and whether the raced study's 95% confidence set for the best is the full grid's (each
study's own paired comparison, `report/paired_comparison.csv` on its parent run: the scales whose
``in_confidence_set`` is true; a raced study's points dropped by the race are out of it). Trials of one seed are
deterministic, so the steps and the set do not depend on the machine's load; the wall time does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from benchmarks.runners import STUDY, FrameworkSweep, run_framework
from benchmarks.settings import Settings
from benchmarks.table import Row, Stat

RACED = ("study.race.enabled=true", "study.race.stop_early=true")


@dataclass(frozen=True)
class LiveRace:
    """One experiment's full grid and race, and the confidence set for the best each ended on."""

    experiment: str
    seeds: int
    full: FrameworkSweep
    raced: FrameworkSweep
    full_set: frozenset[float]
    raced_set: frozenset[float]


def confidence_set(root: Path) -> frozenset[float]:
    """The scales in the 95% confidence set for the best of the study under `root` (its paired comparison)."""
    from mlflow.tracking import MlflowClient  # a slow import, needed once a study has run

    client = MlflowClient(f"sqlite:///{root}/mlflow.db")
    experiment = client.get_experiment_by_name(STUDY)
    assert experiment is not None, f"no study {STUDY} under {root}"
    parents = client.search_runs([experiment.experiment_id], "tags.`sweep.role` = 'study'")
    with tempfile.TemporaryDirectory() as folder:
        path = client.download_artifacts(parents[0].info.run_id, "report/paired_comparison.csv", folder)
        table = pd.read_csv(path)
    return frozenset(float(s) for s in table.loc[table["in_confidence_set"].astype(bool), "scale"])


def measure_live_race(
    s: Settings, data_dir: str, work: Path, log: Callable[[str], None]
) -> tuple[list[Row], list[LiveRace]]:
    """Item 10's rows and raw results (see the module docstring)."""
    seeds = tuple(range(s.live_race_seeds))
    results = []
    for experiment in s.live_races:
        runs = {}
        for name, extra in (("full", ()), ("raced", RACED)):
            root = work / f"live_{experiment}_{name}"
            overrides = (*s.live_race_overrides, *extra)
            runs[name] = (run_framework(root, overrides, data_dir, s.live_race_timeout_s, experiment, seeds), root)
            log(f"  {experiment} {name}: {len(runs[name][0].trials)} trials, {runs[name][0].wall_s:.0f} s")
        (full, full_root), (raced, raced_root) = runs["full"], runs["raced"]
        result = LiveRace(experiment, len(seeds), full, raced, confidence_set(full_root), confidence_set(raced_root))
        results.append(result)
    return [row for result in results for row in live_race_rows(result)], results


def _scales(scales: frozenset[float]) -> str:
    return "{" + ", ".join(f"{s:g}" for s in sorted(scales)) + "}"


def live_race_rows(result: LiveRace) -> list[Row]:
    """Steps and wall time of the race over seeds and steps / the full grid, and whether it ended on the same set."""
    where = f"{result.experiment}, {result.seeds} seeds, run live"
    full_steps, raced_steps = result.full.steps, result.raced.steps
    stopped = [t for t in result.raced.trials if t.state == "PRUNED"]
    same = result.raced_set == result.full_set
    return [
        Row(
            "10",
            f"race over seeds and steps / full grid, training steps ({where})",
            f"{raced_steps} steps",
            f"{full_steps} steps",
            Stat.of([raced_steps / full_steps]),
            "<= 0.3",
            f"{len(result.raced.trials)} trials trained, {len(stopped)} of them stopped at a validation "
            f"(full grid: {len(result.full.trials)})",
        ),
        Row(
            "10",
            f"race over seeds and steps / full grid, wall time of the process ({result.experiment})",
            f"{result.raced.wall_s:.1f} s",
            f"{result.full.wall_s:.1f} s",
            Stat.of([result.raced.wall_s / result.full.wall_s]),
            "",
            "one process each, one after the other, on this machine",
        ),
        Row(
            "10",
            f"race over seeds and steps ends on the full grid's 95% confidence set for the best ({result.experiment})",
            _scales(result.raced_set),
            _scales(result.full_set),
            Stat.of([float(same)]),
            ">= 1",
            "the same set" if same else "a different set",
        ),
    ]

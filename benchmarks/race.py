"""Item 9: a race over the seeds (`study.race`) against the full grid with every seed, replayed on a real study.

Trials of one seed are deterministic (a seed fixes the initialisation and the batches), so a race over a study that
trained every point with every seed can be replayed offline from the per-pair predictions it shipped
(``predictions.npz``: each trial's ranks, all the paired statistics read): each round compares the survivors on their
seeds with the study's own settings (``config.yaml``: ``stats.paired.*``, ``stats.seed``) and decides with the function
a live race calls (`sweep.stats.race.race_round`), so the replay takes the decisions a raced run of the same study
would take. It is replayed in every order of the study's seeds (5! = 120 for 5 seeds; `Settings.race_orders` of them,
drawn at random, in quick mode), since which seeds come first decides what the first rounds see. Reported: the training
steps (trials x `trial.max_steps`, equal for every trial of such a study) and the wall time (the trials'
`trial_wall_time_s`) the race spends / the full grid's, and the share of orders whose race ends on the full grid's 95%
confidence set for the best (the set of the paired comparison of every point over every seed). A study whose grid has
other axes than the scale and the seed (a learning rate, a data size) is replayed per family, one race per value of
those axes, as a live race runs them (`sweep.study.race`: each family's scales compete among themselves). A study
chosen by another objective (``eval.objective``, e.g. a retrieval NDCG@10) is raced, as live, on that objective over
the seeds alone (`seed_comparison`; its full grid's set too), and not over steps (`study.race.stop_early` refuses it);
a study that trained one pass of its data (``trial.max_steps`` null) counts each family's steps from its last
evaluation step.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.settings import Settings
from benchmarks.table import Row, Stat
from sweep.report.predictions_file import read_predictions
from sweep.report.results_folder import HISTORY_CSV, TRIALS_CSV, complete_trials, flat_config, read_csv
from sweep.stats.bootstrap import paired_bootstrap, seed_comparison
from sweep.stats.early_stop import HISTORY_COLUMNS, stop_early
from sweep.stats.race import RoundDecision, race_round, race_rounds, round_level
from sweep.study.grid_queue import queue_order

SCALE, SEED, WALL = "loss.scale", "trial.seed", "trial_wall_time_s"
Family = tuple[tuple[str, float], ...]  # the values of a grid's axes other than the scale and the seed
# `paired_bootstrap`'s options, from the study's config.yaml
OPTIONS = {
    "n_resamples": "stats.paired.resamples",
    "level": "stats.paired.level",
    "seed": "stats.seed",
    "margin": "stats.paired.margin",
}


@dataclass(frozen=True)
class RaceRun:
    """One replayed race: the seed order, the trials it trained, their wall time and the points it ended on."""

    order: tuple[float, ...]
    trials: int  # trials started (a stopped one included; one discarded after its point was stopped not)
    steps: int  # training steps, a stopped trial's up to its stop
    wall_s: float
    kept: frozenset[float]
    rounds: int
    history: str  # "stopped early: 0, 50; after 2 seeds out: 1; after 3 seeds out: 20; ended: <why>"


@dataclass(frozen=True)
class RaceReplay:
    """Every replayed race of one study against its full grid."""

    folder: str
    family: str  # the values of the grid's other axes, "trial.learning_rate=0.003" ("" when there are none)
    scales: tuple[float, ...]
    seeds: tuple[float, ...]
    steps_per_trial: int
    full_wall_s: float
    full_set: frozenset[float]
    runs: tuple[RaceRun, ...]
    min_seeds: int
    stop_early: bool  # study.race.stop_early: the first rounds' trials judged at each validation

    @property
    def full_trials(self) -> int:
        return len(self.scales) * len(self.seeds)


class Replayer:
    """The study's trials and predictions, and the round decisions (memoised: many orders share a round)."""

    def __init__(self, folder: Path, family: Family = ()) -> None:
        config = flat_config(folder)
        trials = complete_trials(folder)
        for column, value in family:
            trials = trials[trials[column] == value]
        self.trials = trials
        self.objective = str(config.get("eval.objective", "full"))
        self.scales = tuple(sorted(self.trials[SCALE].unique()))
        self.seeds = tuple(sorted(self.trials[SEED].unique()))
        number = {(r[SCALE], r[SEED]): int(r["trial_number"]) for _, r in self.trials.iterrows()}
        if len(number) != len(self.scales) * len(self.seeds):
            raise ValueError(f"{folder}: a race replay needs every scale with every seed")
        if self.objective == "full":
            self.gold, self.cosines = self._predictions(folder, number)
        else:  # one number per trial, signed so that higher is better, as the live race compares it
            sign = -1.0 if config.get("study.direction") == "minimize" else 1.0
            self.values = {(r[SCALE], r[SEED]): sign * float(r[self.objective]) for _, r in self.trials.iterrows()}
        self.wall = {(r[SCALE], r[SEED]): float(r[WALL]) for _, r in self.trials.iterrows()}
        self.options: dict[str, float] = {name: float(str(config[key])) for name, key in OPTIONS.items()}
        max_steps = config.get("trial.max_steps")
        self.steps = int(str(max_steps)) if max_steps not in (None, "None") else self._last_step(folder, family)
        self.curves = self._curves(folder, number) if self.objective == "full" else None

    @staticmethod
    def _predictions(folder: Path, number: dict[tuple[float, float], int]) -> tuple[np.ndarray, dict]:
        """(gold, (scale, seed) -> cosines, or their ranks: the same statistics) of the trials' shipped STSB validation
        predictions."""
        fetch = read_predictions(folder)
        if fetch is None:
            raise FileNotFoundError(f"{folder} ships no predictions.npz: nothing to replay")
        tables = {key: fetch(str(n), "validation") for key, n in number.items()}
        if any(table is None for table in tables.values()):
            raise ValueError(f"{folder}: a race replay needs every trial's predictions")
        gold = next(iter(tables.values()))["gold"].to_numpy()  # type: ignore[index]
        return gold, {key: table["cosine"].to_numpy() for key, table in tables.items()}  # type: ignore[index]

    @staticmethod
    def _last_step(folder: Path, family: Family) -> int:
        """The steps of a family's trials that trained one pass of their data (all alike): the last evaluation step
        of its condition in ``spearman_vs_step.csv`` (a condition column is named by the key's end:
        ``train.max_samples`` for ``data.train.max_samples``)."""
        curves = read_csv(folder / "spearman_vs_step.csv")
        for axis, value in family:
            column = next(c for c in curves.columns if axis.endswith(c))
            curves = curves[curves[column] == value]
        return int(curves["step"].max())

    @staticmethod
    def _curves(folder: Path, number: dict[tuple[float, float], int]) -> dict[tuple[float, float], list] | None:
        """(scale, seed) -> [(step, validation Spearman), ...] after step 0, from ``validation_history.csv``; None
        when the folder does not ship it (a race over steps cannot be replayed)."""
        path = folder / HISTORY_CSV
        if not path.exists():
            return None
        history = read_csv(path)
        by_trial = {n: rows.sort_values("step") for n, rows in history[history["step"] > 0].groupby("trial_number")}
        return {key: list(zip(by_trial[n]["step"], by_trial[n]["value"], strict=True)) for key, n in number.items()}

    def comparison_set(
        self, scales: tuple[float, ...], seeds: tuple[float, ...], level: float | None = None
    ) -> tuple[RoundDecision, frozenset]:
        """The round decision on `scales` x `seeds` at `level` (default: the study's), and the comparison's
        confidence set for the best."""
        return self._compare(tuple(sorted(scales)), tuple(sorted(seeds)), level or self.options["level"])

    @functools.cache  # noqa: B019 - one replayer per benchmark run; the cache is the point
    def _compare(
        self, scales: tuple[float, ...], seeds: tuple[float, ...], level: float
    ) -> tuple[RoundDecision, frozenset]:
        o = self.options
        if self.objective == "full":
            predictions = np.asarray([[self.cosines[(scale, seed)] for seed in seeds] for scale in scales])
            comparison = paired_bootstrap(
                self.gold, predictions, list(scales), int(o["n_resamples"]), level, int(o["seed"]), o["margin"]
            )
        else:
            values = np.asarray([[self.values[(scale, seed)] for seed in seeds] for scale in scales])
            comparison = seed_comparison(values, list(scales), level, o["margin"])
        table = comparison.table
        decision = race_round(table, len(seeds), len(self.seeds), o["margin"])
        return decision, frozenset(table.loc[table["in_confidence_set"], "scale"])

    def first_round(
        self, order: tuple[float, ...], min_seeds: int, queue: int, level: float
    ) -> tuple[dict[tuple, int], list]:
        """The first round with `study.race.stop_early`: every scale x the first `min_seeds` seeds of `order`, in
        the seeded shuffle `queue` (the live queue's), each trial asking `stop_early` at each of its validations, at
        the race's round `level`, with the history logged so far; a stopped scale's later trials are discarded.
        ((scale, seed) -> steps trained, the scales stopped)."""
        assert self.curves is not None
        queued = queue_order({SCALE: list(self.scales)}, queue, order[:min_seeds])
        points = [(point[SCALE], point[SEED]) for point in queued]
        logged: list[tuple[str, float, int, float]] = []
        trained: dict[tuple, int] = {}
        stopped: list[float] = []
        for scale, seed in points:
            if scale in stopped:
                continue
            for step, value in self.curves[(scale, seed)]:
                logged.append((f"{scale:g}", seed, step, value))
                trained[(scale, seed)] = step
                history = pd.DataFrame(logged, columns=HISTORY_COLUMNS)
                o = self.options
                if stop_early(history, f"{scale:g}", step, self.steps, level, o["margin"]).stop:
                    stopped.append(scale)
                    break
        return trained, stopped

    def race(self, order: tuple[float, ...], min_seeds: int, stop: bool = False, queue: int = 0) -> RaceRun:
        """The race in this seed order: rounds until `race_round` ends it; `stop`: the first rounds' trials judged at
        each validation (`first_round`, queued in the shuffle `queue`)."""
        survivors, used = self.scales, min_seeds
        level = round_level(self.options["level"], race_rounds(len(self.seeds), min_seeds))
        history = []
        first = {(scale, seed): self.steps for scale in survivors for seed in order[:used]}
        if stop:
            first, stopped = self.first_round(order, min_seeds, queue, level)
            survivors = tuple(scale for scale in survivors if scale not in stopped)
            if stopped:
                history.append(f"stopped early: {', '.join(f'{s:g}' for s in sorted(stopped))}")
        trained = [(scale, seed) for scale in survivors for seed in order[:used]]
        while True:
            decision, _ = self.comparison_set(survivors, order[:used], level)
            survivors = tuple(float(s) for s in decision.kept)
            if decision.eliminated:
                history.append(f"after {used} seeds out: {', '.join(f'{float(s):g}' for s in decision.eliminated)}")
            if decision.end:
                history.append(f"ended after {used} seeds: {decision.end}")
                break
            trained += [(scale, order[used]) for scale in survivors]
            used += 1
        steps = {**first, **dict.fromkeys(trained, self.steps)}
        wall = sum(self.wall[key] * n / self.steps for key, n in steps.items())  # a stopped trial: its share
        return RaceRun(order, len(steps), sum(steps.values()), wall, frozenset(survivors), used, "; ".join(history))


def families(folder: Path) -> list[Family]:
    """The families of a results folder's grid: each combination of the values of its axes other than the scale and
    the seed (the ``trials.csv`` columns of a config key: ``trial.learning_rate``...); one empty family without."""
    trials = read_csv(folder / TRIALS_CSV)
    axes = [column for column in trials.columns if "." in column and column not in (SCALE, SEED)]
    values = [sorted(trials[axis].dropna().unique()) for axis in axes]
    return [
        tuple(zip(axes, (float(v) for v in combination), strict=True)) for combination in itertools.product(*values)
    ]


def replay(s: Settings, name: str, log: Callable[[str], None], stop: bool = False, family: Family = ()) -> RaceReplay:
    """Replay the race over the results folder `name` (a path, relative to the working directory or absolute; the
    rows name it as given), over its trials of `family`, in every seed order (or `s.race_orders` random ones);
    `stop`: over steps too (`study.race.stop_early`), order k's first round queued in the shuffle seeded k."""
    replayer = Replayer(Path(name), family)
    label = ", ".join(f"{column}={value:g}" for column, value in family)
    orders = list(itertools.permutations(replayer.seeds))
    if s.race_orders is not None:
        orders = random.Random(0).sample(orders, min(s.race_orders, len(orders)))
    _, full_set = replayer.comparison_set(replayer.scales, replayer.seeds)
    where = f"{name} ({label})" if label else name
    log(f"  {where}: {len(replayer.scales)} scales x {len(replayer.seeds)} seeds, full grid's set {sorted(full_set)}")
    runs = tuple(replayer.race(order, s.race_min_seeds, stop, queue) for queue, order in enumerate(orders))
    log(f"  {len(runs)} seed orders replayed{' (over steps too)' if stop else ''}")
    return RaceReplay(
        name,
        label,
        replayer.scales,
        replayer.seeds,
        replayer.steps,
        sum(replayer.wall.values()),
        full_set,
        runs,
        s.race_min_seeds,
        stop,
    )


def _scales(scales: frozenset[float]) -> str:
    return "{" + ", ".join(f"{s:g}" for s in sorted(scales)) + "}"


def race_rows(result: RaceReplay, goals: bool = True) -> list[Row]:
    """Item 9: steps and wall time of the race / the full grid, and the share of seed orders on the same answer;
    `goals`: measured against the issue's goals (else informational: a study with fewer seeds saves less)."""
    full_steps = result.full_trials * result.steps_per_trial
    steps = [run.steps for run in result.runs]
    same = [run.kept == result.full_set for run in result.runs]
    folder = f"{result.folder} ({result.family})" if result.family else result.folder
    where = (
        f"{folder}, {len(result.scales)} scales x {len(result.seeds)} seeds, min_seeds {result.min_seeds}, "
        f"{len(result.runs)} seed orders"
    )
    race = "race over seeds and steps" if result.stop_early else "race"
    trials = Counter(run.trials for run in result.runs)
    ended = Counter(_scales(run.kept) for run in result.runs)
    histories = Counter(run.history for run in result.runs)
    return [
        Row(
            "9",
            f"{race} / full grid, training steps ({where})",
            Stat.of(steps).fmt("steps", 0),
            f"{full_steps} steps",
            Stat.of([n / full_steps for n in steps]),
            ("<= 0.3" if result.stop_early else "<= 0.5") if goals else "",
            "trials per race: "
            + ", ".join(f"{n} in {k} orders" for n, k in sorted(trials.items()))
            + f" (full grid: {result.full_trials}); the rounds: "
            + " | ".join(f"{history} (in {k} orders)" for history, k in histories.most_common()),
        ),
        Row(
            "9",
            f"{race} / full grid, wall time (the trials' trial_wall_time_s; {folder})",
            Stat.of([run.wall_s for run in result.runs]).fmt("s", 1),
            f"{result.full_wall_s:.1f} s",
            Stat.of([run.wall_s / result.full_wall_s for run in result.runs]),
            "",
            "trials of one scale and seed took what the study measured (a stopped one its share of the steps)",
        ),
        Row(
            "9",
            f"{race} ends on the full grid's 95% confidence set for the best (share of seed orders; {folder})",
            f"{sum(same)} of {len(same)} orders",
            f"full grid's set {_scales(result.full_set)}",
            Stat.of([float(np.mean(same))]),
            ">= 0.95" if goals else "",
            "races ended on: "
            + ", ".join(f"{s} in {k} orders" for s, k in sorted(ended.items()))
            + f"; within the full grid's set in {sum(run.kept <= result.full_set for run in result.runs)} of "
            f"{len(result.runs)} orders",
        ),
    ]


def measure_race(s: Settings, log: Callable[[str], None]) -> tuple[list[Row], list[RaceReplay]]:
    """Item 9's rows and its raw results, one per folder of `s.race_folders` (the first against the goals); one
    "skipped" row when no folder was given."""
    if not s.race_folders:
        note = "skipped: no results folder to replay (--race-folders DIR,...: a study with every scale x seed and "
        note += "its predictions.npz)"
        return [Row("9", "race / full grid (replayed)", "-", "-", None, "", note, status="skipped")], []
    results = []
    for name in s.race_folders:
        for family in families(Path(name)):
            results.append(replay(s, name, log, family=family))
            if (Path(name) / HISTORY_CSV).exists() and flat_config(Path(name)).get("eval.objective", "full") == "full":
                # its validations, of the objective it chose by: the race over steps too
                results.append(replay(s, name, log, stop=True, family=family))
    first = s.race_folders[0]
    return [row for result in results for row in race_rows(result, goals=result.folder == first)], results

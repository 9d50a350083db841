"""Racing the seeds (`study.race`): a grid study's rounds, kept in its Optuna storage like the grid queue.

`study.seeds` stays the full list; a raced study trains every grid point with the first `study.race.min_seeds` seeds
(the creating process queues them: `race_settings.first_seeds`), then one seed more a round, only for the points
still in. Whenever a worker finds the queue empty and nothing RUNNING (`StudyRunner.run`), `Race.advance` takes the
round's decision from the COMPLETE trials (`sweep.stats.race` says which rule and why), records it as the study
attribute ``sweep.race.round_K`` (K: the seeds it decided on), tags the dropped points' trial runs
(``sweep.race.eliminated_after``) and the parent run (``sweep.race``), and queues the next seed for the survivors.
Every round compares at `Race.round_level`, the pinned level spent over the rounds the race may take, and every
trial run carries that number of rounds (``sweep.race.rounds``) so that the study's report compares at it too.

Taken once: a decision is a function of the stored trials and their logged predictions alone (seeds in a fixed
order, the bootstrap seeded by `stats.seed`), so two workers deciding at the same moment decide alike; the attribute
is written only when absent and every worker acts on the stored one, and points both queue are discarded by the grid
queue's `holder` rule. A worker never trains a point the race has dropped (`Race.dropped`). A rerun continues where
the race stopped: `advance` first queues whatever the current round lacks (a process killed between recording a
decision and queuing its trials), and a round whose point failed for good (diverged) drops that point. The families
raced apart are the conditions of the paired comparison: the swept keys other than the scale (and the seed) when the
scale or temperature is swept, else the whole grid. With `study.race.stop_early` a first-round trial may also be
stopped at a validation (`sweep.study.race_steps`): its point is out from then on (`Race.stopped`), the next round's
record lists it under ``stopped`` and tags its trial runs like an eliminated point's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import optuna
import pandas as pd
from optuna.trial import FrozenTrial, TrialState

from sweep.config import search_space
from sweep.names import (
    ATTR_CONFIG_ERROR,
    ATTR_MLFLOW_RUN_ID,
    ATTR_NOT_RETRIED,
    ATTR_RACE,
    ATTR_RACE_ROUND,
    ATTR_RACE_STOPPED,
    PARAM_SEED,
    TAG_RACE,
    TAG_RACE_ELIMINATED_AFTER,
)
from sweep.stats import (
    ONE_LEFT,
    PairedComparison,
    RoundDecision,
    paired_bootstrap,
    race_round,
    race_rounds,
    round_level,
    seed_comparison,
)
from sweep.study import grid_queue
from sweep.study.race_settings import RaceSettings
from sweep.study.study_logger import StudyLogger

log = logging.getLogger(__name__)

ROUND_PREFIX = ATTR_RACE_ROUND.split("{")[0]


def _value(values: Sequence[Any], value: Any) -> Any:
    """`value` as the grid lists it (20, not the 20.0 Optuna may hand back)."""
    return next((v for v in values if v == value), value)


def _failed_for_good(trial: FrozenTrial) -> bool:
    """A failure no rerun retries (a divergence; a config error is retried once the user fixed it)."""
    attrs = trial.user_attrs
    return trial.state == TrialState.FAIL and bool(attrs.get(ATTR_NOT_RETRIED)) and not attrs.get(ATTR_CONFIG_ERROR)


class Race:
    """The race of one grid study: its points, rounds and records (see the module docstring)."""

    def __init__(
        self,
        objective: str,
        direction: str,
        space: search_space.Space,
        study: optuna.Study,
        tracker: StudyLogger,
    ) -> None:
        """The race of ``study`` (`eval.objective` ``objective``, `study.direction` ``direction``) over the grid
        ``space``, recorded on the parent run of ``tracker`` (and read back from its trial runs)."""
        self.study, self.tracker = study, tracker
        self.space = cast(dict[str, list[Any]], space)  # a grid: `validate` refuses a race over distributions
        self.seeds = list(self.space[PARAM_SEED])
        self.settings = RaceSettings(**study.user_attrs[ATTR_RACE])
        self.full = objective == "full"  # the STSB validation Spearman: its per-pair predictions
        self.sign = -1.0 if direction == "minimize" else 1.0
        axes = {k: v for k, v in space.items() if k != PARAM_SEED}
        self.family_keys = (
            [k for k in axes if k not in search_space.SCALE_KEYS] if set(axes) & set(search_space.SCALE_KEYS) else []
        )
        self.points = {self.key(p): p for p in search_space.grid_points(axes)}

    @property
    def planned_rounds(self) -> int:
        """The rounds the race may take, over which it spends its level (`sweep.stats.race.round_level`)."""
        return race_rounds(len(self.seeds), self.settings.min_seeds)

    @property
    def round_level(self) -> float:
        """The level each round (and each early stop) compares at: the pinned level spent over the rounds."""
        return round_level(self.settings.level, self.planned_rounds)

    def key(self, point: dict[str, Any]) -> str:
        """A point's name in the records: its grid values without the seed, as JSON."""
        return json.dumps({k: _value(self.space[k], point[k]) for k in sorted(point) if k != PARAM_SEED})

    def family(self, key: str) -> str:
        """``name=value, ...`` of the point's condition ("" when the whole grid races as one)."""
        return ", ".join(f"{k}={self.points[key][k]}" for k in self.family_keys)

    def label(self, key: str) -> str:
        """The point as the summary names it: its scale, or ``(name=value, ...)``."""
        point = {k: v for k, v in self.points[key].items() if k not in self.family_keys}
        if len(point) == 1:
            value = next(iter(point.values()))
            return f"{value:g}" if isinstance(value, (int, float)) else str(value)
        return "(" + ", ".join(f"{k}={v}" for k, v in point.items()) + ")"

    def rounds(self) -> dict[int, dict[str, Any]]:
        """The recorded decisions by the seeds they were taken on."""
        attrs = self.study.user_attrs
        return {int(k.removeprefix(ROUND_PREFIX)): v for k, v in attrs.items() if k.startswith(ROUND_PREFIX)}

    def dropped(self, point: dict[str, Any]) -> str | None:
        """How the race dropped `point` (``after K seeds``: eliminated or failed for good; ``stopped ...``: a trial
        of its first rounds stopped at a validation, `study.race.stop_early`), or None."""
        key = self.key(point)
        seeds = next((k for k, r in sorted(self.rounds().items()) if key in r["eliminated"] + r["failed"]), None)
        if seeds is not None:
            return f"after {seeds} seeds"
        stopped = self.stopped().get(key)
        return f"stopped early ({stopped})" if stopped else None

    def stopped(self) -> dict[str, str]:
        """The points a trial of the first rounds was stopped for at a validation (`sweep.study.race_steps`), each
        with the reason recorded on that trial."""
        return {
            self.key(grid_queue.grid_point(t)): str(t.user_attrs[ATTR_RACE_STOPPED])
            for t in self.study.get_trials(deepcopy=False, states=[TrialState.PRUNED])
            if ATTR_RACE_STOPPED in t.user_attrs
        }

    def first_round(self, seed: Any) -> bool:
        """Whether `seed` is one of the first `study.race.min_seeds`, with which every point is trained."""
        return _value(self.seeds, seed) in self.seeds[: self.settings.min_seeds]

    def racing(self, rounds: dict[int, dict[str, Any]]) -> list[str]:
        """The points still in the race after `rounds`: not dropped or stopped, in a family whose race has not
        ended."""
        out = {key for r in rounds.values() for key in r["eliminated"] + r["failed"]} | set(self.stopped())
        ended = {family for r in rounds.values() for family in r["ended"]}
        return [key for key in self.points if key not in out and self.family(key) not in ended]

    def families(self, keys: Sequence[str]) -> dict[str, list[str]]:
        """`keys` by family, in grid order."""
        grouped: dict[str, list[str]] = {}
        for key in keys:
            grouped.setdefault(self.family(key), []).append(key)
        return grouped

    def advance(self) -> bool:
        """Queue what the current round lacks, or decide it and queue the next; True when there are trials to train
        (the run goes on), False when the race is over or waits for a rerun (a point whose retries this run used)."""
        while True:
            rounds = self.rounds()
            if max(rounds, default=0) >= len(self.seeds):
                return False
            seeds = self.seeds[: max(rounds, default=self.settings.min_seeds - 1) + 1]
            racing = self.racing(rounds)
            if not racing:
                return False
            trials = self._trials()
            lacking = [(k, s) for k in racing for s in seeds if (k, s) not in trials]
            for key, seed in lacking:
                grid_queue.enqueue_point(self.study, {**self.points[key], PARAM_SEED: seed})
            held = [trials[(k, s)].state for k in racing for s in seeds if (k, s) in trials]
            if lacking or TrialState.WAITING in held or TrialState.RUNNING in held:
                return True
            failed = [k for k in racing for s in seeds if trials[(k, s)].state == TrialState.FAIL]
            diverged = {k for k in failed for s in seeds if _failed_for_good(trials[(k, s)])}
            if set(failed) - diverged:
                log.warning("race: the round of %d seeds waits for failed points (rerun to train them)", len(seeds))
                return False
            self._record(len(seeds), racing, diverged, trials)

    def _trials(self) -> dict[tuple[str, Any], FrozenTrial]:
        """(point, seed) -> the lowest-numbered trial that holds it, else its latest failed one."""
        found: dict[tuple[str, Any], FrozenTrial] = {}
        for trial in sorted(self.study.get_trials(deepcopy=False), key=lambda t: t.number):
            point = grid_queue.grid_point(trial)
            if PARAM_SEED not in point:
                continue
            where = (self.key(point), _value(self.seeds, point[PARAM_SEED]))
            if where in found and grid_queue.is_holding(found[where]):
                continue
            if grid_queue.is_holding(trial) or trial.state == TrialState.FAIL:
                found[where] = trial
        return found

    def _record(self, n_seeds: int, racing: list[str], failed: set[str], trials: dict) -> None:
        """Decide the round of `n_seeds` seeds per family, write it once and tag what it dropped (the points it
        compared and put out, and those stopped at a validation since the last round: `stop_early`)."""
        earlier = {key for r in self.rounds().values() for key in r.get("stopped", [])}
        stopped = sorted(set(self.stopped()) - earlier)
        record: dict[str, Any] = {"kept": [], "eliminated": [], "failed": sorted(failed), "ended": {}, "method": ""}
        record["stopped"] = stopped
        for family, members in self.families(racing).items():
            decision, method = self._decide([k for k in members if k not in failed], n_seeds, trials)
            record["kept"] += decision.kept
            record["eliminated"] += decision.eliminated
            record["method"] = record["method"] or method
            if decision.end:
                record["ended"][family] = decision.end
        name = ATTR_RACE_ROUND.format(seeds=n_seeds)
        if name not in self.study.user_attrs:  # a worker that decided the same round first: its record stands
            self.study.set_user_attr(name, record)
        stored = self.study.user_attrs[name]
        lines = self.lines()
        log.info("%s", "\n".join(lines))
        for key in stored["eliminated"] + stored.get("stopped", []):
            for seed in self.seeds[:n_seeds]:
                if (key, seed) in trials:  # a stopped point's discarded trial has no run
                    run_id = trials[(key, seed)].user_attrs.get(ATTR_MLFLOW_RUN_ID)
                    self._tag(run_id, TAG_RACE_ELIMINATED_AFTER, str(n_seeds))
        self._tag(self.tracker.parent_run_id, TAG_RACE, "; ".join(lines))

    def _tag(self, run_id: str | None, key: str, value: str) -> None:
        if run_id:
            self.tracker.set_tag(run_id, key, value)

    def _decide(self, members: list[str], n_seeds: int, trials: dict) -> tuple[RoundDecision, str]:
        """One family's decision on its first `n_seeds` seeds (sorted, so that the decision does not depend on the
        order the seeds are listed in), and the method it rested on."""
        if len(members) < 2:
            return RoundDecision(members, [], ONE_LEFT if members else ""), ""
        seeds = sorted(self.seeds[:n_seeds])
        comparison = self._compare(sorted(members), seeds, trials)
        return race_round(comparison.table, n_seeds, len(self.seeds), self.settings.margin), comparison.method()

    def _compare(self, members: list[str], seeds: list[Any], trials: dict) -> PairedComparison:
        """The paired comparison of the members: the paired bootstrap over their logged STSB validation predictions
        when the objective is that Spearman, else (another objective, or predictions the tracking store does not
        have) the per-seed t over the trials' objective values."""
        s = self.settings
        level = self.round_level
        grid = [[trials[(key, seed)] for seed in seeds] for key in members]
        if self.full:
            self.tracker.flush()  # this worker's own predictions, if an outage held them back
            loaded = [[self._predictions(t) for t in row] for row in grid]
            if all(table is not None for row in loaded for table in row):
                tables = cast(list[list[pd.DataFrame]], loaded)
                gold = tables[0][0]["gold"].to_numpy()
                cosines = np.asarray([[table["cosine"].to_numpy() for table in row] for row in tables])
                return paired_bootstrap(gold, cosines, members, s.resamples, level, s.seed, s.margin)
            log.warning("race: a trial's predictions are missing: deciding from one score per trial")
        values = np.asarray([[self.sign * float(t.value) for t in row] for row in grid])
        return seed_comparison(values, members, level, s.margin)

    def _predictions(self, trial: FrozenTrial) -> pd.DataFrame | None:
        run_id = trial.user_attrs.get(ATTR_MLFLOW_RUN_ID)
        return self.tracker.validation_predictions(run_id) if run_id else None

    def lines(self) -> list[str]:
        """Per family: ``race: eliminated after 2 seeds: 1, 2, 50; eliminated after 3 seeds: 20; ended after 3 seeds
        (every seed is used): 10, 15 left``, or ``...; still racing: 10, 15, 20``."""
        rounds, stopped = self.rounds(), self.stopped()
        dropped = {key for r in rounds.values() for key in r["eliminated"] + r["failed"]} | set(stopped)
        lines = []
        for family, members in self.families(list(self.points)).items():
            parts = []
            early = [self.label(k) for k in members if k in stopped]
            if early:
                parts.append(
                    f"stopped at a validation of the first {self.settings.min_seeds} seeds: {', '.join(early)}"
                )
            for n_seeds, record in sorted(rounds.items()):
                for what, field in (("eliminated", "eliminated"), ("failed for good (diverged)", "failed")):
                    named = [self.label(k) for k in members if k in record[field]]
                    if named:
                        parts.append(f"{what} after {n_seeds} seeds: {', '.join(named)}")
            left = ", ".join(self.label(k) for k in members if k not in dropped) or "none"
            end = next(((n, r["ended"][family]) for n, r in sorted(rounds.items()) if family in r["ended"]), None)
            parts.append(f"ended after {end[0]} seeds ({end[1]}): {left} left" if end else f"still racing: {left}")
            lines.append(f"race{', ' + family if family else ''}: {'; '.join(parts)}")
        return lines

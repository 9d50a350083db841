"""Racing the seeds (`study.race`): a grid study's rounds, kept in its Optuna storage like the grid queue.

`study.seeds` stays the full list; a raced study trains every grid point with the first `study.race.min_seeds` seeds
(the creating process queues them: `first_seeds`), then one seed more a round, only for the points still in.
Whenever a worker finds the queue empty and nothing RUNNING (`StudyRunner.run`), `Race.advance` takes the round's
decision from the COMPLETE trials (`sweep.stats.race` says which rule and why), records it as the study attribute
``sweep.race.round_K`` (K: the seeds it decided on), tags the dropped points' trial runs
(``sweep.race.eliminated_after``) and the parent run (``sweep.race``), and queues the next seed for the survivors.

Taken once: a decision is a function of the stored trials and their logged predictions alone (seeds in a fixed
order, the bootstrap seeded by `stats.seed`), so two workers deciding at the same moment decide alike; the attribute
is written only when absent and every worker acts on the stored one, and points both queue are discarded by the grid
queue's `holder` rule. A worker never trains a point the race has dropped (`Race.dropped`). A rerun continues where
the race stopped: `advance` first queues whatever the current round lacks (a process killed between recording a
decision and queuing its trials), and a round whose point failed for good (diverged) drops that point. The families
raced apart are the conditions of the paired comparison: the swept keys other than the scale (and the seed) when the
scale or temperature is swept, else the whole grid.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import numpy as np
import optuna
import pandas as pd
from omegaconf import DictConfig
from optuna.trial import FrozenTrial, TrialState

from sweep.config import search_space
from sweep.config.schema import RaceConfig, StatsConfig
from sweep.errors import ConfigError
from sweep.evaluation.predictions import load_predictions
from sweep.names import (
    ATTR_CONFIG_ERROR,
    ATTR_MLFLOW_RUN_ID,
    ATTR_NOT_RETRIED,
    ATTR_RACE,
    ATTR_RACE_ROUND,
    PARAM_SEED,
    TAG_RACE,
    TAG_RACE_ELIMINATED_AFTER,
)
from sweep.stats.paired_bootstrap import PairedComparison, paired_bootstrap, seed_comparison
from sweep.stats.race import ONE_LEFT, RoundDecision, race_round
from sweep.study import grid_queue
from sweep.tracking.mlflow_client import TrackingClient

log = logging.getLogger(__name__)

ROUND_PREFIX = ATTR_RACE_ROUND.split("{")[0]


@dataclass(frozen=True)
class RaceSettings:
    """What a race's decisions depend on, pinned in the study attribute ``sweep.race`` when it is created."""

    min_seeds: int
    level: float
    margin: float
    resamples: int
    seed: int

    KEYS = {
        "min_seeds": "study.race.min_seeds",
        "level": "stats.paired.level",
        "margin": "stats.paired.margin",
        "resamples": "stats.paired.resamples",
        "seed": "stats.seed",
    }

    @classmethod
    def of(cls, race: RaceConfig, stats: StatsConfig) -> RaceSettings:
        """The settings of `study.race` (``race``) and the `stats` section."""
        paired = stats.paired
        return cls(race.min_seeds, paired.level, paired.margin, paired.resamples, stats.seed)


def validate(study: DictConfig, space: search_space.Space) -> None:
    """`study.race` checks (of the `study` section), before any training: a race needs `study.seeds` to race over, a
    grid, whole trials (no pruner) and 2 <= `study.race.min_seeds` <= the number of seeds."""
    race = study.race
    if not race.enabled:
        return
    seeds = list(study.seeds or [])
    if len(seeds) < 2:
        raise ConfigError(
            "study.race.enabled", True, "races over seeds: give study.seeds, e.g. study.seeds=[0,1,2,3,4]"
        )
    if not space or not search_space.is_grid(space):
        raise ConfigError("study.race.enabled", True, "races grid points: give every study.search_space key a list")
    if study.pruner.name != "none" or study.pruner.get("_target_") is not None:
        raise ConfigError("study.race.enabled", True, "needs whole trials: set study.pruner.name=none")
    if not isinstance(race.min_seeds, int) or not 2 <= race.min_seeds <= len(seeds):
        raise ConfigError("study.race.min_seeds", race.min_seeds, f"must be 2 to {len(seeds)} (the study.seeds)")


def pin(study: optuna.Study, race: RaceConfig, stats: StatsConfig, created: bool) -> None:
    """Record a new study's race settings (`study.race`, the `stats` section), or refuse a rerun whose race settings
    differ from the recorded ones (its rounds would be decided by another rule)."""
    wanted = asdict(RaceSettings.of(race, stats)) if race.enabled else None
    if created:
        if wanted is not None:
            study.set_user_attr(ATTR_RACE, wanted)
        return
    recorded = study.user_attrs.get(ATTR_RACE)
    if recorded == wanted:
        return
    if recorded is None or wanted is None:
        how = "without racing" if recorded is None else f"racing ({recorded})"
        raise ConfigError(
            "study.race.enabled",
            wanted is not None,
            f"study {study.study_name!r} was created {how}: use a new name=...",
        )
    key = next(k for k in RaceSettings.KEYS if recorded.get(k) != wanted[k])
    raise ConfigError(
        RaceSettings.KEYS[key], wanted[key], f"study {study.study_name!r} races with {recorded[key]}: give that"
    )


def first_seeds(study: DictConfig) -> list[int] | None:
    """The seeds the creating process queues (of the `study` section): the first `study.race.min_seeds` when racing,
    else all (None)."""
    return list(study.seeds)[: study.race.min_seeds] if study.race.enabled else None


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
        client: TrackingClient,
        parent: str,
    ) -> None:
        """The race of ``study`` (`eval.objective` ``objective``, `study.direction` ``direction``) over the grid
        ``space``, recorded on the MLflow run ``parent``."""
        self.study, self.client, self.parent = study, client, parent
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

    def dropped(self, point: dict[str, Any]) -> int | None:
        """The seeds after which the race dropped `point` (eliminated or failed for good), or None."""
        key = self.key(point)
        return next((k for k, r in sorted(self.rounds().items()) if key in r["eliminated"] + r["failed"]), None)

    def racing(self, rounds: dict[int, dict[str, Any]]) -> list[str]:
        """The points still in the race after `rounds`: not dropped, in a family whose race has not ended."""
        out = {key for r in rounds.values() for key in r["eliminated"] + r["failed"]}
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
        """Decide the round of `n_seeds` seeds per family, write it once and tag what it dropped."""
        record: dict[str, Any] = {"kept": [], "eliminated": [], "failed": sorted(failed), "ended": {}, "method": ""}
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
        for key in stored["eliminated"]:
            for seed in self.seeds[:n_seeds]:
                run_id = trials[(key, seed)].user_attrs.get(ATTR_MLFLOW_RUN_ID)
                self._tag(run_id, TAG_RACE_ELIMINATED_AFTER, str(n_seeds))
        self._tag(self.parent, TAG_RACE, "; ".join(lines))

    def _tag(self, run_id: str | None, key: str, value: str) -> None:
        if run_id:
            tag = functools.partial(self.client.set_tag, run_id, key, value[:5000])
            self.client.writer.write(f"set the tag {key}", tag)

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
        grid = [[trials[(key, seed)] for seed in seeds] for key in members]
        if self.full:
            self.client.writer.flush()  # this worker's own predictions, if an outage held them back
            loaded = [[self._predictions(t) for t in row] for row in grid]
            if all(table is not None for row in loaded for table in row):
                tables = cast(list[list[pd.DataFrame]], loaded)
                gold = tables[0][0]["gold"].to_numpy()
                cosines = np.asarray([[table["cosine"].to_numpy() for table in row] for row in tables])
                return paired_bootstrap(gold, cosines, members, s.resamples, s.level, s.seed, s.margin)
            log.warning("race: a trial's predictions are missing: deciding from one score per trial")
        values = np.asarray([[self.sign * float(t.value) for t in row] for row in grid])
        return seed_comparison(values, members, s.level, s.margin)

    def _predictions(self, trial: FrozenTrial) -> pd.DataFrame | None:
        run_id = trial.user_attrs.get(ATTR_MLFLOW_RUN_ID)
        return load_predictions(self.client, run_id, "validation") if run_id else None

    def lines(self) -> list[str]:
        """Per family: ``race: eliminated after 2 seeds: 1, 2, 50; eliminated after 3 seeds: 20; ended after 3 seeds
        (every seed is used): 10, 15 left``, or ``...; still racing: 10, 15, 20``."""
        rounds = self.rounds()
        dropped = {key for r in rounds.values() for key in r["eliminated"] + r["failed"]}
        lines = []
        for family, members in self.families(list(self.points)).items():
            parts = []
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

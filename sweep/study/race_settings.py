"""A race's settings (`study.race`): checked before any training, pinned on the Optuna study when it is created so
that a rerun decides its rounds by the same rule, and the seeds its creating process queues first.

`sweep.study.race` runs the rounds; these are what its decisions depend on: `study.race.min_seeds` and
`study.race.stop_early`, and the `stats` section's paired settings and seed (the verdict engine's).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import optuna

from sweep.config import RaceConfig, StatsConfig, StudyConfig, search_space
from sweep.errors import ConfigError
from sweep.names import ATTR_RACE


@dataclass(frozen=True)
class RaceSettings:
    """What a race's decisions depend on, pinned in the study attribute ``sweep.race`` when it is created."""

    min_seeds: int
    level: float
    margin: float
    resamples: int
    seed: int
    stop_early: bool = False  # absent from the records of races created before it existed

    KEYS = {
        "min_seeds": "study.race.min_seeds",
        "stop_early": "study.race.stop_early",
        "level": "stats.paired.level",
        "margin": "stats.paired.margin",
        "resamples": "stats.paired.resamples",
        "seed": "stats.seed",
    }

    @classmethod
    def of(cls, race: RaceConfig, stats: StatsConfig) -> RaceSettings:
        """The settings of `study.race` (``race``) and the `stats` section."""
        paired = stats.paired
        return cls(race.min_seeds, paired.level, paired.margin, paired.resamples, stats.seed, race.stop_early)


def validate(study: StudyConfig, space: search_space.Space, objective: str = "full") -> None:
    """`study.race` checks (of the `study` section), before any training: a race needs `study.seeds` to race over, a
    grid, whole trials (no pruner) and 2 <= `study.race.min_seeds` <= the number of seeds; `study.race.stop_early`
    needs a race, one trial at a time (`study.pack=1`) and the STSB validation Spearman as the objective
    (`eval.objective=full`): it judges a trial by what the trial reports at each evaluation, which is that Spearman,
    and another objective is scored once, at the end."""
    race = study.race
    if not race.enabled:
        if race.stop_early:
            raise ConfigError("study.race.stop_early", True, "stops raced trials: also set study.race.enabled=true")
        return
    seeds = list(study.seeds or [])
    if len(seeds) < 2:
        raise ConfigError(
            "study.race.enabled", True, "races over seeds: give study.seeds, e.g. study.seeds=[0,1,2,3,4]"
        )
    if not space or not search_space.is_grid(space):
        raise ConfigError("study.race.enabled", True, "races grid points: give every study.search_space key a list")
    if study.pruner.name != "none" or study.pruner._target_ is not None:
        raise ConfigError("study.race.enabled", True, "needs whole trials: set study.pruner.name=none")
    if not isinstance(race.min_seeds, int) or not 2 <= race.min_seeds <= len(seeds):
        raise ConfigError("study.race.min_seeds", race.min_seeds, f"must be 2 to {len(seeds)} (the study.seeds)")
    if race.stop_early and study.pack > 1:
        raise ConfigError("study.race.stop_early", True, "stops one trial at a time: set study.pack=1")
    if race.stop_early and objective != "full":
        raise ConfigError(
            "study.race.stop_early",
            True,
            f"judges trials by the STSB validation Spearman of each evaluation, not eval.objective={objective} "
            "(scored at the end): set study.race.stop_early=false",
        )


def pin(study: optuna.Study, race: RaceConfig, stats: StatsConfig, created: bool) -> None:
    """Record a new study's race settings (`study.race`, the `stats` section), or refuse a rerun whose race settings
    differ from the recorded ones (its rounds would be decided by another rule)."""
    wanted = asdict(RaceSettings.of(race, stats)) if race.enabled else None
    if created:
        if wanted is not None:
            study.set_user_attr(ATTR_RACE, wanted)
        return
    recorded = study.user_attrs.get(ATTR_RACE)
    if recorded is not None:
        recorded = {**asdict(RaceSettings(**recorded)), **recorded}  # a key added since: its default
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


def first_seeds(study: StudyConfig) -> list[int] | None:
    """The seeds the creating process queues (of the `study` section): the first `study.race.min_seeds` when racing,
    else all (None)."""
    return list(study.seeds or [])[: study.race.min_seeds] if study.race.enabled else None

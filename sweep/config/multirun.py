"""Hydra's multirun (`python -m sweep -m ...`): every job is its own study. The jobs of a multirun run one after the
other in one process, each opening the study `study.name` in `study.storage`; two jobs that name the same study would
share it, and the second would continue the first's study (its grid already trained: nothing of its own). Jobs whose
experiments set distinct names (``-m +experiment=mnrl_scale,my_study``) run as they are; a multirun whose jobs
share a study is refused before any job starts (`shared_study`), with the fix: a name per job.

The check runs in the Hydra callback that validates the config at the start of the multirun (`sweep.app`, which
prints its line): it expands the sweep the way Hydra's basic sweeper does (`job_overrides`), composes every job's
config with Hydra's own loader and hands each job here as a `Job`. A multirun through another sweeper plugin is not
checked."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.conf import HydraConf
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser

from sweep.config.schema import StudyConfig
from sweep.errors import ConfigError

BASIC_SWEEPER = f"{BasicSweeper.__module__}.{BasicSweeper.__name__}"


@dataclass(frozen=True)
class Job:
    """One job of a multirun, as the check of shared studies reads it: its overrides, its `name`, its `study` section
    (`paths.root` made absolute as the run will make it) and a look-up of any other dotted key of its config."""

    overrides: list[str]
    name: Any
    study: StudyConfig
    select: Callable[[str], Any]

    @property
    def study_key(self) -> tuple[str, str]:
        """(storage URL, study name): the Optuna study the job opens."""
        return str(self.study.storage), str(self.study.name)


def job_overrides(hydra: HydraConf) -> list[list[str]]:
    """The overrides of each job of the multirun whose Hydra config (the ``hydra`` node) is `hydra`, in Hydra's order
    (the cartesian product of the swept values); none when another sweeper than Hydra's basic one expands the
    sweep."""
    if hydra.sweeper.get("_target_") != BASIC_SWEEPER:
        return []
    params = hydra.sweeper.get("params") or {}
    arguments = [f"{key}={value}" for key, value in params.items()] + list(hydra.overrides.task)
    parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
    batches = BasicSweeper.split_arguments(parser.parse_overrides(arguments), max_batch_size=None)
    return [job for batch in batches for job in batch]


def _naming_example(name: str, first: Sequence[str], second: Job) -> str:
    """`name=...` putting a value the two jobs differ in into the name, when one is a plain config value."""
    differing = [text.split("=", 1)[0].lstrip("+~") for text in second.overrides if text not in first]
    keys = [key for key in differing if "." in key and second.select(key) is not None]
    return f"'name={name}_${{{keys[0]}}}'" if keys else "name=... per job"


def shared_study(jobs: Sequence[Job]) -> ConfigError | None:
    """The refusal of a multirun two of whose jobs would open the same study; None when every job has its own."""
    first_of: dict[tuple[str, str], list[str]] = {}
    for job in jobs:
        study = job.study_key
        if study not in first_of:
            first_of[study] = job.overrides
            continue
        first, name = first_of[study], study[1]
        key = "name" if job.name == name else "study.name"
        return ConfigError(
            key,
            name,
            f"is the study of two jobs of this multirun ({' '.join(first)} | {' '.join(job.overrides)}): the second "
            f"would continue the first's study and train nothing of its own; give each job its own name, e.g. "
            f"{_naming_example(name, first, job)}, or sweep the key inside one study (study.search_space)",
        )
    return None

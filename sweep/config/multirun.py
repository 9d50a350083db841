"""Hydra's multirun (`python -m sweep -m ...`): every job is its own study. The jobs of a multirun run one after the
other in one process, each opening the study `study.name` in `study.storage`; two jobs that name the same study would
share it, and the second would continue the first's study (its grid already trained: nothing of its own). Jobs whose
experiments set distinct names (``-m +experiment=mnrl_scale,my_study``) run as they are; a multirun whose jobs
share a study is refused before any job starts (`shared_study`), with the fix: a name per job.

The check runs as a Hydra callback at the start of the multirun (`hydra.callbacks` in conf/config.yaml, `sweep.app`
prints its line): it expands the sweep the way Hydra's basic sweeper does (`job_overrides`) and composes every job's
config with Hydra's own loader (`composed_jobs`). A multirun through another sweeper plugin is not checked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from sweep.config.checks import with_values
from sweep.errors import ConfigError

BASIC_SWEEPER = f"{BasicSweeper.__module__}.{BasicSweeper.__name__}"
Job = tuple[list[str], DictConfig]  # a job's overrides and its composed config


def job_overrides(master: DictConfig) -> list[list[str]]:
    """The overrides of each job of the multirun whose config is `master`, in Hydra's order (the cartesian product
    of the swept values); none when another sweeper than Hydra's basic one expands the sweep."""
    if master.hydra.sweeper.get("_target_") != BASIC_SWEEPER:
        return []
    params = master.hydra.sweeper.get("params") or {}
    arguments = [f"{key}={value}" for key, value in params.items()] + list(master.hydra.overrides.task)
    parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
    batches = BasicSweeper.split_arguments(parser.parse_overrides(arguments), max_batch_size=None)
    return [job for batch in batches for job in batch]


def composed_jobs(master: DictConfig) -> list[Job]:
    """Every job of the multirun with its config, composed as Hydra composes it before launching the job."""
    loader = GlobalHydra.instance().config_loader()
    return [(overrides, loader.load_sweep_config(master, overrides)) for overrides in job_overrides(master)]


def study_of(job: DictConfig) -> tuple[str, str]:
    """(storage URL, study name) of a job's config, with `paths.root` made absolute as the run will make it."""
    root = str(Path(job.paths.root).expanduser().resolve())
    resolved = with_values(job, {"paths.root": root})
    return str(resolved.study.storage), str(resolved.study.name)


def _naming_example(name: str, first: Sequence[str], second: Sequence[str], job: DictConfig) -> str:
    """`name=...` putting a value the two jobs differ in into the name, when one is a plain config value."""
    differing = [text.split("=", 1)[0].lstrip("+~") for text in second if text not in first]
    keys = [key for key in differing if "." in key and OmegaConf.select(job, key) is not None]
    return f"'name={name}_${{{keys[0]}}}'" if keys else "name=... per job"


def shared_study(jobs: Sequence[Job]) -> ConfigError | None:
    """The refusal of a multirun two of whose jobs would open the same study; None when every job has its own."""
    first_of: dict[tuple[str, str], list[str]] = {}
    for overrides, job in jobs:
        study = study_of(job)
        if study not in first_of:
            first_of[study] = overrides
            continue
        first, name = first_of[study], study[1]
        key = "name" if job.name == name else "study.name"
        return ConfigError(
            key,
            name,
            f"is the study of two jobs of this multirun ({' '.join(first)} | {' '.join(overrides)}): the second would "
            f"continue the first's study and train nothing of its own; give each job its own name, e.g. "
            f"{_naming_example(name, first, overrides, job)}, or sweep the key inside one study (study.search_space)",
        )
    return None

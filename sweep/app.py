"""The top layer: the Hydra application behind `python -m sweep` (composition, the one validation pass before Hydra
creates any folder, exit codes). The composed config stops here: it is typed by its schema once (`SweepConfig`),
checked once, and what runs below takes its sections. What training needs is imported only once the config is
valid (`sweep.study_command`: the study, its workers, the printed summary), so that `--help` and a refusal answer
in seconds."""

from __future__ import annotations

import copy
import functools
import logging
import os
import sys
from pathlib import Path
from typing import Any, cast

import hydra
import yaml
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from sweep.config import CONFIG_DIR, SweepConfig, config_error, multirun, with_values, yaml_error
from sweep.errors import ConfigError
from sweep.signals import (
    StopSignals,
    check_stop,
    exit_code,
    follow_parent,
    is_spawned_worker,
    quiet_interrupt_tracebacks,
    signal_name,
)
from sweep.study import recorded_answer, unwritable

# Hydra prints an error it meets while composing the config (a value the schema refuses, an unknown key) itself, over
# several lines, and exits 1, unless HYDRA_FULL_ERROR is set: `main` sets it while Hydra composes, so that the error
# reaches it as an exception, and gives the user's setting back as the run starts (`_composed`).
FULL_ERROR = "HYDRA_FULL_ERROR"
log = logging.getLogger("sweep")
_composing: dict[str, str | None] = {}  # {FULL_ERROR: the user's value} while Hydra composes


# The task configs (`_task_config`) the callback validated, as YAML: `run` does not validate them again.
_validated: set[str] = set()


def _task_config(config: DictConfig) -> DictConfig:
    """A composed config without its ``hydra`` node: what Hydra hands the task function."""
    task = copy.deepcopy(config)
    with open_dict(task):
        task.pop("hydra", None)
    return task


def multirun_job(overrides: list[str], config: DictConfig) -> multirun.Job:
    """One job of a multirun as the check of shared studies reads it (`sweep.config.multirun`), with `paths.root`
    made absolute as the run will make it."""
    root = str(Path(config.paths.root).expanduser().resolve())
    study = with_values(config, {"paths.root": root}).study
    return multirun.Job(overrides, config.name, study, functools.partial(OmegaConf.select, config))


def _refuse_invalid(jobs: list[DictConfig], refusal: ConfigError | None = None) -> None:
    """The one validation pass (`check_config`) over the composed config of every job: every error printed, one line
    each, and exit code 2 before Hydra creates any folder (with `refusal`, a multirun's own, first)."""
    from sweep.study import validation  # the checks' libraries: not imported for `--help`

    errors = [refusal] if refusal is not None else []
    for job in jobs:
        task = _task_config(job)
        try:
            validation.check_config(cast(SweepConfig, task), list(job.hydra.overrides.task))
        except ConfigError as error:
            errors.append(error)
        else:
            _validated.add(OmegaConf.to_yaml(task))
    if errors:
        for found in errors:
            _print_invalid(found)
        sys.exit(2)


def _print_invalid(error: ConfigError) -> None:
    for line in str(error).splitlines():
        print(f"sweep: invalid config: {line}", file=sys.stderr)


class ValidConfig(Callback):
    """`hydra.callbacks` (conf/config.yaml): the config of the run, or of every job of a multirun, goes through the one
    validation pass before Hydra creates its output folder from it (``hydra/${name}/...``) or any job starts: every
    error printed, one line each, exit code 2. A multirun two of whose jobs would share a study is refused with them
    (`sweep.config.multirun`)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _refuse_invalid([config])

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        loader = GlobalHydra.instance().config_loader()
        try:
            jobs = [(o, loader.load_sweep_config(config, o)) for o in multirun.job_overrides(config.hydra)]
            refusal = multirun.shared_study([multirun_job(overrides, job) for overrides, job in jobs])
        except (HydraException, OmegaConfBaseException):  # a job that does not compose: Hydra's check says which
            return
        _refuse_invalid([job for _, job in jobs], refusal)


def _worker_arguments() -> list[str]:
    """The command-line arguments of this run for its extra workers: a multirun job's are its own overrides (the
    command line would start the whole multirun in each worker), after the ``--config-dir`` folders it was given (a
    user's experiments there compose in the workers too)."""
    hydra_config = HydraConfig.get()
    if hydra_config.mode != RunMode.MULTIRUN:
        return sys.argv[1:]
    sources = hydra_config.runtime.config_sources
    folders = [f"--config-dir={s.path}" for s in sources if s.provider == "command-line" and s.schema == "file"]
    return [*folders, *hydra_config.overrides.task]


def _composed() -> None:
    """The config is composed: the user's HYDRA_FULL_ERROR again (errors of the run are reported as before)."""
    if FULL_ERROR in _composing:
        user_value = _composing.pop(FULL_ERROR)
        if user_value is None:
            os.environ.pop(FULL_ERROR, None)
        else:
            os.environ[FULL_ERROR] = user_value


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")
def run(cfg: DictConfig) -> None:
    _composed()
    StopSignals().install()  # SIGTERM (preemption, timeout, docker stop) ends a run as Ctrl-C does
    follow_parent()
    quiet_interrupt_tracebacks()
    validated = OmegaConf.to_yaml(cfg) in _validated  # by `ValidConfig`, before Hydra's folder (else: now)
    answer_key = recorded_answer.config_key(OmegaConf.to_yaml(cfg, resolve=True))
    if validated and not is_spawned_worker():  # a finished study run again: its answer as it was printed, at once
        lines = recorded_answer.recorded(cfg.study.storage, cfg.study.name, answer_key)
        if lines is not None:
            log.info("study %s is complete: nothing to train", cfg.study.name)
            print("\n".join(lines))
            return
    try:
        check_stop()  # a signal while importing that a finalizer dropped (sweep.signals.stop_while_importing)
        from sweep import study_command  # what training needs: not imported for `--help` or a refused config

        # the composed config, typed by its schema (a DictConfig of SweepConfig)
        opened = study_command.open_study(cast(SweepConfig, cfg), list(HydraConfig.get().overrides.task), validated)
    except ConfigError as error:
        _print_invalid(error)
        sys.exit(2)
    except KeyboardInterrupt as early:  # before any trial started: nothing to clean up
        print(f"sweep: interrupted by {signal_name(early)} before training started", file=sys.stderr)
        sys.exit(exit_code(early))
    study_command.run_study(opened, _worker_arguments(), answer_key)


def main() -> None:
    """`python -m sweep ARGS`: the Hydra app, where a config Hydra cannot compose (a value of the wrong type, a key the
    schema does not have, an unknown option, an override that does not parse) is refused like every other invalid
    config: one line naming the key, exit code 2."""
    _composing[FULL_ERROR] = os.environ.get(FULL_ERROR)
    os.environ[FULL_ERROR] = "1"
    try:
        run()
    except (HydraException, OmegaConfBaseException) as error:
        translated = config_error(error, sys.argv[1:]) if FULL_ERROR in _composing else None
        if translated is None:  # raised by the run, not while composing
            raise
        print(f"sweep: invalid config: {translated}", file=sys.stderr)
        sys.exit(2)
    except yaml.YAMLError as error:  # a config file of the user's that is not YAML, found while composing
        if FULL_ERROR not in _composing:
            raise
        print(f"sweep: invalid config: {yaml_error(error)}", file=sys.stderr)
        sys.exit(2)
    except OSError as error:
        if FULL_ERROR not in _composing:  # raised by the run, not while Hydra set up its output folder
            raise
        where = ConfigError("paths.root", error.filename, unwritable(error))  # Hydra's output folder, under it
        print(f"sweep: invalid config: {where}", file=sys.stderr)
        sys.exit(2)
    finally:
        _composed()


if __name__ == "__main__":
    main()

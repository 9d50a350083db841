"""The answer a finished study printed, kept with the study (an Optuna study attribute), so that the same command run
again prints it at once: no training library imported, no MLflow opened, nothing recomputed or logged again, the
study's recorded times untouched.

A recorded answer is printed only while it still holds: for the same config (the hash of its YAML), with the trials
it was computed from (as many in each state), none waiting or running. Anything else (a changed key, a new seed,
a point that failed, a worker's process) takes the full path, which trains what is left and records the answer
again. Imports only Optuna and the config layer: it runs before `sweep.study_command`."""

from __future__ import annotations

import hashlib
import logging
from collections import Counter

import optuna
from optuna.trial import TrialState
from sqlalchemy.exc import SQLAlchemyError

from sweep.config import missing_store

ATTR_ANSWER = "sweep.answer"  # {"config": config_key, "trials": {state: count}, "lines": printed lines}
UNFINISHED = (TrialState.WAITING, TrialState.RUNNING)

log = logging.getLogger(__name__)


def config_key(config_yaml: str) -> str:
    """The hash of the composed config's YAML (``OmegaConf.to_yaml(config, resolve=True)``): a recorded answer holds
    for this config."""
    return hashlib.sha256(config_yaml.encode()).hexdigest()


def _trial_states(study: optuna.Study) -> dict[str, int]:
    """{state name: trials in it}: what an answer was computed from."""
    return dict(Counter(trial.state.name for trial in study.get_trials(deepcopy=False)))


def record(study: optuna.Study, key: str, lines: list[str]) -> None:
    """Keep the `lines` a finished study printed, for the config of `key` and the trials the study holds now."""
    study.set_user_attr(ATTR_ANSWER, {"config": key, "trials": _trial_states(study), "lines": lines})


def recorded(storage: str, study_name: str, key: str) -> list[str] | None:
    """The lines recorded for the study `study_name` in `storage` when they still hold for the config of `key`, else
    None (no store, no study, no answer, or one that no longer holds). Never creates a store."""
    if missing_store(storage) is not None:
        return None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.load_study(study_name=study_name, storage=storage)
    except (KeyError, SQLAlchemyError, RuntimeError, OSError) as error:  # the full path names what is wrong
        log.debug("no recorded answer (no such study, or a store it cannot read): %s", error)
        return None
    answer = study.user_attrs.get(ATTR_ANSWER)
    if not isinstance(answer, dict) or answer.get("config") != key:
        return None
    states = _trial_states(study)
    if answer.get("trials") != states or any(state.name in states for state in UNFINISHED):
        return None
    lines = answer.get("lines")
    return [str(line) for line in lines] if isinstance(lines, list) else None

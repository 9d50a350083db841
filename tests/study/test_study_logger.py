"""A study tracked by another `StudyLogger` than MLflow's: `open_sweep(cfg, tracker=...)` with an in-memory logger
trains a real (tiny) study, and the logger hears every hook a study calls, in order, with MLflow never opened: the
tracking is the study's callback, as optuna-integration's `MLflowCallback` is an Optuna study's."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState

from sweep.names import ATTR_MLFLOW_RUN_ID, TAG_BEST_MODEL_RUN_ID
from sweep.study import StudyLogger, finish, open_sweep


class MemoryRun:
    """A trial's run in memory: the `sweep.loggers.TrialLogger` a trial logs through."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.params: dict[str, Any] = {}
        self.metrics: dict[str, list[tuple[int, float]]] = {}
        self.tags: dict[str, Any] = {}
        self.artifacts: list[str] = []

    def log_params(self, params: Mapping[str, Any]) -> None:
        self.params.update(params)

    def log_metrics(self, metrics: Mapping[str, float], step: int = 0, defer: bool = False) -> None:
        for key, value in metrics.items():
            self.metrics.setdefault(key, []).append((step, value))

    def log_inputs(self, datasets: Any) -> None:
        self.tags["inputs"] = len(datasets)

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        self.tags.update(tags)

    def log_dict(self, data: Any, artifact_file: str) -> None:
        self.artifacts.append(artifact_file)

    def log_text(self, text: str, artifact_file: str) -> None:
        self.artifacts.append(artifact_file)

    def log_figure(self, figure: Any, artifact_file: str) -> None:
        self.artifacts.append(artifact_file)


class MemoryLogger:
    """A `StudyLogger` that keeps what it is told: the hooks called, the runs and their ends."""

    def __init__(self) -> None:
        self.experiment_id, self.parent_run_id = "memory", ""
        self.recorded_end_ms: int | None = None
        self.hooks: list[str] = []
        self.runs: dict[str, MemoryRun] = {}
        self.ended: dict[str, str] = {}
        self.kept: list[tuple[int, bool]] = []
        self.parent_tags: dict[str, str] = {}
        self.closed: tuple[str, Mapping[str, str]] | None = None

    def start(
        self,
        study: optuna.Study,
        settings: Mapping[str, Any] | None,
        swept: Collection[str] = (),
        config_yaml: str = "",
        description: str = "",
    ) -> None:
        self.hooks.append("start")
        self.parent_run_id = "parent"
        assert settings is not None and "loss.scale" in swept and "loss:" in config_yaml and description

    def start_trial(self, trial_number: int, run_name: str) -> MemoryRun:
        self.hooks.append("start_trial")
        run = self.runs[f"run-{trial_number}"] = MemoryRun(f"run-{trial_number}")
        run.tags["name"] = run_name
        return run

    def log_trial_params(self, run_id: str, params: Mapping[str, Any]) -> None:
        self.runs[run_id].log_params(params)

    @contextmanager
    def watching_system(self, run_id: str) -> Iterator[None]:
        self.hooks.append("watching_system")
        yield

    def end_trial(self, run_id: str, state: TrialState | None, reason: str | None) -> None:
        self.hooks.append("end_trial")
        self.ended[run_id] = state.name if state else "KILLED"

    def log_kept(self, keeping: Any, kept: Any, model: Any, run_id: str, trial_number: int, **linked: Any) -> None:
        self.hooks.append("log_kept")
        assert set(linked) == {"step", "metrics", "data"} and "stsb_validation_spearman" in linked["metrics"]
        self.kept.append((trial_number, kept.is_best))

    def set_tag(self, run_id: str, key: str, value: str) -> None:
        if run_id == self.parent_run_id:
            self.parent_tags[key] = value

    @property
    def gave_up(self) -> str | None:
        return None

    def flush(self) -> None:
        pass

    def validation_predictions(self, run_id: str) -> None:
        return None

    def close(
        self,
        study: optuna.Study,
        summary: Mapping[str, float],
        tags: Mapping[str, str],
        results_csv: str,
        status: str,
        keeping: Any,
        keep_recorded_end: bool = False,
    ) -> None:
        self.hooks.append("close")
        self.closed = (status, tags)
        assert all(math.isfinite(value) for value in summary.values()) and "scale" in results_csv.split(",")

    def publish_verdict(self, verdict: Any, keeping: Any) -> None:
        self.hooks.append("publish_verdict")


def logs_through(tracker: StudyLogger) -> StudyLogger:
    """`tracker` where a `StudyLogger` is asked for (`mypy tests/study/test_study_logger.py` checks that it is one)."""
    return tracker


@pytest.mark.slow  # a real tiny study: about 20 s on 2 cores
def test_a_study_tracked_in_memory_trains_and_tells_its_logger_every_hook(compose_cfg, monkeypatch):
    import mlflow.tracking

    def no_mlflow(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("MLflow was opened")

    monkeypatch.setattr(mlflow.tracking.MlflowClient, "__init__", no_mlflow)
    tracker = MemoryLogger()
    cfg = compose_cfg("+study.search_space.loss.scale=[5,20]", "name=in_memory", "tracking.uri=http://127.0.0.1:9")
    sweep = open_sweep(cfg, tracker=logs_through(tracker))
    sweep.run()
    finish(sweep)

    trials = sorted(sweep.study.trials, key=lambda t: t.number)
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2
    assert tracker.hooks[0] == "start" and tracker.hooks[-1] == "close"
    per_trial = ["start_trial", "watching_system", "log_kept", "end_trial"]
    trained = [hook for hook in tracker.hooks[1:-1] if hook in per_trial]
    assert [hook for hook in trained if hook != "log_kept"] == ["start_trial", "watching_system", "end_trial"] * 2
    assert {t.user_attrs[ATTR_MLFLOW_RUN_ID] for t in trials} == set(tracker.runs) == set(tracker.ended)
    assert set(tracker.ended.values()) == {"COMPLETE"}
    for trial in trials:
        run = tracker.runs[trial.user_attrs[ATTR_MLFLOW_RUN_ID]]
        assert run.params["loss.scale"] == trial.params["loss.scale"]
        (last_step, validation) = run.metrics["stsb_validation_spearman"][-1]
        assert last_step == cfg.trial.max_steps and validation == trial.value  # the objective is the validation
    assert tracker.kept and tracker.kept[0] == (trials[0].number, True)  # the first is the best so far
    assert tracker.closed is not None and tracker.closed[0] == "FINISHED"
    best = sweep.study.best_trial.user_attrs[ATTR_MLFLOW_RUN_ID]
    assert tracker.closed[1][TAG_BEST_MODEL_RUN_ID] == best and "sweep.progress" in tracker.parent_tags

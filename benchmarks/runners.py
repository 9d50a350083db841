"""The benchmark's subprocesses: the plain baseline script and `python -m sweep`, and the trials read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweep.names import (
    ATTR_DISCARDED,
    ATTR_MLFLOW_RUN_ID,
    ATTR_SCALE,
    ATTR_TIME_PHASES,
    ATTR_TRAIN_SECONDS,
    ATTR_VALIDATION_SPEARMAN,
    ATTR_WALL_TIME_S,
)

REPO_ROOT = Path(__file__).resolve().parents[1]  # the subprocesses run from the checkout, as the user would
PLAIN_ST = Path(__file__).resolve().parent / "plain_st.py"
STUDY = "bench"
VALIDATION_METRIC = ATTR_VALIDATION_SPEARMAN


def subprocess_env(data_dir: str) -> dict[str, str]:
    """The same environment for the baseline and the framework: local data, no inherited tracking URI."""
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "SWEEP_HOME")}
    env.update(SWEEP_DATA_DIR=data_dir, TOKENIZERS_PARALLELISM="false", PYTHONWARNINGS="ignore")
    return env


def run_timed(
    what: str,
    command: list[str],
    data_dir: str,
    timeout_s: int,
    log_dir: Path | None = None,
    expected_code: int = 0,
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `command` in the benchmark's environment: its output and wall time. Its stdout and stderr go to
    `log_dir` (when given) even if it fails; an exit code other than `expected_code` then raises, naming `what`."""
    start = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, env=subprocess_env(data_dir), timeout=timeout_s, cwd=REPO_ROOT
    )
    wall = time.perf_counter() - start
    if log_dir is not None:
        (log_dir / "stdout.txt").write_text(done.stdout)
        (log_dir / "stderr.txt").write_text(done.stderr)
    if done.returncode != expected_code:
        raise RuntimeError(f"{what} failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-3000:]}")
    return done, wall


@dataclass
class BaselineRun:
    """One `benchmarks/plain_st.py` process."""

    scale: float
    process_wall_s: float  # measured from outside: interpreter start, imports, loading, training, evaluations
    result: dict[str, Any]  # its JSON line (train_s, trial_s, load_s, spearman values)


def run_baseline(scale: float, steps: int, eval_steps: int, data_dir: str, timeout_s: int) -> BaselineRun:
    """One baseline process at `scale`: its wall time from outside and its JSON line."""
    command = [
        sys.executable,
        str(PLAIN_ST),
        "--scale",
        f"{scale:g}",
        "--steps",
        str(steps),
        "--eval-steps",
        str(eval_steps),
        "--data-dir",
        data_dir,
    ]
    done, wall = run_timed("baseline", command, data_dir, timeout_s)
    line = next(line for line in reversed(done.stdout.splitlines()) if line.startswith("{"))
    return BaselineRun(scale, wall, json.loads(line))


@dataclass
class FrameworkTrial:
    """One complete or pruned trial of a framework study, from Optuna and MLflow."""

    number: int
    scale: float
    state: str
    value: float | None
    wall_s: float | None  # Optuna user attr ATTR_WALL_TIME_S (= MLflow trial_wall_time_s)
    train_s: float | None  # user attr ATTR_TRAIN_SECONDS (trainer construction + train), complete trials only
    steps: int | None  # last step of VALIDATION_METRIC in MLflow (= steps actually trained)
    first_in_process: bool  # the trial that also loaded the data and built the base model
    phases: dict[str, float]  # user attr ATTR_TIME_PHASES: seconds before, in and after the steps, and spans


@dataclass
class FrameworkSweep:
    """One `python -m sweep` process and its trials, read back from Optuna and MLflow."""

    wall_s: float
    trials: list[FrameworkTrial]
    command: list[str]

    def complete(self) -> list[FrameworkTrial]:
        return [t for t in self.trials if t.state == "COMPLETE"]

    @property
    def steps(self) -> int:
        """Steps actually trained, summed over the trials (a pruned trial counts up to its last evaluation)."""
        return sum(t.steps or 0 for t in self.trials)

    def best(self) -> FrameworkTrial | None:
        done = self.complete()
        return max(done, key=lambda t: recorded(t.value)) if done else None


def recorded(value: float | None) -> float:
    """A measurement the trial loop records on the trials that the benchmark reads: ``wall_s`` on each, the Optuna
    value and ``train_s`` on each complete one."""
    assert value is not None, "a trial without a measurement it always records"
    return value


def grid_override(scales: Sequence[float]) -> str:
    """The Hydra override that makes `scales` the study's grid."""
    return "study.search_space.loss.scale=[" + ",".join(f"{s:g}" for s in scales) + "]"


def run_framework(
    root: Path,
    overrides: Sequence[str],
    data_dir: str,
    timeout_s: int,
    experiment: str = "mnrl_scale",
    seeds: Sequence[int] = (0,),
    save_model: str = "none",
) -> FrameworkSweep:
    """Run one study of `experiment` with `seeds` in a fresh state folder `root` and read its trials back; by
    default no model is kept (`save_model`): each framework trial of items 1-4 is compared with one plain script
    run, which saves nothing."""
    command = [
        sys.executable,
        "-m",
        "sweep",
        f"+experiment={experiment}",
        f"name={STUDY}",
        f"paths.root={root}",
        f"data.local_dir={data_dir}",
        "quiet=true",
        f"study.seeds=[{','.join(str(seed) for seed in seeds)}]",
        f"trial.save_model={save_model}",
        *overrides,
    ]
    root.mkdir(parents=True, exist_ok=True)
    _, wall = run_timed("framework", command, data_dir, timeout_s, log_dir=root)
    return FrameworkSweep(wall, read_trials(root), command)


def read_trials(root: Path) -> list[FrameworkTrial]:
    """Trials of the study under `root`: Optuna user attributes, and the steps trained from MLflow."""
    # Optuna and MLflow are slow imports, needed only once a study has run.
    import optuna
    from mlflow.tracking import MlflowClient

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{root}/optuna.db")
    client = MlflowClient(f"sqlite:///{root}/mlflow.db")
    trials = [
        t
        for t in study.get_trials(deepcopy=False)
        if t.state.name in ("COMPLETE", "PRUNED") and not t.user_attrs.get(ATTR_DISCARDED)
    ]
    first = min((t.number for t in trials), default=-1)
    out = []
    for t in trials:
        run_id = t.user_attrs.get(ATTR_MLFLOW_RUN_ID)
        history = client.get_metric_history(run_id, VALIDATION_METRIC) if run_id else []
        out.append(
            FrameworkTrial(
                number=t.number,
                scale=float(t.user_attrs.get(ATTR_SCALE, t.params.get("loss.scale", float("nan")))),
                state=t.state.name,
                value=t.value,
                wall_s=t.user_attrs.get(ATTR_WALL_TIME_S),
                train_s=t.user_attrs.get(ATTR_TRAIN_SECONDS),
                steps=max((m.step for m in history), default=None),
                first_in_process=t.number == first,
                phases=t.user_attrs.get(ATTR_TIME_PHASES, {}),
            )
        )
    return sorted(out, key=lambda t: t.number)

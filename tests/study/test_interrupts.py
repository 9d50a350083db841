"""SIGINT and SIGTERM through the real command line: every Optuna trial and MLflow run ends, the interrupted point is
queued again as the same attempt, the exit code names the signal, and worker processes follow their parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sweep.names import ATTR_ATTEMPT, TAG_END_REASON
from tests.helpers import (
    REPO,
    child_pids,
    clean_env,
    is_alive,
    load_trials,
    mlflow_runs,
    point_of,
    sweep_process,
    wait_for_training,
)

# Two points, one per worker, each long enough to be interrupted mid-trial.
LONG_GRID = ("study.search_space.loss.scale=[20,50]", "trial.max_steps=3000", "trial.eval_steps=1500")


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        if is_alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def stop_signals(monkeypatch: pytest.MonkeyPatch):
    """sweep's handler installed in this process as `python -m sweep` installs it, with pytest's own signal handlers
    and unraisable hook, and the signal state, as they were after the test."""
    from sweep import signals

    for name in ("depth", "pending", "received", "held"):
        monkeypatch.setattr(signals._Deferral, name, getattr(signals._Deferral, name))
    monkeypatch.setattr(signal, "signal", lambda signum, handler: None)
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    handler = signals.StopSignals()
    handler.install()
    return handler


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_to_the_parent_ends_every_run_and_queues_the_points_again(tmp_path, signum, code):
    storage = f"sqlite:///{tmp_path}/optuna.db"
    process = sweep_process(*LONG_GRID, "study.n_workers=2", home=tmp_path)
    wait_for_training(process, storage)
    workers = [p for p in child_pids(process.pid) if "sweep" in Path(f"/proc/{p}/cmdline").read_text()]
    try:
        process.send_signal(signum)  # the parent only, as SLURM, timeout, docker stop or kill do
        output = process.communicate(timeout=240)[0]
        assert not [p for p in workers if is_alive(p)], "the workers ended with their parent"
    finally:
        kill_all([process.pid, *workers])
    assert process.returncode == code, output[-3000:]
    assert "Traceback" not in output and "interrupted" in output, output[-6000:]

    trials = load_trials(storage)
    assert not [t for t in trials if t.state.name == "RUNNING"]
    waiting = [t for t in trials if t.state.name == "WAITING"]
    done = {point_of(t)["loss.scale"] for t in trials if t.state.name == "COMPLETE"}
    assert done | {point_of(t)["loss.scale"] for t in waiting} == {20, 50}, "every point is done or queued"
    assert len(waiting) == 2 - len(done) and all(t.user_attrs[ATTR_ATTEMPT] == 1 for t in waiting)
    interrupted = [t for t in trials if t.state.name == "FAIL"]
    assert interrupted and all(t.user_attrs["fail_reason"].startswith("interrupted") for t in interrupted)

    _, parents, children = mlflow_runs(f"sqlite:///{tmp_path}/mlflow.db", "mnrl_scale")
    assert [p.info.status for p in parents] == ["KILLED"]
    assert signal.Signals(signum).name in parents[0].data.tags[TAG_END_REASON]
    assert not [r for r in children if r.info.status == "RUNNING"]
    for run in children:
        if run.info.status != "FINISHED":
            assert run.info.status == "KILLED" and "interrupted" in run.data.tags[TAG_END_REASON]


@pytest.mark.slow
def test_workers_stop_when_their_parent_is_killed(tmp_path):
    storage = f"sqlite:///{tmp_path}/optuna.db"
    process = sweep_process(*LONG_GRID, "study.n_workers=2", home=tmp_path)
    wait_for_training(process, storage)
    workers = [p for p in child_pids(process.pid) if "sweep" in Path(f"/proc/{p}/cmdline").read_text()]
    assert workers
    try:
        process.kill()  # SIGKILL: no handler runs in the parent
        process.wait()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(is_alive(p) for p in workers):
            time.sleep(0.5)
        assert not [p for p in workers if is_alive(p)], "a worker outlived its killed parent"
    finally:
        kill_all(workers)


def test_a_signal_deferred_inside_a_failing_write_is_raised_not_lost():
    """A stop signal that arrives inside a deferred write is raised when the write ends, also when the write fails
    (before, a failing write left it pending until some later write ended normally)."""
    from sweep.signals import Interrupted, StopSignals, deferred

    handler = StopSignals()
    with pytest.raises(Interrupted) as raised:
        with deferred():
            handler._handle(signal.SIGTERM, None)  # as the signal arrives inside the write
            raise RuntimeError("database is locked")
    assert raised.value.signum == signal.SIGTERM and isinstance(raised.value.__cause__, RuntimeError)
    with deferred():  # nothing left pending: the next write goes through
        pass


def test_a_signal_whose_raise_was_swallowed_is_raised_at_the_next_safe_point(monkeypatch):
    """Python drops an exception raised by a signal handler inside a weakref callback ("Exception ignored in"): the
    next training step raises the signal again (seen in CI: SIGTERM landed in SQLAlchemy's _collection_gced and the
    run trained to the end, exit 0), and the dropped raise prints no traceback; other dropped errors still reach the
    previous hook."""
    import gc
    import weakref

    from sweep.signals import Interrupted, StopSignals, check_stop

    passed_on: list[sys.UnraisableHookArgs] = []
    monkeypatch.setattr(sys, "unraisablehook", passed_on.append)
    monkeypatch.setattr(signal, "signal", lambda signum, handler: None)  # pytest keeps its own handlers
    handler = StopSignals()
    handler.install()

    class Anything:
        pass

    thing = Anything()
    ref = weakref.ref(thing, lambda ref: handler._handle(signal.SIGINT, None))  # the handler runs in a GC callback
    del thing
    gc.collect()
    assert ref() is None, "the callback ran, and Python swallowed the Interrupted it raised"
    assert passed_on == [], "the swallowed stop signal printed 'Exception ignored ... Traceback'"
    with pytest.raises(Interrupted):
        check_stop()
    check_stop()  # raised once: a later safe point goes on

    other = Anything()
    other_ref = weakref.ref(other, lambda ref: 1 / 0)
    del other
    gc.collect()
    assert other_ref() is None
    assert [type(args.exc_value) for args in passed_on] == [ZeroDivisionError]


# `python -m sweep ARGS` with SIGTERM delivered as it starts importing the app (the heavy imports): DELIVERY is the
# line that sends it, directly or from a finalizer, where Python drops whatever a signal handler raises.
SIGNAL_WHILE_IMPORTING = """
import os, runpy, signal, sys

class SignalInAFinalizer:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100_000):  # the handler runs here, between two bytecodes of the finalizer
            pass

class OnImportOfTheApp:
    def find_spec(self, name, path=None, target=None):
        if name == "sweep.app":
            sys.meta_path.remove(self)
            DELIVERY
        return None

sys.meta_path.insert(0, OnImportOfTheApp())
sys.argv[0] = "sweep"
runpy.run_module("sweep", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize(
    "delivery",
    [
        "os.kill(os.getpid(), signal.SIGTERM)",
        "SignalInAFinalizer()",  # made and collected at once
    ],
    ids=["directly", "in-a-finalizer"],
)
def test_a_signal_while_importing_stops_before_training_quietly(tmp_path, delivery):
    """A worker that its parent signals while it still imports torch must stop, not train (seen in CI: the signal
    landed in a ``__del__``, the SystemExit it raised was dropped, and the worker trained the point its parent had
    just queued again until the parent's grace ran out and killed it, leaving that trial RUNNING)."""
    from tests.conftest import TINY

    code = SIGNAL_WHILE_IMPORTING.replace("DELIVERY", delivery)
    command = [sys.executable, "-c", code, "+experiment=mnrl_scale", *TINY, "stats.enabled=false", "study.seeds=[0]"]
    env = clean_env(SWEEP_HOME=str(tmp_path))
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 143, output[-3000:]
    assert "interrupted by SIGTERM" in output, output[-3000:]
    assert "Traceback" not in output and "Exception ignored" not in output, output[-3000:]
    assert not (tmp_path / "optuna.db").exists(), "a study opened after the signal"


def test_a_signal_between_the_ask_and_the_objective_fails_the_trial_it_asked(monkeypatch, stop_signals):
    """Optuna starts the heartbeat thread after ask has marked the trial RUNNING and before the objective runs: a
    signal there must end that trial through the objective (FAIL, its point queued again), not leave it RUNNING."""
    import optuna
    from optuna.study import _optimize
    from optuna.trial import TrialState

    from sweep.signals import Interrupted, check_stop, holding_stop_signals
    from sweep.study.optuna_access import wrap_ask

    starting_heartbeat = _optimize.get_heartbeat_thread

    def signal_then_start(*args: object, **kwargs: object):
        stop_signals._handle(signal.SIGTERM, None)  # as the signal lands between the ask and the objective
        return starting_heartbeat(*args, **kwargs)

    monkeypatch.setattr(_optimize, "get_heartbeat_thread", signal_then_start)
    study = optuna.create_study()
    wrap_ask(study, holding_stop_signals)
    started: list[int] = []

    def objective(trial: optuna.Trial) -> float:
        check_stop()  # as the study's objective does first
        started.append(trial.number)
        return 1.0

    with pytest.raises(Interrupted):
        study.optimize(objective, n_trials=1)
    assert [t.state for t in study.trials] == [TrialState.FAIL] and started == []
    check_stop()  # raised once: the next safe point goes on


def test_a_signal_inside_a_storage_call_while_a_trial_is_held_waits_for_the_check_stop(stop_signals):
    """The packer asks its leader's pack-mates and reads the queue between the asks, and every storage call is a
    deferred block: a signal inside one was raised as the call ended, before the packer's clean-up, which left the
    asked trials RUNNING with their points not queued again. While an asked trial waits for its check_stop, so does
    the signal."""
    from sweep.signals import Interrupted, check_stop, deferred, holding_stop_signals

    holding_stop_signals(lambda: "a trial")()  # the pack's first mate, asked
    try:
        with deferred():  # the packer's read of the queue before the next ask
            stop_signals._handle(signal.SIGTERM, None)
    except Interrupted:
        pytest.fail("the signal was raised as the storage call ended, outside the packer's clean-up")
    with pytest.raises(Interrupted):
        check_stop()
    with deferred():  # nothing held or pending any more: the next call goes through
        pass

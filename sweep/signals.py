"""Signals and worker processes: SIGINT and SIGTERM stop a run the same clean way (the trial's point queued again,
every run ended), a signal during that clean-up is deferred, and `study.n_workers` processes follow their parent."""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import TypeVar

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# The shell's convention, 128 + the signal number: Ctrl-C 130, SIGTERM (SLURM preemption, timeout, docker stop) 143.
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
# A signal this many times stops at once, without the clean-up (the point is then re-queued by a heartbeat).
FORCE_AFTER = 3
PARENT_ENV = "SWEEP_PARENT_PID"  # set in the environment of the worker processes
PR_SET_PDEATHSIG = 1
WORKER_KEYS = ("study.n_workers", "trial.torch_threads", "quiet")
WORKER_GRACE_S = 120.0
T = TypeVar("T")


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM, raised in the main thread like Ctrl-C so that every clean-up path runs once."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


class _Deferral:
    """How many `deferred()` blocks are open, the stop signal that arrived inside one, and the first stop signal
    until a safe point has raised it too (`check_stop`)."""

    depth = 0
    pending: int | None = None
    received: int | None = None
    held = False  # a trial was asked and no `check_stop` has run since (`holding_stop_signals`)


def check_stop() -> None:
    """At a safe point of the main thread (every training step, every trial's start), raise the stop signal again.

    Python drops an exception that a signal handler raises while a weakref callback or ``__del__`` runs (it prints
    "Exception ignored in ..."): a SIGTERM that landed in SQLAlchemy's ``_collection_gced`` was lost that way and
    the run trained to the end. Raised here once, so a signal whose first raise did arrive costs nothing: the study
    has stopped before the next safe point."""
    if _Deferral.depth or threading.current_thread() is not threading.main_thread():
        return
    _Deferral.held = False
    if _Deferral.received is None:
        return
    signum, _Deferral.received = _Deferral.received, None
    raise Interrupted(signum)


class QuietSwallowedInterrupts:
    """An unraisable hook that keeps Python from printing "Exception ignored ... Traceback" for a stop signal raised
    inside a weakref callback or ``__del__`` (`check_stop` raises it again); every other exception goes to
    `previous`."""

    def __init__(self, previous: Callable[[sys.UnraisableHookArgs], object]) -> None:
        self.previous = previous

    def __call__(self, unraisable: sys.UnraisableHookArgs) -> None:
        if not isinstance(unraisable.exc_value, Interrupted):
            self.previous(unraisable)


def quiet_swallowed_interrupts() -> None:
    """Wrap ``sys.unraisablehook`` in `QuietSwallowedInterrupts`, once."""
    if not isinstance(sys.unraisablehook, QuietSwallowedInterrupts):
        sys.unraisablehook = QuietSwallowedInterrupts(sys.unraisablehook)


def stop_while_importing() -> None:
    """Until `StopSignals.install`: a stop signal raises `Interrupted` (``python -m sweep`` ends quietly with its exit
    code). ``python -m sweep`` calls this before the heavy imports, which run finalizers: a signal that lands in one is
    dropped by Python, so it is also remembered, and the `check_stop` right after `StopSignals.install` raises it
    before anything trains (a worker signalled while it imported torch trained a trial until it was killed)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _interrupt_while_importing)
    quiet_swallowed_interrupts()


def _interrupt_while_importing(signum: int, frame: FrameType | None) -> None:
    _Deferral.received = signum
    raise Interrupted(signum)


@contextmanager
def deferred() -> Iterator[None]:
    """A block that a stop signal must not cut in half (an MLflow or Optuna write holding a SQLite transaction: an
    exception raised inside it turns into "database is locked" and the interrupt is lost). The first signal that
    arrives inside is raised as `Interrupted` once the outermost block has finished, or, while an asked trial is
    held (`holding_stop_signals`), by the next `check_stop`. Signals reach the main thread only, so other threads'
    blocks (the storage heartbeat) pass through."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _Deferral.depth += 1
    try:
        yield
    except BaseException as error:  # the block failed: a signal that arrived inside it must not be lost with it
        signum = _leave_deferral()
        if signum is not None and not isinstance(error, KeyboardInterrupt):  # already stopping otherwise
            raise Interrupted(signum) from error
        raise
    signum = _leave_deferral()
    if signum is not None and not _Deferral.held:
        raise Interrupted(signum)


def holding_stop_signals(ask: Callable[..., T]) -> Callable[..., T]:
    """`ask` (Optuna's ``Study.ask``) with a stop signal deferred until the objective's `check_stop`. Optuna marks a
    queued trial RUNNING inside ask, before the objective (which records an interrupted trial and queues its point
    again) starts: a signal raised in between, inside ask, in Optuna's code after it (starting the heartbeat
    thread) or in the packer's storage calls between its asks, left the trial RUNNING, so its point waited for a
    heartbeat's grace or was lost."""

    @functools.wraps(ask)
    def held_ask(*args: object, **kwargs: object) -> T:
        with deferred():  # held before the block ends: a signal inside waits for the check_stop too
            trial = ask(*args, **kwargs)
            _Deferral.held = threading.current_thread() is threading.main_thread()
        return trial

    return held_ask


def _leave_deferral() -> int | None:
    """Close one `deferred()` block; the signal that waited for the outermost one to close, taken once."""
    _Deferral.depth -= 1
    if _Deferral.depth:
        return None
    signum, _Deferral.pending = _Deferral.pending, None
    return signum


def signal_name(interrupt: KeyboardInterrupt) -> str:
    """SIGTERM for a SIGTERM, SIGINT for Ctrl-C (a plain KeyboardInterrupt)."""
    return signal.Signals(getattr(interrupt, "signum", signal.SIGINT)).name


def exit_code(interrupt: KeyboardInterrupt) -> int:
    return EXIT_CODES[signal.Signals(getattr(interrupt, "signum", signal.SIGINT))]


class StopSignals:
    """Handlers for SIGINT and SIGTERM: the first raises `Interrupted`; the next ones are deferred while the run
    cleans up (a second Ctrl-C must not cut the re-queue short), and the third stops the process at once."""

    def __init__(self) -> None:
        self.count = 0

    def install(self) -> None:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._handle)
        quiet_swallowed_interrupts()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count == 1:
            _Deferral.received = signum
            if _Deferral.depth:
                _Deferral.pending = signum
                return
            if _Deferral.held:  # a trial asked but not started: its objective's check_stop raises the signal
                return
            raise Interrupted(signum)
        if self.count >= FORCE_AFTER:
            os._exit(EXIT_CODES[signal.Signals(signum)])
        print(
            "sweep: stopping cleanly (the trial's point is queued again); signal once more to stop at once",
            file=sys.stderr,
        )


class _NoInterruptTraceback(logging.Filter):
    """Optuna logs a failed trial with its traceback; an interrupted trial is not a failure, so one line is enough."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[0] is not None and issubclass(record.exc_info[0], KeyboardInterrupt):
            record.exc_info, record.exc_text = None, None
        return True


def quiet_interrupt_tracebacks() -> None:
    """Drop the traceback from Optuna's log line of an interrupted trial."""
    for handler in logging.getLogger("optuna").handlers:
        handler.addFilter(_NoInterruptTraceback())


def follow_parent() -> None:
    """In a worker process: receive SIGTERM when the parent dies (Linux), and stop now if it already has."""
    parent = os.environ.get(PARENT_ENV)
    if not parent:
        return
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != int(parent):
        sys.exit(EXIT_CODES[signal.SIGTERM])


def is_spawned_worker() -> bool:
    """Whether this process is an extra worker that another `python -m sweep` started (`spawn_workers`): it trains
    and leaves the study's report to the process that started it."""
    return PARENT_ENV in os.environ


@dataclass(frozen=True)
class Worker:
    """What one worker process gets beside this run's arguments: environment variables (a GPU worker's
    ``CUDA_VISIBLE_DEVICES``, set before it starts) and overrides (replacing the same keys of the arguments)."""

    environment: Mapping[str, str] = field(default_factory=dict)
    overrides: Sequence[str] = ()


def spawn_workers(workers: Sequence[Worker], threads: int, arguments: Sequence[str]) -> list[subprocess.Popen]:
    """A process running `python -m sweep ARGUMENTS` (this run's) on the same study for each of `workers` (separate
    processes: torch and the trainer are not thread-safe). Each follows this process: it gets SIGTERM if this one
    dies."""
    processes = []
    for worker in workers:
        replaced = {*WORKER_KEYS, *(override.split("=")[0] for override in worker.overrides)}
        command = [
            sys.executable,
            "-m",
            "sweep",
            *(arg for arg in arguments if arg.split("=")[0].lstrip("+~") not in replaced),
            "study.n_workers=1",
            f"trial.torch_threads={threads}",
            "quiet=true",
            *worker.overrides,
        ]
        env = {**os.environ, **worker.environment, PARENT_ENV: str(os.getpid())}
        processes.append(subprocess.Popen(command, env=env))
    return processes


def stop_workers(workers: list[subprocess.Popen], interrupt: KeyboardInterrupt | None) -> None:
    """Wait for the workers; after an interruption, pass the signal on first (each worker cleans up as this process
    does) and kill those still running after `WORKER_GRACE_S`."""
    for worker in workers:
        if interrupt is not None and worker.poll() is None:
            worker.send_signal(getattr(interrupt, "signum", signal.SIGINT))
    for worker in workers:
        try:
            worker.wait(timeout=WORKER_GRACE_S if interrupt is not None else None)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()

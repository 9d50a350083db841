"""Packed trials (`study.pack=K`): one process takes up to K trials off the queue and trains them together, and
the GPU memory guard of several workers sharing one device.

The objective that `StudyRunner.run` hands to `study.optimize` receives the leader trial from Optuna (an atomic pop of a
WAITING grid point), pops up to K-1 more with `study.ask()` (each its own atomic pop), and runs the K members'
ordinary `StudyRunner.objective` in lockstep (`sweep.training.lockstep`: same batches, one training step each in
turn), except that with `study.fuse` the members that can fuse (a static model with plain MNRL) hand their
training to one fused model (`sweep.training.FusedGroup`) and take no turns. Each member is still its own Optuna
trial and MLflow child run with the records of an unpacked trial; a member that is pruned, diverges or fails leaves
the pack and the others go on. The extra members are told to Optuna here
(with the study's callbacks, and heartbeats while they run); the leader's outcome goes back to `study.optimize`.

On CUDA (any pack size, so also with `study.n_workers=N` sharing one GPU) the free device memory is checked before
a pack starts: the pack shrinks to what fits (`study.pack_memory_gib` per member, or the peak measured per member
of this process's earlier packs), waiting a little for other workers when not even one fits. A member that runs out
of memory fails with that reason and is re-queued like any failed grid point (`study.max_retries`, default once);
this process's later packs are then half as large. Other workers are separate processes and go on.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

import optuna
import torch
from optuna.trial import FrozenTrial, TrialState

from sweep.config import GIB, StudyConfig, SweepConfig, trial_memory
from sweep.names import ATTR_DISCARDED, ATTR_GRID_POINT
from sweep.signals import check_stop
from sweep.study.optuna_access import record_heartbeat, storage_of
from sweep.training import FusedGroup, Outcome, joining, run_in_lockstep

log = logging.getLogger(__name__)

Callback = Callable[[optuna.Study, FrozenTrial], None]


def uses_cuda(device: str) -> bool:
    """Whether `trial.device` runs on CUDA (``auto``: when a GPU is visible)."""
    device = str(device)
    return device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())


def is_packed(pack: int, device: str) -> bool:
    """Whether trials run through `Packer` (a pack of more than one, `study.pack`, or any trial on CUDA,
    `trial.device`, for the memory guard)."""
    return pack > 1 or uses_cuda(device)


def free_memory(device: str) -> int:
    """Free bytes on the CUDA device (all processes counted)."""
    return torch.cuda.mem_get_info(torch.device(device))[0]


class MemoryGuard:
    """How many members fit on the device now: `study.pack_memory_gib` each, or the peak measured per member."""

    def __init__(self, study: StudyConfig, device: str) -> None:
        """For the `study` section's pack settings on `trial.device` ``device``."""
        self.device = "cuda" if str(device) == "auto" else str(device)
        self.per_member = trial_memory(study) or 0.0  # the estimate study.n_workers=auto sizes its workers by
        self.wait_s = 3 * study.heartbeat_interval

    def fit(self, wanted: int) -> int:
        """The pack size to start now (at least 1), waiting up to 3 heartbeats for memory other workers free."""
        deadline = time.monotonic() + self.wait_s
        while True:
            free = free_memory(self.device)
            fits = wanted if not self.per_member else min(wanted, int(free // self.per_member))
            if fits >= 1 or time.monotonic() >= deadline:
                if fits < 1:
                    log.warning(
                        "%.1f GiB free, %.1f GiB wanted per trial: starting one", free / GIB, self.per_member / GIB
                    )
                return max(1, fits)
            time.sleep(1.0)

    def start(self) -> None:
        torch.cuda.reset_peak_memory_stats(self.device)

    def measured(self, members: int) -> None:
        """Learn the memory of one member from the peak of a pack that just ran."""
        self.per_member = max(self.per_member, torch.cuda.max_memory_allocated(self.device) / members)


def in_group(group: FusedGroup | None, objective: Callable[[optuna.Trial], float], trial: optuna.Trial) -> float:
    """A member's objective, trained through the pack's fused `group` where it can (`sweep.training.FusedGroup`)."""
    with joining(group):
        return objective(trial)


def tell(study: optuna.Study, trial: optuna.Trial, outcome: Outcome) -> FrozenTrial:
    """Record a member's outcome in Optuna as `study.optimize` records a trial's."""
    if outcome.error is None:
        return study.tell(trial, outcome.value)
    pruned = isinstance(outcome.error, optuna.TrialPruned)
    return study.tell(trial, state=TrialState.PRUNED if pruned else TrialState.FAIL)


@contextmanager
def heartbeats(storage: optuna.storages.BaseStorage, trials: Sequence[optuna.Trial]) -> Iterator[None]:
    """Heartbeats for trials asked outside `study.optimize` (which beats for its own trial only)."""
    interval = getattr(storage, "get_heartbeat_interval", lambda: None)()
    if not interval or not trials:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while True:
            for trial in trials:
                record_heartbeat(storage, trial)
            if stop.wait(interval):
                return

    thread = threading.Thread(target=beat, name="pack-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


class PackedStudy(Protocol):
    """What a packer needs of the study it packs (`sweep.study.run_loop.StudyRunner` implements it; that module
    imports this one, so the interface is stated here instead of importing the class)."""

    cfg: SweepConfig
    study: optuna.Study

    @property
    def is_grid(self) -> bool: ...

    def objective(self, trial: optuna.Trial) -> float: ...

    def record_failure(self, trial: optuna.Trial, error: BaseException) -> str: ...

    def trials_in(self, *states: TrialState) -> list[FrozenTrial]: ...

    def done_count(self) -> int: ...


class Packer:
    """The objective of a packed study: trains the leader Optuna hands it together with up to K-1 more trials."""

    def __init__(self, sweep: PackedStudy, callbacks: Sequence[Callback], total: int | None) -> None:
        self.sweep, self.callbacks, self.total = sweep, list(callbacks), total
        self.limit = max(1, sweep.cfg.study.pack)
        device = sweep.cfg.trial.device
        self.guard = MemoryGuard(sweep.cfg.study, device) if uses_cuda(device) else None

    def __call__(self, leader: optuna.Trial) -> float:
        sweep = self.sweep
        if sweep.is_grid and ATTR_GRID_POINT not in leader.user_attrs:
            return sweep.objective(leader)  # discards it and stops this worker's loop
        size = self.guard.fit(self.limit) if self.guard else self.limit
        members = [leader]
        try:
            self.ask_more(members, size)  # each member joins as it is claimed: a failed ask leaves none unrecorded
            check_stop()  # a stop signal held by one of the asks (members train in threads: no check_stop there)
            outcomes = self.run(members)
        except BaseException as error:  # never leave a popped member RUNNING or its point unqueued
            for trial in members:
                sweep.record_failure(trial, error)
            for trial in members[1:]:  # Optuna tells the leader's
                sweep.study.tell(trial, state=TrialState.FAIL)
            raise error
        for trial, outcome in zip(members[1:], outcomes[1:], strict=True):
            frozen = tell(sweep.study, trial, outcome)
            for callback in self.callbacks:
                callback(sweep.study, frozen)
        interrupted = next((o.error for o in outcomes if isinstance(o.error, KeyboardInterrupt)), None)
        if outcomes[0].error is not None:
            raise outcomes[0].error
        if interrupted is not None:
            raise interrupted
        return outcomes[0].value

    def run(self, members: Sequence[optuna.Trial]) -> list[Outcome]:
        """Train `members` in lockstep (on CUDA: under the memory guard, one stream each)."""
        if self.guard:
            self.guard.start()
        with heartbeats(storage_of(self.sweep.study), members[1:]):
            cuda = self.guard is not None and torch.cuda.is_available()
            group = FusedGroup() if self.sweep.cfg.study.fuse else None
            tasks = [functools.partial(in_group, group, self.sweep.objective, t) for t in members]
            outcomes = run_in_lockstep(tasks, cuda_streams=cuda)
        if self.guard:
            self.guard.measured(len(members))
        self.after_pack(outcomes)
        return outcomes

    def ask_more(self, members: list[optuna.Trial], size: int) -> None:
        """Add trials to `members` up to `size`: queued grid points (each an atomic pop), or sampled trials within
        n_trials."""
        sweep = self.sweep
        while len(members) < size:
            if sweep.is_grid and not sweep.trials_in(TrialState.WAITING):
                break
            if self.total is not None and sweep.done_count() + len(sweep.trials_in(TrialState.RUNNING)) >= self.total:
                break
            trial = sweep.study.ask()
            if sweep.is_grid and ATTR_GRID_POINT not in trial.user_attrs:
                # Another worker took the last point between the check and the pop: not a grid point.
                trial.set_user_attr(ATTR_DISCARDED, True)
                sweep.study.tell(trial, state=TrialState.PRUNED)
                break
            members.append(trial)

    def after_pack(self, outcomes: Sequence[Outcome]) -> None:
        """After an out-of-memory member: free the cache and halve this process's later packs."""
        if any(isinstance(o.error, torch.cuda.OutOfMemoryError) for o in outcomes):
            self.limit = max(1, len(outcomes) // 2)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            log.warning("a packed trial ran out of GPU memory: packs of at most %d from now on", self.limit)

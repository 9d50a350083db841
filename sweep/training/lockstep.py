"""Lockstep turns for the members of a pack: K trials, each in its own thread running its own unchanged
`SentenceTransformerTrainer`, take turns one training step at a time, each with its own random state.

Why K real trainers taking turns, and not one hand-written loop over K models or stacked parameters: every member
then runs exactly the code of an unpacked trial (same optimizer and fused AdamW, scheduler, warmup, clipping,
logging, evaluations, callbacks), so its results equal the unpacked trial's by construction, for every loss and
wrapper. The members read the same batches in the same order (same seed), tokenized once (the study's
`PreprocessCache`). Stacked parameters (`torch.func.stack_module_state` + `vmap(functional_call)`) were measured
with a throwaway probe on this project's default static model (EmbeddingBag 30522 x 384, MNRL, batch 64, fused
AdamW, CPU): 4 models per step took 3.9 s with vmap against 0.93 s in a plain loop (embedding_bag has no vmap
batching rule, so vmap falls back to a per-model loop and copies), and vmap would also need the trainer's per-model
clipping and scheduler rewritten. On CUDA each member thread launches its kernels on its own stream, so the GPU can
overlap one member's step with the next member's launches (untested here: no GPU was lent).
Since then a pack's static-model MNRL members train as one fused model instead, with a hand-written fused step
rather than vmap (`sweep.training.fused_group`); every other member still takes these turns.

Only one member runs at a time (a baton passed at every `on_step_begin`), so the trainers, Optuna and MLflow see
the same sequence of calls per member as when run one by one; the torch, CUDA, Python and NumPy random states are
swapped at every pass, so dropout draws are the member's own. A member that stops (pruned, diverged, failed,
finished) leaves the ring; the others go on.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from transformers import TrainerCallback


@dataclass
class Outcome:
    """What one member's task returned, or the exception it raised."""

    value: Any = None
    error: BaseException | None = None


def _rng_state() -> tuple[Any, ...]:
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda, random.getstate(), np.random.get_state()


def _set_rng_state(state: tuple[Any, ...]) -> None:
    cpu, cuda, python, numpy = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)
    random.setstate(python)
    np.random.set_state(numpy)


class Aborted(KeyboardInterrupt):
    """The pack was interrupted (Ctrl-C in the main thread): each member stops at its next turn."""


class Lockstep:
    """A baton passed between live members in ring order; the holder's random state is its own."""

    def __init__(self, n: int) -> None:
        self._cond = threading.Condition()
        self._live = list(range(n))
        self._turn = 0
        self._rng: dict[int, tuple[Any, ...]] = {}
        self.aborted = False

    def wait(self, member: int) -> None:
        """Block until it is `member`'s turn, then give it back its random state."""
        with self._cond:
            self._cond.wait_for(lambda: self._turn == member)
        if member in self._rng:
            _set_rng_state(self._rng[member])
        if self.aborted:
            raise Aborted("pack interrupted")

    def pass_turn(self, member: int) -> None:
        """`member` has done a step: let the next live member do one, and wait for the baton to come back."""
        self._rng[member] = _rng_state()
        with self._cond:
            self._turn = self._next(member)
            self._cond.notify_all()
        self.wait(member)

    def leave(self, member: int) -> None:
        with self._cond:
            self._live.remove(member)
            if self._live:
                self._turn = self._next(member)
            self._cond.notify_all()

    def live(self) -> list[int]:
        """The members still in the ring."""
        with self._cond:
            return list(self._live)

    def abort(self) -> None:
        with self._cond:
            self.aborted = True
            self._cond.notify_all()

    def _next(self, member: int) -> int:
        later = [m for m in self._live if m > member]
        return later[0] if later else self._live[0]


_current = threading.local()


class TurnCallback(TrainerCallback):
    """Passes the baton before every training step of a pack member."""

    def __init__(self, lockstep: Lockstep, member: int) -> None:
        self.lockstep, self.member = lockstep, member

    def on_step_begin(self, args, state, control, **kwargs):
        self.lockstep.pass_turn(self.member)


def current_member() -> tuple[Lockstep, int] | None:
    """The lockstep and member index of the calling thread, when it is a pack member."""
    return getattr(_current, "member", None)


def member_callbacks() -> list[TrainerCallback]:
    """The trainer callbacks of the calling thread: a `TurnCallback` in a pack member, none otherwise."""
    member = current_member()
    return [TurnCallback(*member)] if member is not None else []


def run_in_lockstep(tasks: Sequence[Callable[[], Any]], cuda_streams: bool = False) -> list[Outcome]:
    """Run `tasks` (each one trial, training with `member_callbacks()`) in lockstep; their outcomes, in order.

    Ctrl-C stops every member at its next turn: each then ends with an `Aborted` error (a KeyboardInterrupt), like
    an interrupted unpacked trial, and the caller records every member before raising it."""
    lockstep = Lockstep(len(tasks))
    outcomes = [Outcome() for _ in tasks]

    def body(member: int) -> None:
        _current.member = (lockstep, member)
        try:
            lockstep.wait(member)
            if cuda_streams:
                with torch.cuda.stream(torch.cuda.Stream()):
                    outcomes[member].value = tasks[member]()
                torch.cuda.current_stream().synchronize()
            else:
                outcomes[member].value = tasks[member]()
        except BaseException as error:  # noqa: BLE001 - handed to the caller, who records it per trial
            outcomes[member].error = error
        finally:
            _current.member = None
            lockstep.leave(member)

    threads = [threading.Thread(target=body, args=(i,), name=f"pack-member-{i}") for i in range(len(tasks))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:
        lockstep.abort()
        for thread in threads:
            thread.join()
        for outcome in outcomes:
            if outcome.error is None and outcome.value is None:
                outcome.error = Aborted("pack interrupted before this member started")
    return outcomes

"""The fused members of a pack: the trials of a lockstep pack that can fuse (`why_not_fused`) hand their training to
one rendezvous, and the last to arrive trains them all as one `FusedStaticPack`, with each member's own training-loss
logs, validations, pruning and divergence as its own trainer would give them; each member then scores its own model
(issue 50, "fused trial arrays")."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers import SentenceTransformerTrainingArguments as TrainingArguments
from transformers.trainer_utils import TrainOutput

from sweep.signals import check_stop
from sweep.training.fused_fit import is_normalized, static_table
from sweep.training.fused_pack import Batch, FusedStaticPack, trainer_batches
from sweep.training.lockstep import Aborted, Lockstep, current_member
from sweep.training.step_clock import StepClock
from sweep.training.trainer import TrialCallback

log = logging.getLogger(__name__)


@dataclass
class FusedMember:
    """What one trial hands to the fused training: its model (a static one), scale, training arguments (its learning
    rate, schedule, clipping; every member of a pack shares all but the rate), the batches its own trainer would
    read, the callback that logs and reports for it, its validation (Spearman at a step) and clock."""

    trial_number: int
    model: SentenceTransformer
    scale: float
    args: TrainingArguments
    batches: list[Batch]
    callback: TrialCallback
    validate: Callable[[int], float]
    clock: StepClock
    output: TrainOutput | None = None
    error: BaseException | None = None

    @classmethod
    def of(
        cls,
        trial_number: int,
        trainer: SentenceTransformerTrainer,
        scale: float,
        callback: TrialCallback,
        validate: Callable[[int], float],
        clock: StepClock,
        steps: int,
    ) -> FusedMember:
        """The member of a trial whose trainer is built and not trained: its model, arguments and batches."""
        batches = trainer_batches(trainer, steps)
        return cls(trial_number, trainer.model, scale, trainer.args, batches, callback, validate, clock)

    @property
    def table(self) -> torch.Tensor:
        """The member's token table (V x D), the parameter its own model trains and scores."""
        table = static_table(self.model)
        if table is None:
            raise TypeError(f"trial {self.trial_number}: only a static model fuses (`why_not_fused`)")
        return table.weight

    def key(self) -> tuple[Any, ...]:
        """What members must share to train as one: the table's shape and device, the steps and batch size, and
        every optimizer setting but the learning rate."""
        a, table = self.args, self.table
        optimizer = (a.weight_decay, a.adam_beta1, a.adam_beta2, a.adam_epsilon, a.max_grad_norm, a.optim)
        schedule = (len(self.batches), a.get_warmup_steps(len(self.batches)), a.logging_steps, a.eval_steps)
        return (tuple(table.shape), str(table.device), is_normalized(self.model), *optimizer, *schedule)


def on_device(batch: Batch, device: torch.device) -> Batch:
    return [{name: tensor.to(device) for name, tensor in column.items()} for column in batch]


def train_fused(members: Sequence[FusedMember], aborted: Callable[[], bool] = lambda: False) -> None:
    """Train `members` (of one `FusedMember.key`) as one fused pack, setting each one's `output`; their models hold
    their trained tables afterwards. At each of the trainer's logging steps a live member logs its mean loss since the
    last one, its gradient norm and the learning rate of that step; at each evaluation step its model is validated,
    reported and, if the pruner says so, leaves. A member whose loss is not finite leaves at that step, logged as
    its trainer would log it (diverged)."""
    first = members[0]
    device, steps, args = first.table.device, len(first.batches), first.args
    starts = torch.stack([m.table.detach() for m in members])
    lrs = [m.args.learning_rate for m in members]
    scales = [m.scale for m in members]
    pack = FusedStaticPack.for_trials(starts, scales, lrs, args, steps, normalize=is_normalized(first.model))
    window, total = torch.zeros(len(members), dtype=torch.float64), torch.zeros(len(members), dtype=torch.float64)
    last = [0] * len(members)  # each member's last step
    eval_every = int(args.eval_steps or 0) if args.eval_strategy == "steps" else 0
    started = time.perf_counter()
    for member in members:
        member.clock.first_step = started
    for index in range(steps):
        if aborted():
            raise Aborted("pack interrupted")
        check_stop()
        step, live, rates = index + 1, pack.live.tolist(), pack.optimizer.learning_rates()
        result = pack.step_members([on_device(m.batches[index], device) for m in members])
        losses, norms = result.losses.double().cpu(), result.grad_norms.cpu().tolist()
        for k in (k for k, alive in enumerate(live) if alive):
            last[k] = step
            window[k] += losses[k]
            total[k] += losses[k]
            if not math.isfinite(losses[k].item()):  # left the pack in this step; logged now, as a trainer would
                members[k].callback.logged(step, losses[k].item(), rates[k], None)
        if step % args.logging_steps == 0:
            for k in torch.nonzero(pack.live).flatten().tolist():
                members[k].callback.logged(step, (window[k] / args.logging_steps).item(), rates[k], norms[k])
            window.zero_()
        if eval_every and step % eval_every == 0:
            validate_live(pack, members, step)
        for member in members:
            member.clock.last_step = time.perf_counter()
        if not pack.live.any():
            break
    seconds = time.perf_counter() - started
    for k, member in enumerate(members):
        copy_member(pack, k, member)
        loss = (total[k] / max(1, last[k])).item()
        metrics = {"train_runtime": seconds, "train_samples_per_second": last[k] * args.train_batch_size / seconds}
        member.output = TrainOutput(last[k], loss, {**metrics, "train_loss": loss})


def copy_member(pack: FusedStaticPack, k: int, member: FusedMember) -> None:
    """Member k's trained table into its own model (to validate, score and keep it)."""
    with torch.no_grad():
        member.table.copy_(pack.member_table(k))


def validate_live(pack: FusedStaticPack, members: Sequence[FusedMember], step: int) -> None:
    """Validate each live member at `step` with its own evaluator and report it; a pruned member leaves."""
    for k in torch.nonzero(pack.live).flatten().tolist():
        member = members[k]
        copy_member(pack, k, member)
        if member.callback.evaluated(step, member.validate(step)):
            pack.live[k] = False


class FusedGroup:
    """The rendezvous of one pack's fused members. Each member thread (of `run_in_lockstep`) calls `train` with its
    `FusedMember` or `decline` with the reason it trains alone; the baton of the lockstep turns keeps every call
    serial. Once every live member has arrived or declined, the member holding the baton trains those that arrived,
    grouped by `FusedMember.key`, and each one returns its own output (or raises the error its group raised)."""

    def __init__(self) -> None:
        self.arrived: dict[int, FusedMember] = {}
        self.declined: set[int] = set()

    def decline(self, trial_number: int, reason: str) -> None:
        """A member that trains alone, in lockstep turns: say why."""
        turn = current_member()
        if turn is not None:
            self.declined.add(turn[1])
        log.info("trial %d trains in lockstep turns, not fused: %s", trial_number, reason)

    def train(self, member: FusedMember) -> TrainOutput:
        """Hand `member`'s training over; its output once the fused pack has trained it."""
        turn = current_member()
        if turn is None:
            raise RuntimeError("a fused member trains inside a pack (sweep.training.run_in_lockstep)")
        lockstep, index = turn
        self.arrived[index] = member
        while member.output is None and member.error is None:
            if set(lockstep.live()) <= self.arrived.keys() | self.declined:
                self.train_arrived(lockstep)
            else:
                lockstep.pass_turn(index)
        if member.error is not None:
            raise member.error
        assert member.output is not None
        last_eval = member.callback.last_eval
        if last_eval is not None and last_eval[0] == member.output.global_step:
            # The study's validation evaluator keeps the embeddings of its last call, which the scoring reads (the
            # statistics, the predictions): the last call was another member's.
            member.validate(last_eval[0])
        return member.output

    def train_arrived(self, lockstep: Lockstep) -> None:
        waiting = [m for m in self.arrived.values() if m.output is None and m.error is None]
        groups: dict[tuple[Any, ...], list[FusedMember]] = {}
        for member in waiting:
            groups.setdefault(member.key(), []).append(member)
        for members in groups.values():
            numbers = ", ".join(str(m.trial_number) for m in members)
            log.info("trials %s train as one fused pack of %d", numbers, len(members))
            try:
                train_fused(members, aborted=lambda: lockstep.aborted)
                if members[0].table.is_cuda:  # each member scores on its own CUDA stream: the copies must be done
                    torch.cuda.synchronize(members[0].table.device)
            except BaseException as error:  # noqa: BLE001 - each member raises it in its own thread
                for member in members:
                    member.error = error


_current = threading.local()


def current_group() -> FusedGroup | None:
    """The fused group of the calling pack member, if its pack fuses."""
    return getattr(_current, "group", None)


@contextmanager
def joining(group: FusedGroup | None) -> Iterator[None]:
    """Within the block, the calling thread's trial trains through `group` where it can (None: never fused)."""
    _current.group = group
    try:
        yield
    finally:
        _current.group = None

"""The sentence-transformers side of a trial: the training arguments read from ``trial.*``, early stopping, the
callback that sends loss and Spearman to MLflow and the pruner, and what the console shows of training (a line per
evaluation; the trainer's bar only on a terminal, never its raw dicts). The trainer is sentence-transformers' own,
its model-card callback included (it records the training data and the loss with its parameters on the card)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import optuna
import torch
from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from transformers import EarlyStoppingCallback, TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from sweep.config import LossConfig, TrialConfig
from sweep.loggers import TrialLogger
from sweep.losses import learning_rate_mapping
from sweep.signals import check_stop
from sweep.training.resources import VALIDATION


class TrialCallback(TrainerCallback):
    """Sends the training loss (with what the loss and the `reporters` follow: a learned or scheduled scale) and the
    validation Spearman to MLflow and the Optuna pruner; stops on NaN/inf loss."""

    def __init__(
        self,
        trial: optuna.Trial,
        run: TrialLogger,
        loss: torch.nn.Module,
        on_evaluated: Callable[[int], None] | None = None,
        reporters: Sequence[Any] = (),
    ) -> None:
        self.trial, self.run, self.loss, self.on_evaluated = trial, run, loss, on_evaluated
        self.reporters = [loss, *reporters]  # whose logged_metrics() go with the training loss
        self.pruned_at: int | None = None
        self.diverged_at: int | None = None
        self.last_eval: tuple[int, float] | None = None

    def on_step_end(self, args, state, control, **kwargs):
        check_stop()  # a stop signal whose first raise was swallowed (see sweep.signals.check_stop)

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = logs or {}
        if "loss" in logs and self.logged(
            state.global_step, float(logs["loss"]), logs.get("learning_rate"), logs.get("grad_norm")
        ):
            control.should_training_stop = True

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if self.evaluated(state.global_step, float(metrics[f"eval_{VALIDATION}_spearman_cosine"])):
            control.should_training_stop = True

    def logged(self, step: int, loss: float, learning_rate: float | None, grad_norm: float | None) -> bool:
        """Send the training loss logged at `step` to MLflow; whether training must stop (the loss is NaN/inf)."""
        metrics = {"train_loss": loss, "learning_rate": learning_rate, "grad_norm": grad_norm}
        # A loss (a learnable scale) or a callback (a scale schedule) may expose values to follow during
        # training: logged_metrics() -> dict.
        for reporter in self.reporters:
            metrics.update(getattr(reporter, "logged_metrics", dict)())
        self.run.log_metrics({k: v for k, v in metrics.items() if v is not None and math.isfinite(float(v))}, step=step)
        if not math.isfinite(loss):
            self.diverged_at = step
            return True
        return False

    def evaluated(self, step: int, value: float) -> bool:
        """Send the validation Spearman at `step` to MLflow and the pruner; whether training must stop (pruned)."""
        self.last_eval = (step, value)
        self.run.log_metrics({f"{VALIDATION}_spearman": value}, step=step)
        if self.on_evaluated is not None:
            self.on_evaluated(step)
        self.trial.report(value, step)
        if self.trial.should_prune():
            self.pruned_at = step
            return True
        return False


log = logging.getLogger(__name__)


class ProgressLines(TrainerCallback):
    """One console line when training starts and one per evaluation, so that a slow trial (a transformer on CPU)
    shows where it is, in a log file as on a terminal."""

    def __init__(self, trial_number: int) -> None:
        self.trial_number = trial_number

    def on_train_begin(self, args, state, control, **kwargs):
        steps, every = state.max_steps, args.eval_steps
        log.info("trial %d: %s", self.trial_number, training_line(steps, every))

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        value = (metrics or {}).get(f"eval_{VALIDATION}_spearman_cosine", math.nan)
        log.info("trial %d: step %d/%d, validation %.4f", self.trial_number, state.global_step, state.max_steps, value)


def training_line(steps: int, every: int) -> str:
    """What a trial will do, as its first training line: the steps and when the validation set is scored (the trainer
    scores it every `every` steps; the trial scores the trained model at the end, `sweep.training.trial.score`)."""
    if every > steps:
        return f"training {steps} steps, validation at the end only (trial.eval_steps={every} is more than the steps)"
    return f"training {steps} steps, validation every {every}"


class BarWithoutDicts(ProgressCallback):
    """The trainer's progress bar without the raw log dicts it writes under every update (MLflow has them)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        return None


def show_progress(trainer: SentenceTransformerTrainer, trial_number: int, bars: bool) -> None:
    """Replace the trainer's console output (a bar that prints every log dict, or with bars off the dicts alone)
    by `ProgressLines`, plus the bar alone when ``bars``."""
    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    if bars:
        trainer.add_callback(BarWithoutDicts)
    trainer.add_callback(ProgressLines(trial_number))


def early_stopping(patience: int | None) -> list[TrainerCallback]:
    """transformers' `EarlyStoppingCallback` on STSB validation Spearman when `trial.early_stopping_patience` is set:
    training stops after that many evaluations in a row without a new best (the model kept is the last one, not the
    best: reloading the best would need a checkpoint at every evaluation)."""
    return [EarlyStoppingCallback(early_stopping_patience=patience)] if patience else []


def training_arguments(
    t: TrialConfig, max_steps: int, loss: LossConfig, output_dir: str, bars: bool
) -> SentenceTransformerTrainingArguments:
    """The trainer's arguments from the `trial` section (``t``; `max_steps`: its `trial.max_steps`, or the steps of
    one pass over the training rows when null) and the loss's learning rates (the `loss` section)."""
    device = t.device
    return SentenceTransformerTrainingArguments(
        output_dir=output_dir,
        max_steps=max_steps,
        per_device_train_batch_size=t.batch_size,
        per_device_eval_batch_size=t.eval_batch_size,
        learning_rate=t.learning_rate,
        learning_rate_mapping=learning_rate_mapping(loss),
        weight_decay=t.weight_decay,
        warmup_steps=t.warmup_ratio,  # transformers 5: a float below 1 is a ratio of max_steps
        lr_scheduler_type=t.lr_scheduler,
        optim=t.optimizer,
        batch_sampler=t.batch_sampler,
        seed=t.seed,
        data_seed=t.seed,
        eval_strategy="steps",
        eval_steps=t.eval_steps,
        # read by transformers' EarlyStoppingCallback (`early_stopping`): the trainer tracks the best value seen
        metric_for_best_model=f"eval_{VALIDATION}_spearman_cosine" if t.early_stopping_patience else None,
        logging_steps=t.logging_steps,
        logging_nan_inf_filter=False,  # a NaN/inf loss must reach the divergence check, not be averaged away
        save_strategy="no",
        report_to="none",
        dataloader_drop_last=True,
        bf16=t.precision == "bf16",
        fp16=t.precision == "fp16",
        use_cpu=device == "cpu",
        disable_tqdm=not bars,
        dataloader_pin_memory=torch.cuda.is_available() and device != "cpu",
    )

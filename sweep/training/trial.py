"""One trial: fine-tune a copy of the base model with SentenceTransformerTrainer, evaluate on STSB."""

from __future__ import annotations

import logging
import math
import tempfile
import time
from collections.abc import Callable
from typing import Any

import optuna
import torch
from omegaconf import DictConfig
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from transformers import TrainerCallback, set_seed
from transformers.trainer_callback import PrinterCallback

from sweep.evaluation import extra_sets
from sweep.evaluation.layer_grid import log_layer_grid, objective_value, stsb_layer_grid
from sweep.evaluation.predictions import log_predictions
from sweep.losses import build_loss, learning_rate_mapping, training_callbacks
from sweep.names import (
    ATTR_TEST_SPEARMAN,
    ATTR_TRAIN_SECONDS,
    ATTR_VALIDATION_SPEARMAN,
    SCALE_ZERO_MODE,
    TAG_SCALE_ZERO,
)
from sweep.signals import check_stop
from sweep.stats.probe import ConcentrationProbe, EmbeddingKeepingEvaluator, loss_scales
from sweep.tracking.mlflow_client import TrialRun
from sweep.training.lockstep import member_callbacks
from sweep.training.resources import TEST, VALIDATION, StudyResources, device_of, spearman

log = logging.getLogger(__name__)


class TrialCallback(TrainerCallback):
    """Sends the training loss and validation Spearman to MLflow and the Optuna pruner; stops on NaN/inf loss."""

    def __init__(
        self,
        trial: optuna.Trial,
        run: TrialRun,
        loss: torch.nn.Module,
        on_evaluated: Callable[[int], None] | None = None,
    ) -> None:
        self.trial, self.run, self.loss, self.on_evaluated = trial, run, loss, on_evaluated
        self.pruned_at: int | None = None
        self.diverged_at: int | None = None
        self.last_eval: tuple[int, float] | None = None

    def on_step_end(self, args, state, control, **kwargs):
        check_stop()  # a stop signal whose first raise was swallowed (see sweep.signals.check_stop)

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = logs or {}
        if "loss" in logs:
            loss = float(logs["loss"])
            metrics = {
                "train_loss": loss,
                "learning_rate": logs.get("learning_rate"),
                "grad_norm": logs.get("grad_norm"),
            }
            # A loss may expose values to follow during training (e.g. a learnable scale): logged_metrics() -> dict.
            metrics.update(getattr(self.loss, "logged_metrics", dict)())
            self.run.log_metrics(
                {k: v for k, v in metrics.items() if v is not None and math.isfinite(float(v))}, step=state.global_step
            )
            if not math.isfinite(loss):
                self.diverged_at = state.global_step
                control.should_training_stop = True

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        value = float(metrics[f"eval_{VALIDATION}_spearman_cosine"])
        step = state.global_step
        self.last_eval = (step, value)
        self.run.log_metrics({f"{VALIDATION}_spearman": value}, step=step)
        if self.on_evaluated is not None:
            self.on_evaluated(step)
        self.trial.report(value, step)
        if self.trial.should_prune():
            self.pruned_at = step
            control.should_training_stop = True


class TrialTrainer(SentenceTransformerTrainer):
    """The trainer without model-card tracking: trial models are never published, and the model-card
    callback samples training rows for widget examples on every trial."""

    def add_model_card_callback(self, default_args_dict: dict[str, Any]) -> None:
        return None


def training_arguments(cfg: DictConfig, output_dir: str, quiet: bool) -> SentenceTransformerTrainingArguments:
    t = cfg.trial
    device = t.device
    return SentenceTransformerTrainingArguments(
        output_dir=output_dir,
        max_steps=t.max_steps,
        per_device_train_batch_size=t.batch_size,
        per_device_eval_batch_size=t.eval_batch_size,
        learning_rate=t.learning_rate,
        learning_rate_mapping=learning_rate_mapping(cfg),
        weight_decay=t.weight_decay,
        warmup_steps=t.warmup_ratio,  # transformers 5: a float below 1 is a ratio of max_steps
        lr_scheduler_type=t.lr_scheduler,
        optim=t.optimizer,
        batch_sampler=t.batch_sampler,
        seed=t.seed,
        data_seed=t.seed,
        eval_strategy="steps",
        eval_steps=t.eval_steps,
        logging_steps=t.logging_steps,
        logging_nan_inf_filter=False,  # a NaN/inf loss must reach the divergence check, not be averaged away
        save_strategy="no",
        report_to="none",
        dataloader_drop_last=True,
        bf16=t.precision == "bf16",
        fp16=t.precision == "fp16",
        use_cpu=device == "cpu",
        disable_tqdm=quiet,
        dataloader_pin_memory=torch.cuda.is_available() and device != "cpu",
    )


def probe_at_evaluation(
    probe: ConcentrationProbe | None,
    cfg: DictConfig,
    model: SentenceTransformer,
    validation: EmbeddingKeepingEvaluator,
    run: TrialRun,
) -> Callable[[int], None] | None:
    """What the probe logs at each evaluation during training: every statistic (``stats.every_eval``), else the
    loss at every grid scale, but not at the last step (the final statistics log those)."""
    if probe is None:
        return None
    if cfg.stats.every_eval:
        return lambda step: probe.measure(model, validation, run, step=step)

    def losses(step: int) -> None:
        if step < cfg.trial.max_steps:
            probe.log_losses(model, run, step)

    return losses


def train_and_evaluate(
    trial: optuna.Trial,
    cfg: DictConfig,
    resources: StudyResources,
    run: TrialRun,
    quiet: bool,
    on_trained: Callable[[SentenceTransformer, float, dict[str, float]], None] | None = None,
) -> float:
    """Train one trial and return its objective (STSB validation Spearman by default). Raises optuna.TrialPruned
    when pruned. ``on_trained(model, objective, metrics)`` runs once the trial is complete (to keep its model)."""
    if cfg.trial.torch_threads:
        torch.set_num_threads(cfg.trial.torch_threads)
    stats = cfg.stats
    heldout_pairs = stats.heldout_pairs  # held out with statistics on or off: they never change what is trained
    splits = resources.datasets(cfg.data, heldout_pairs)
    validation, test = resources.evaluators(cfg.data, heldout_pairs, cfg.trial.eval_batch_size)
    model = resources.model(cfg.model, cfg.trial.seed, device_of(cfg))
    probe = None
    if stats.enabled:
        # The softmax statistics use the in-batch scale: `scale`, or AnglE's in-batch-negatives scale.
        softmax_scale = cfg.loss.scale if "scale" in cfg.loss else cfg.loss.get("ibn_scale", 1.0)
        probe = ConcentrationProbe(
            stats,
            splits.get("heldout"),
            cfg.trial.batch_size,
            softmax_scale,
            cfg.trial.eval_batch_size,
            similarity=cfg.loss.get("similarity", "cosine"),
            loss_scales=loss_scales(cfg),
        )
    initial = resources.initial_evaluation(
        cfg, model, validation, splits["validation"], probe
    )  # before the loss can touch the model
    run.log_metrics({f"{VALIDATION}_spearman": initial.validation_spearman}, step=0)
    layer_grid = cfg.eval.layer_grid.enabled
    if initial.layer_grid is not None:
        log_layer_grid(run, initial.layer_grid, "validation", step=0)
    if probe is not None and initial.encodings is not None:
        probe.log(initial.encodings, run, step=0, suffix="_init")

    set_seed(cfg.trial.seed)
    loss = build_loss(model, cfg)
    scale_zero = cfg.loss.get("scale") == 0
    if scale_zero:
        run.set_tags({TAG_SCALE_ZERO: SCALE_ZERO_MODE})
        initial_weights = {name: p.detach().clone() for name, p in model.named_parameters()}
    if probe is not None:
        probe.follow(loss)  # the statistics use the loss's current scale (a learned one included)
    extra = resources.extra.get(cfg)
    scorer = extra_sets.TrialScorer(extra, model, run.log_metrics)
    every_eval = extra_sets.chain(
        probe_at_evaluation(probe, cfg, model, validation, run), scorer if cfg.eval.extra_every_eval else None
    )
    callback = TrialCallback(trial, run, loss, on_evaluated=every_eval)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = TrialTrainer(
            model=model,
            args=training_arguments(cfg, output_dir, quiet),
            train_dataset=splits["train"],
            loss=loss,
            evaluator=validation,
            callbacks=[callback, *training_callbacks(loss), *member_callbacks()],  # a packed trial takes turns
        )
        if quiet:
            trainer.remove_callback(PrinterCallback)
        output = trainer.train()
    train_seconds = time.perf_counter() - start

    if callback.diverged_at is not None:
        raise DivergenceError(f"training loss became NaN/inf at step {callback.diverged_at}")
    if callback.pruned_at is not None:
        raise optuna.TrialPruned(f"pruned at step {callback.pruned_at}")

    steps = output.global_step
    if callback.last_eval is not None and callback.last_eval[0] == steps:
        val = callback.last_eval[1]
    else:
        val = spearman(validation, model)
        run.log_metrics({f"{VALIDATION}_spearman": val}, step=steps)
    if probe is not None and not (stats.every_eval and callback.last_eval and callback.last_eval[0] == steps):
        probe.measure(model, validation, run, step=steps)
    log_predictions(run, validation, "validation")  # the evaluator's last call is on the final model
    test_value = spearman(test, model)
    log_predictions(run, test, "test")
    metrics = {
        f"{TEST}_spearman": test_value,
        "train_seconds": train_seconds,
        "train_samples_per_second": output.metrics.get("train_samples_per_second"),
        "train_loss_mean": output.metrics.get("train_loss"),
    }
    if scale_zero:
        moved = max((p.detach() - initial_weights[name]).abs().max().item() for name, p in model.named_parameters())
        metrics["max_weight_change"] = moved
    grid = None
    if layer_grid:
        grid = stsb_layer_grid(model, splits["validation"], cfg)
        log_layer_grid(run, grid, "validation", step=steps)
        log_layer_grid(run, stsb_layer_grid(model, splits["test"], cfg), "test", step=steps)
    extra_scores = scorer.final(steps)
    if extra_sets.names_objective(cfg):
        objective = extra_sets.objective(cfg.eval, val, extra, extra_scores)
    else:
        objective = objective_value(cfg.eval, val, grid)
    metrics["objective"] = objective
    run.log_metrics(metrics, step=steps)
    trial.set_user_attr(ATTR_VALIDATION_SPEARMAN, val)
    trial.set_user_attr(ATTR_TEST_SPEARMAN, test_value)
    trial.set_user_attr(ATTR_TRAIN_SECONDS, train_seconds)
    extra_sets.record(trial, extra_scores)
    if on_trained is not None:
        on_trained(model, objective, {f"{VALIDATION}_spearman": val, **metrics, **extra_scores})
    return objective


class DivergenceError(RuntimeError):
    """The training loss became NaN or infinite."""

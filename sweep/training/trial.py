"""One trial as a few named steps: prepare (data and its MLflow inputs, model, probe, untrained evaluation), train
(the model card filled first), check the outcome (diverged or pruned), score the trained model (STSB, statistics,
layer grid, extra sets; a collapsed model is flagged) and record the objective."""

from __future__ import annotations

import functools
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import optuna
import pandas as pd
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from transformers import set_seed
from transformers.trainer_callback import PrinterCallback

from sweep.config import eval_batch_size
from sweep.errors import DivergenceError
from sweep.evaluation import (
    extra_sets,
    grid_sets,
    log_layer_grid,
    log_predictions,
    log_table,
    objective_value,
    stsb_layer_grid,
    untrained_part,
)
from sweep.loggers import TrialLogger
from sweep.losses import BaseModel, build_loss, schedule_callback, training_callbacks
from sweep.names import (
    ATTR_COLLAPSED,
    ATTR_TEST_SPEARMAN,
    ATTR_TRAIN_SECONDS,
    ATTR_VALIDATION_SPEARMAN,
    SCALE_ZERO_MODE,
    TAG_COLLAPSE_REASON,
    TAG_COLLAPSED,
    TAG_ONE_PASS_STEPS,
    TAG_SCALE_ZERO,
)
from sweep.stats import ConcentrationProbe, EmbeddingKeepingEvaluator, collapse_reason
from sweep.training import model_card
from sweep.training.fused_fit import why_not_fused
from sweep.training.fused_group import FusedMember, current_group
from sweep.training.lockstep import member_callbacks
from sweep.training.resources import TEST, VALIDATION, StudyResources, TrackedData, device_of, spearman
from sweep.training.step_clock import StepClock
from sweep.training.trainer import TrialCallback, early_stopping, show_progress, training_arguments
from sweep.training.trial_settings import TrialSettings

log = logging.getLogger(__name__)

# (model, objective, metrics, why the model collapsed or None), with the keywords step (the last training step, where
# the final metrics are logged) and data (the trial's datasets as MLflow records them)
OnTrained = Callable[..., object]


def probe_at_evaluation(
    probe: ConcentrationProbe | None,
    every_eval: bool,
    max_steps: int,
    model: SentenceTransformer,
    validation: EmbeddingKeepingEvaluator,
    run: TrialLogger,
) -> Callable[[int], object] | None:
    """What the probe logs at each evaluation during training: every statistic (``stats.every_eval``), else the
    loss at every grid scale, but not at the last step, ``max_steps`` (the final statistics log those)."""
    if probe is None:
        return None
    if every_eval:
        return lambda step: probe.measure(model, validation, run, step=step)

    def losses(step: int) -> None:
        if step < max_steps:
            probe.log_losses(model, run, step)

    return losses


@dataclass
class Prepared:
    """What a trial trains and scores: its splits (and their MLflow records), STSB evaluators, model and (with
    statistics on) probe."""

    splits: dict[str, Dataset]
    data: TrackedData
    validation: EmbeddingKeepingEvaluator
    test: EmbeddingKeepingEvaluator
    model: SentenceTransformer
    probe: ConcentrationProbe | None


@dataclass
class Trained:
    """The outcome of training: the trainer's output, the callback that watched it and the seconds it took."""

    output: Any
    callback: TrialCallback
    seconds: float
    extra: extra_sets.ExtraEvaluators
    scorer: extra_sets.TrialScorer
    initial_weights: dict[str, torch.Tensor] | None


def prepare(settings: TrialSettings, resources: StudyResources, run: TrialLogger) -> Prepared:
    """Load the trial's data, evaluators and base model (shared by the study) and log the untrained model's
    validation Spearman, layer grid and statistics at step 0, before the loss can touch the model."""
    trial, loss, stats = settings.trial, settings.loss, settings.stats
    if trial.torch_threads:
        torch.set_num_threads(trial.torch_threads)
    heldout_pairs = stats.heldout_pairs  # held out with statistics on or off: they never change what is trained
    splits = resources.datasets(settings.data, heldout_pairs)
    batch_size = eval_batch_size(trial, settings.model.kind)
    data = resources.tracked_data(settings.data, heldout_pairs, settings.eval, batch_size)
    run.log_inputs(data.inputs)
    validation, test = resources.evaluators(settings.data, heldout_pairs, trial.eval_batch_size)
    model = resources.model(settings.model, trial.seed, device_of(trial))
    probe = None
    if stats.enabled:
        # The softmax statistics use the in-batch scale: `scale`, or AnglE's in-batch-negatives scale.
        softmax_scale = loss.scale if "scale" in loss else loss.get("ibn_scale", 1.0)
        probe = ConcentrationProbe(
            stats,
            splits.get("heldout"),
            trial.batch_size,
            softmax_scale,
            trial.eval_batch_size,
            similarity=loss.get("similarity", "cosine"),
            loss_scales=settings.loss_scales,
        )
    initial = resources.initial_evaluation(settings, model, (validation, test), splits["validation"], probe)
    run.log_metrics({f"{VALIDATION}_spearman": initial.validation_spearman}, step=0)
    for split, table in initial.predictions.items():  # what the answer compares the best scale with
        log_table(run, table, untrained_part(split))
    if initial.layer_grid is not None:
        log_layer_grid(run, initial.layer_grid, "validation", step=0)
    if probe is not None and initial.encodings is not None:
        probe.log(initial.encodings, run, step=0, suffix="_init")
    return Prepared(splits, data, validation, test, model, probe)


def train(
    trial: optuna.Trial,
    settings: TrialSettings,
    resources: StudyResources,
    run: TrialLogger,
    p: Prepared,
    quiet: bool,
    clock: StepClock,
) -> Trained:
    """Fine-tune the model with the trial's loss (scale 0 tagged and its weights kept to show they do not move);
    `clock` marks the first and last training steps."""
    trial_section = settings.trial
    max_steps = trial_section.max_steps
    if max_steps is None:  # one pass over the training rows: the number of full batches
        max_steps = len(p.splits["train"]) // trial_section.batch_size
        run.set_tags({TAG_ONE_PASS_STEPS: str(max_steps)})
    set_seed(trial_section.seed)
    loss = build_loss(p.model, settings.loss, BaseModel(settings.model, trial_section.seed))
    initial_weights = None
    if settings.loss.get("scale") == 0:
        run.set_tags({TAG_SCALE_ZERO: SCALE_ZERO_MODE})
        initial_weights = {name: param.detach().clone() for name, param in p.model.named_parameters()}
    schedule = schedule_callback(loss, settings.loss)  # None: a constant scale
    if p.probe is not None:  # the statistics use the loss's current scale (a learned or scheduled one included)
        p.probe.follow(loss, schedule.current_scale if schedule is not None else None)
    extra = resources.extra.get(settings.eval, settings.data, eval_batch_size(trial_section, settings.model.kind))
    scorer = extra_sets.TrialScorer(extra, p.model, run.log_metrics)
    every_eval = extra_sets.chain(
        probe_at_evaluation(p.probe, settings.stats.every_eval, max_steps, p.model, p.validation, run),
        scorer if settings.eval.extra_every_eval else None,
    )
    scheduled = [schedule] if schedule is not None else []
    callback = TrialCallback(trial, run, loss, on_evaluated=every_eval, reporters=scheduled)
    # before the trainer: its card callback reads it
    model_card.describe(p.model, settings.model, settings.title, p.data.training, trial_section.learning_rate)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = SentenceTransformerTrainer(
            model=p.model,
            args=training_arguments(
                trial_section, max_steps, settings.loss, output_dir, bars=not quiet and sys.stderr.isatty()
            ),
            train_dataset=p.splits["train"],
            loss=loss,
            evaluator=p.validation,
            callbacks=[
                callback,
                *training_callbacks(loss),
                *scheduled,
                *early_stopping(trial_section.early_stopping_patience),
                *member_callbacks(),  # a packed trial takes turns
                clock,
            ],
        )
        if quiet:
            trainer.remove_callback(PrinterCallback)
        else:
            show_progress(trainer, trial.number, bars=sys.stderr.isatty())  # a log file gets lines, not redraws
        group = current_group()
        reason = None if group is None else why_not_fused(trainer, loss, bool(scheduled), trial_section, max_steps)
        if group is not None and reason is None:
            validate = functools.partial(spearman, p.validation, p.model)
            scale = settings.loss.scale
            output = group.train(FusedMember.of(trial.number, trainer, scale, callback, validate, clock, max_steps))
        else:
            if group is not None and reason is not None:
                group.decline(trial.number, reason)
            output = trainer.train()
    return Trained(output, callback, time.perf_counter() - start, extra, scorer, initial_weights)


def check_outcome(trained: Trained) -> None:
    """Raise when training diverged (`DivergenceError`) or the pruner stopped it (`optuna.TrialPruned`)."""
    if trained.callback.diverged_at is not None:
        raise DivergenceError(f"training loss became NaN/inf at step {trained.callback.diverged_at}")
    if trained.callback.pruned_at is not None:
        raise optuna.TrialPruned(f"pruned at step {trained.callback.pruned_at}")


def score(
    run: TrialLogger,
    p: Prepared,
    trained: Trained,
    every_eval: bool,
    cells: tuple[tuple[int, ...], tuple[int, ...]] | None,
    batch_size: int,
) -> tuple[float, dict[str, float], pd.DataFrame | None, str | None]:
    """Score the trained model: STSB validation (reusing the last evaluation when it was at the last step) and
    test with their per-pair predictions, the statistics (already measured at the last step with
    ``stats.every_eval``), the layer grid (its `grid_sets`, None when off) in batches of ``batch_size``; returns
    (validation, metrics, grid, why the model collapsed or None: `sweep.stats.collapse` on the validation cosines)."""
    steps = trained.output.global_step
    last_eval = trained.callback.last_eval
    if last_eval is not None and last_eval[0] == steps:
        val = last_eval[1]
    else:
        val = spearman(p.validation, p.model, step=steps)
        run.log_metrics({f"{VALIDATION}_spearman": val}, step=steps)
    if p.probe is not None and not (every_eval and last_eval and last_eval[0] == steps):
        p.probe.measure(p.model, p.validation, run, step=steps)
    collapsed = collapse_reason(log_predictions(run, p.validation, "validation"))  # the last call: the final model
    test_value = spearman(p.test, p.model, step=steps)
    log_predictions(run, p.test, "test")
    metrics = {
        f"{TEST}_spearman": test_value,
        "train_seconds": trained.seconds,
        "trained_steps": steps,  # below trial.max_steps when training stopped early (trial.early_stopping_patience)
        "train_samples_per_second": trained.output.metrics.get("train_samples_per_second"),
        "train_loss_mean": trained.output.metrics.get("train_loss"),
    }
    if trained.initial_weights is not None:
        metrics["max_weight_change"] = max(
            (param.detach() - trained.initial_weights[name]).abs().max().item()
            for name, param in p.model.named_parameters()
        )
    grid = None
    if cells is not None:
        grid = stsb_layer_grid(p.model, p.splits["validation"], cells, batch_size)
        log_layer_grid(run, grid, "validation", step=steps)
        log_layer_grid(run, stsb_layer_grid(p.model, p.splits["test"], cells, batch_size), "test", step=steps)
    return val, metrics, grid, collapsed


def flag_collapse(trial: optuna.Trial, run: TrialLogger, reason: str) -> None:
    """Tag a trial whose model collapsed (its Spearman is noise, not a score) and say so in the log."""
    run.set_tags({TAG_COLLAPSED: "true", TAG_COLLAPSE_REASON: reason})
    trial.set_user_attr(ATTR_COLLAPSED, reason)
    log.warning("trial %d: the trained model collapsed (%s); it is never kept as the best", trial.number, reason)


def train_and_evaluate(
    trial: optuna.Trial,
    settings: TrialSettings,
    resources: StudyResources,
    run: TrialLogger,
    quiet: bool,
    clock: StepClock,
    on_trained: OnTrained | None = None,
) -> float:
    """Train one trial and return its objective (STSB validation Spearman by default). Raises optuna.TrialPruned
    when pruned. ``on_trained(model, objective, metrics, collapsed)`` runs once the trial is complete (to keep its
    model); `clock` times the trial's parts and spans (`sweep.training.step_clock`)."""
    if not quiet:
        log.info("trial %d: scoring the untrained model (step 0)", trial.number)
    with clock.span("preparing"):
        prepared = prepare(settings, resources, run)
    trained = train(trial, settings, resources, run, prepared, quiet, clock)
    check_outcome(trained)
    layer_grid = settings.eval.layer_grid
    cells = grid_sets(layer_grid, settings.model) if layer_grid.enabled else None
    batch_size = eval_batch_size(settings.trial, settings.model.kind)
    steps = trained.output.global_step
    with clock.span("final_scoring"):
        val, metrics, grid, collapsed = score(run, prepared, trained, settings.stats.every_eval, cells, batch_size)
        if collapsed is not None:
            flag_collapse(trial, run, collapsed)
        extra_scores = trained.scorer.final(steps)
        objective = objective_value(settings.eval, val, grid, trained.extra, extra_scores)
        metrics["objective"] = objective
        run.log_metrics(metrics, step=steps)
    trial.set_user_attr(ATTR_VALIDATION_SPEARMAN, val)
    trial.set_user_attr(ATTR_TEST_SPEARMAN, metrics[f"{TEST}_spearman"])
    trial.set_user_attr(ATTR_TRAIN_SECONDS, trained.seconds)
    extra_sets.record(trial, extra_scores)
    if on_trained is not None:
        scores = {f"{VALIDATION}_spearman": val, **metrics, **extra_scores}
        with clock.span("keeping"):
            on_trained(prepared.model, objective, scores, collapsed, step=steps, data=prepared.data)
    return objective

"""Item 8: trials per hour of packed trials (`study.pack=K`) and of N workers against one trial at a time, and the
physical floor: the same training steps and evaluations in a bare torch loop, so that every figure can also be read
against what the hardware does without any framework."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.runners import STUDY, FrameworkSweep, grid_override, run_framework
from benchmarks.settings import Settings
from benchmarks.table import Row, Stat


@dataclass
class PackRun:
    """One study of item 8: `pack` trials per process, `workers` processes, and its trials' time span."""

    model: str
    pack: int
    workers: int
    sweep: FrameworkSweep
    span_s: float  # first trial start to last trial end (Optuna), so process start and imports do not count
    fuse: bool = True  # study.fuse: a pack of static trials trains fused (false: lockstep turns)

    @property
    def trials_per_hour(self) -> float:
        return 3600 * len(self.sweep.trials) / self.span_s if self.span_s else math.nan

    @property
    def label(self) -> str:
        if self.workers > 1:
            return f"{self.workers} workers"
        return f"pack {self.pack}" if self.fuse else f"pack {self.pack} in lockstep turns (study.fuse=false)"


def study_overrides(s: Settings, model: str) -> list[str]:
    """The study of item 8 for `model` (statistics off: the floor does not compute them)."""
    return [
        f"model={model}",
        grid_override(s.pack_scales),
        f"trial.max_steps={s.pack_steps}",
        f"trial.eval_steps={s.pack_eval_steps}",
        "stats.enabled=false",
    ]


def trial_span(root: Path) -> float:
    """Seconds from the first trial's start to the last trial's end in the study under `root`."""
    import optuna  # a slow import, only once a study has run

    trials = [t for t in optuna.load_study(study_name=STUDY, storage=f"sqlite:///{root}/optuna.db").trials]
    done = [(start, end) for t in trials if (start := t.datetime_start) and (end := t.datetime_complete)]
    if not done:
        return math.nan
    return (max(end for _, end in done) - min(start for start, _ in done)).total_seconds()


def bare_loop_seconds(s: Settings, model: str, data_dir: str, scale: float) -> float:
    """One trial of item 8's study at `scale` in a bare torch loop on the CPU (`bare_loop`)."""
    return bare_loop(study_overrides(s, model), data_dir, scale)


def bare_loop(overrides: Sequence[str], data_dir: str, scale: float) -> float:
    """Seconds of one trial's training steps and evaluations in a bare torch loop, for the study that `overrides`
    (over the `mnrl_scale` experiment) describes, at `scale`: pre-tokenized batches, the trial's fused AdamW, linear
    warmup schedule and gradient clipping, bf16 autocast when the trial's precision is bf16, on the trial's device,
    the evaluations called directly (every eval step, the end, the test split; not step 0, which a study evaluates
    once for all its trials)."""
    import torch
    from hydra import compose, initialize_config_dir
    from sentence_transformers.util import batch_to_device
    from transformers import get_scheduler

    from sweep.config.checks import CONFIG_DIR, with_values
    from sweep.inputs.data import load_all
    from sweep.inputs.model import build_model
    from sweep.losses import BaseModel, build_loss
    from sweep.study.validation import derived_values
    from sweep.training.resources import spearman, stsb_evaluator

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        extra = [f"loss.scale={scale}", f"data.local_dir={data_dir}"]
        cfg = compose("config", overrides=["+experiment=mnrl_scale", *overrides, *extra])
    cfg = with_values(cfg, derived_values(cfg.loss, cfg.trial, cfg.model.kind))
    t = cfg.trial
    device = str(t.device) if str(t.device) != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    splits = load_all(cfg.data, 0)
    validation = stsb_evaluator(splits["validation"], "v", t.eval_batch_size)
    test = stsb_evaluator(splits["test"], "t", t.eval_batch_size)
    net = build_model(cfg.model, seed=t.seed, device=device)
    loss = build_loss(net, cfg.loss, BaseModel(cfg.model, t.seed))
    rows = splits["train"].shuffle(seed=t.seed)
    columns = rows.column_names
    batches = [
        [net.tokenize(rows[i * t.batch_size : (i + 1) * t.batch_size][c]) for c in columns] for i in range(t.max_steps)
    ]
    params = [p for p in loss.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=t.learning_rate, weight_decay=t.weight_decay, fused=True)
    schedule = get_scheduler(t.lr_scheduler, optimizer, math.ceil(t.warmup_ratio * t.max_steps), t.max_steps)
    autocast = torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=t.precision == "bf16")
    synchronize = torch.cuda.synchronize if device.startswith("cuda") else lambda: None
    synchronize()
    start = time.perf_counter()
    for step, features in enumerate(batches, start=1):
        net.train()
        on_device = [batch_to_device(dict(f), torch.device(device)) for f in features]  # copies: the loss adds keys
        with autocast:
            value = loss(on_device, None)
        value.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if step % t.eval_steps == 0 or step == t.max_steps:
            spearman(validation, net)
    spearman(test, net)
    synchronize()
    return time.perf_counter() - start


def measure_packing(s: Settings, data_dir: str, work: Path, log: Callable[[str], None]) -> list[Row]:
    """Per model: the floor, one trial at a time, each pack size and each worker count, in this one run."""
    rows: list[Row] = []
    for model in s.pack_models:
        floor = statistics.median(bare_loop_seconds(s, model, data_dir, scale) for scale in s.pack_scales[:2])
        log(f"  {model}: bare loop {floor:.2f} s per trial")
        runs = []
        # a static model's packs fuse; the same packs in lockstep turns beside them (a transformer's packs take turns)
        lockstep = [(k, 1, False) for k in s.pack_lockstep] if model.startswith("static") else []
        for pack, workers, fuse in (
            [(k, 1, True) for k in s.pack_sizes] + lockstep + [(1, n, True) for n in s.pack_workers]
        ):
            root = work / f"pack_{model}_{pack}_{workers}{'' if fuse else '_lockstep'}"
            extra = [f"study.pack={pack}", f"study.n_workers={workers}", f"study.fuse={str(fuse).lower()}"]
            sweep = run_framework(root, [*study_overrides(s, model), *extra], data_dir, s.timeout_s)
            runs.append(PackRun(model, pack, workers, sweep, trial_span(root), fuse))
            log(f"  {model} {runs[-1].label}: {runs[-1].trials_per_hour:.0f} trials/h")
        rows += packing_rows(model, floor, runs)
    return rows


def packing_rows(model: str, floor_s: float, runs: list[PackRun]) -> list[Row]:
    """Item 8's rows for one model: the floor ratio, then each variant's trials per hour / one at a time."""
    alone = runs[0]
    later = [t.wall_s for t in alone.sweep.trials if not t.first_in_process and t.wall_s]
    per_trial = Stat.of([w / floor_s for w in later])
    floor_rate = 3600 / floor_s
    rows = [
        Row(
            "8",
            f"{model}: framework trial (one at a time) / bare torch loop (physical floor), wall time",
            f"{statistics.median(later):.2f} s" if later else "-",
            f"{floor_s:.2f} s",
            per_trial,
            "<= 1.2",
            "trials after the first of the process (the first also loads); statistics off",
        )
    ]
    for run in runs[1:]:
        rows.append(
            Row(
                "8",
                f"{model}: trials per hour, {run.label} / one at a time",
                f"{run.trials_per_hour:.0f}/h",
                f"{alone.trials_per_hour:.0f}/h",
                Stat.of([run.trials_per_hour / alone.trials_per_hour]),
                "",
                f"{run.trials_per_hour / floor_rate:.2f} x the floor's {floor_rate:.0f}/h; "
                f"one at a time: {alone.trials_per_hour / floor_rate:.2f} x",
            )
        )
    return rows

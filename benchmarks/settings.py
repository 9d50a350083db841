"""Sizes of a benchmark run: the quick and full settings, the pruning variants, and the expected duration."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PruneVariant:
    """One pruned study compared with the full grid."""

    label: str
    pruner: str  # median | successive_halving | hyperband
    order: str  # ascending (the grid as written) | shuffled (the grid in a seeded random order) | tpe | random
    sampler: str = "grid"


@dataclass(frozen=True)
class Settings:
    """Sizes of one benchmark run. `QUICK` checks the code; `FULL` is the measurement (<= 15 min on 2 cores)."""

    name: str
    scales: tuple[float, ...]  # items 1-3
    steps: int
    eval_steps: int
    repeats: int  # of the sweeps of items 1-3
    prune_scales: tuple[float, ...]  # item 4
    prune_steps: int
    prune_eval_steps: int
    prune_variants: tuple[PruneVariant, ...]
    layer_pairs: int | None  # item 5: STSB validation pairs (None: all 1500)
    layers: tuple[int, ...]
    dims: tuple[int, ...]
    layer_repeats: int
    encode_pairs: int | None  # item 6
    encode_repeats: int
    timeout_s: int = 900  # per subprocess
    # item 8: packed trials and workers, against one trial at a time and the bare-loop floor
    pack_models: tuple[str, ...] = ("static_minilm",)
    pack_scales: tuple[float, ...] = (1.0, 5.0, 20.0, 50.0)
    pack_steps: int = 10
    pack_eval_steps: int = 5
    pack_sizes: tuple[int, ...] = (1, 2, 4)  # the first is the reference: one trial at a time
    pack_workers: tuple[int, ...] = (2,)
    pack_lockstep: tuple[int, ...] = (4,)  # static packs also run in lockstep turns (study.fuse=false), to compare
    # item 9: a race over the seeds replayed on results folders that trained every scale x seed and shipped their
    # predictions (benchmarks/race.py; `--race-folders`): the first against the goals, the others beside it; none
    # given, item 9 is skipped
    race_folders: tuple[str, ...] = ()
    race_min_seeds: int = 2  # study.race.min_seeds
    race_orders: int | None = None  # seed orders replayed (None: every order)
    # item 10: each experiment's full grid against its race over seeds and steps, both run here, live
    live_races: tuple[str, ...] = ("mnrl_scale", "mnrl_scale_isotropic")
    live_race_seeds: int = 5
    live_race_overrides: tuple[str, ...] = ()  # quick: a small grid of short trials
    live_race_timeout_s: int = 3600  # per study: a 5-seed grid is 45 trials (15 min on a 2-core machine others share)
    # item 11: the default experiment as a user runs it (the best model kept; statistics on, on without figures, off),
    # with these seeds: the share of each trial's wall time outside its training steps
    between_seeds: int = 1
    between_overrides: tuple[str, ...] = ()  # quick: a small grid of short trials
    # item 12: `--help`, a refused config and the rerun of a finished study (this tiny one), each run this often
    answer_repeats: int = 3
    answer_overrides: tuple[str, ...] = (
        "study.search_space.loss.scale=[5,20]",
        "trial.max_steps=4",
        "trial.eval_steps=2",
        "stats.enabled=false",
    )


PRUNE_VARIANTS = (
    PruneVariant(
        "median, grid listed as in the experiment (the study queues it in a seeded shuffle)", "median", "ascending"
    ),
    PruneVariant(
        "successive halving, grid listed as in the experiment (same queue order)", "successive_halving", "ascending"
    ),
    PruneVariant(
        "successive halving, grid listed shuffled (queued in another seeded shuffle)", "successive_halving", "shuffled"
    ),
    PruneVariant("median, TPE over the scales as a categorical", "median", "tpe", sampler="tpe"),
)
# sweep/conf/experiment/mnrl_scale.yaml's grid without its scale-0 control, which sentence-transformers' MNRL refuses
# ("Scale must be a positive value"), so the plain baseline cannot run it
DEFAULT_GRID = (1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 50.0)

QUICK = Settings(
    name="quick",
    scales=(5.0, 20.0),
    steps=20,
    eval_steps=10,
    repeats=1,
    prune_scales=(1.0, 5.0, 20.0, 50.0),
    prune_steps=12,
    prune_eval_steps=4,
    prune_variants=(PRUNE_VARIANTS[3],),  # the categorical (non-grid) path; the reference runs the grid path
    layer_pairs=100,
    layers=(1, 2, 3),
    dims=(384, 128),
    layer_repeats=1,
    encode_pairs=200,
    encode_repeats=1,
    race_orders=2,
    live_races=("mnrl_scale",),
    live_race_seeds=3,
    live_race_overrides=(
        "study.search_space.loss.scale=[0,1,20]",
        "trial.max_steps=12",
        "trial.eval_steps=4",
        "data.train.max_samples=512",
    ),
    between_overrides=("study.search_space.loss.scale=[1,20,50]", "trial.max_steps=12", "trial.eval_steps=4"),
    answer_repeats=1,
)

# Items 1-3 run the default sweep's grid (mnrl_scale's 8 positive scales) once, at half its steps; item 4 prunes the
# same grid at the same settings, so item 3's full framework sweep (statistics off) is its reference.
FULL = Settings(
    name="full",
    scales=DEFAULT_GRID,
    steps=150,
    eval_steps=25,
    repeats=1,
    prune_scales=DEFAULT_GRID,
    prune_steps=150,
    prune_eval_steps=25,
    prune_variants=PRUNE_VARIANTS,
    layer_pairs=750,
    layers=(1, 2, 3),
    dims=(384, 256, 128, 64),
    layer_repeats=3,
    encode_pairs=750,
    encode_repeats=3,
    pack_models=("static_minilm", "minilm_l1"),
    pack_scales=DEFAULT_GRID,
    pack_steps=50,
    pack_eval_steps=25,
    pack_sizes=(1, 2, 4, 8),
)

# Rough costs on a quiet 2-core machine (seconds), for the printed estimate only: a process's fixed cost
# (interpreter, imports, loading; the framework also creates its Optuna and MLflow databases), a training step,
# an STSB validation evaluation of the static model, the statistics of one trial, and MiniLM-3-layer encoding.
COST = {
    "baseline_process": 7.0,
    "framework_process": 15.0,
    "step": 0.07,
    "eval": 0.4,
    "stats": 3.0,
    "minilm_sentence": 1 / 600,
    "race_replay": 90.0,  # item 9 over every order of a 5-seed study (its distinct rounds: the orders share them)
    "default_trial": 12.0,  # items 10-11: one trial of mnrl_scale (120 steps, statistics on)
    "answer": 8.0,  # item 12: a command that trains nothing (the rerun opens the study and its MLflow run)
}


def expected_seconds(s: Settings) -> float:
    """A rough duration of a run with settings `s` on a quiet 2-core machine."""

    def trial(steps: int, eval_steps: int) -> float:
        return COST["step"] * steps + COST["eval"] * (steps // eval_steps + 3)

    baseline = len(s.scales) * (COST["baseline_process"] + trial(s.steps, s.eval_steps))
    framework = 2 * COST["framework_process"] + len(s.scales) * (2 * trial(s.steps, s.eval_steps) + COST["stats"])
    reference = 0 if reuses_sweep(s) else 1
    pruning = (reference + 0.5 * len(s.prune_variants)) * (
        COST["framework_process"] + len(s.prune_scales) * trial(s.prune_steps, s.prune_eval_steps)
    )
    layer_sentences = 2 * (s.layer_pairs or 1500)
    layer = (s.layer_repeats + 1) * layer_sentences * COST["minilm_sentence"] * (
        1 + 1.2 + sum(s.layers) / max(s.layers)
    ) + 10
    encode_sentences = 2 * (s.encode_pairs or 1500)
    encode = (s.encode_repeats + 1) * encode_sentences * COST["minilm_sentence"] * 3 + 10
    # item 8: per model, each variant a framework process over the grid, and the bare loop over two scales
    variants = len(s.pack_sizes) + len(s.pack_workers)
    per_model = len(s.pack_scales) * trial(s.pack_steps, s.pack_eval_steps)
    packing = len(s.pack_models) * (
        variants * (COST["framework_process"] + per_model) + 2 * per_model / len(s.pack_scales)
    )
    transformer = 5.0 if any(m != "static_minilm" for m in s.pack_models) else 1.0  # MiniLM steps cost more
    race = COST["race_replay"] * (1.0 if s.race_orders is None else 0.3)
    # item 10: per experiment the full grid (9 scales x the seeds) and a race at about half of it
    live = len(s.live_races) * (2 * COST["framework_process"] + 1.5 * 9 * s.live_race_seeds * COST["default_trial"])
    live *= 0.1 if s.live_race_overrides else 1.0
    between = 3 * (
        COST["framework_process"] + 9 * s.between_seeds * COST["default_trial"] * (0.1 if s.between_overrides else 1.0)
    )
    # item 12: the tiny study, then per repeat the baseline and three commands that train nothing
    answers = COST["framework_process"] + s.answer_repeats * 3 * COST["answer"]
    statics = sum(m.startswith("static") for m in s.pack_models)  # their packs also run in lockstep turns
    packing += statics * len(s.pack_lockstep) * (COST["framework_process"] + per_model) * 2 / (1 + transformer)
    fixed = pruning + layer + encode + packing * (1 + transformer) / 2 + race + live + between + answers
    return s.repeats * (baseline + framework) + fixed


def reuses_sweep(s: Settings) -> bool:
    """Whether item 3's framework sweep (statistics off) is item 4's full-grid reference: same grid and schedule."""
    return (s.scales, s.steps, s.eval_steps) == (s.prune_scales, s.prune_steps, s.prune_eval_steps)

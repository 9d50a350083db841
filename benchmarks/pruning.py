"""Item 4: how many training steps a pruned study saves against the full grid, and whether it finds the same scale."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.runners import FrameworkSweep, grid_override, recorded, run_framework
from benchmarks.settings import PruneVariant, Settings
from benchmarks.table import Row, Stat


@dataclass
class PruneResult:
    """One study of item 4 and the training steps it took."""

    variant: PruneVariant | None  # None: the full grid
    sweep: FrameworkSweep

    @property
    def steps(self) -> int:
        """Steps actually trained (`FrameworkSweep.steps`)."""
        return self.sweep.steps


def categorical_overrides(scales: Sequence[float]) -> list[str]:
    """The same scale values as a categorical distribution (a TPE/random study instead of a grid)."""
    choices = ",".join(f"{s:g}" for s in scales)
    return [
        "~study.search_space.loss.scale",
        f"+study.search_space.loss.scale={{type:categorical,choices:[{choices}]}}",
        f"study.n_trials={len(scales)}",
    ]


def prune_overrides(s: Settings, variant: PruneVariant | None) -> list[str]:
    """The overrides of one study of item 4: the full grid without pruner (``variant`` None), or a pruned variant."""
    common = [f"trial.max_steps={s.prune_steps}", f"trial.eval_steps={s.prune_eval_steps}", "stats.enabled=false"]
    if variant is None:
        return [grid_override(s.prune_scales), *common, "study.pruner.name=none"]
    pruner = [
        f"study.pruner.name={variant.pruner}",
        "study.pruner.n_startup_trials=2",
        "study.pruner.n_warmup_steps=0",
        # Optuna steps are training steps (the trial reports at global_step): the first rung is the first evaluation.
        f"study.pruner.min_resource={s.prune_eval_steps}",
    ]
    if variant.sampler == "grid":
        scales = list(s.prune_scales)
        if variant.order == "shuffled":
            random.Random(0).shuffle(scales)
        return [grid_override(scales), *common, *pruner]
    return [*categorical_overrides(s.prune_scales), f"study.sampler.name={variant.sampler}", *common, *pruner]


def measure_pruning(
    s: Settings, data_dir: str, work: Path, log: Callable[[str], None], reference: FrameworkSweep | None = None
) -> list[PruneResult]:
    """The full grid without pruner (``reference``, or run here), then each pruned variant."""
    if reference is None:
        reference = run_framework(work / "prune_grid", prune_overrides(s, None), data_dir, s.timeout_s)
        log(f"  full grid: {reference.wall_s:.1f} s")
    results = [PruneResult(None, reference)]
    log(f"  full grid: {results[0].steps} steps")
    for i, variant in enumerate(s.prune_variants):
        results.append(
            PruneResult(variant, run_framework(work / f"prune_{i}", prune_overrides(s, variant), data_dir, s.timeout_s))
        )
        log(f"  {variant.label}: {results[-1].steps} steps, {results[-1].sweep.wall_s:.1f} s")
    return results


def pruning_rows(s: Settings, results: Sequence[PruneResult]) -> list[Row]:
    """Item 4: steps of each pruned study / steps of the full grid, and whether it found the same best scale
    (within one grid point) with a Spearman within 0.005."""
    reference = results[0]
    ref_best = reference.sweep.best()
    grid = sorted(s.prune_scales)
    rows = [
        Row(
            "4",
            f"pruning reference: full grid of {len(grid)} scales, no pruner (training steps)",
            "-",
            f"{reference.steps} steps",
            None,
            "",
            f"best scale {ref_best.scale:g}, Spearman {ref_best.value:.4f}" if ref_best else "no complete trial",
            status="reference",
        )
    ]
    for result in results[1:]:
        assert result.variant is not None  # only results[0], the full grid, has none
        best = result.sweep.best()
        ratio = result.steps / reference.steps if reference.steps else float("nan")
        if best is None or ref_best is None:
            same, note = False, "no complete trial"
        else:
            distance = abs(grid.index(best.scale) - grid.index(ref_best.scale))
            gap = recorded(ref_best.value) - recorded(best.value)
            same = distance <= 1 and abs(gap) <= 0.005
            pruned = sum(t.state == "PRUNED" for t in result.sweep.trials)
            tried = sorted({t.scale for t in result.sweep.trials})
            order = [f"{t.scale:g}" for t in result.sweep.trials]
            note = (
                f"best scale {best.scale:g} ({distance} grid point(s) from the reference), "
                f"Spearman {best.value:.4f} (gap {gap:+.4f}); {pruned}/{len(result.sweep.trials)} trials pruned; "
                f"scales tried {[f'{x:g}' for x in tried]}; order {order}"
            )
        status = None if same else "not met"
        rows.append(
            Row(
                "4",
                f"pruned study: {result.variant.label} (training steps)",
                f"{result.steps} steps",
                f"{reference.steps} steps",
                Stat.of([ratio]),
                "<= 0.5",
                note,
                status=status,
            )
        )
    return rows

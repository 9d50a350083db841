"""``python -m sweep.report pooled``: scale ``a`` against scale ``b`` pooled over the distinct conditions of results
folders. This module reads the folders into `sweep.stats.pooling`'s tidy frame, names the duplicates it drops, and
prints and writes the result (``pooled_<a>_vs_<b>.csv`` and ``.md``); the statistics are that module's."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sweep.errors import MissingInput
from sweep.report.results_folder import TRIALS_CSV, flat_config, load_results_folder
from sweep.report.summaries import (
    METRIC_LABELS,
    NOT_CONDITIONS,
    complete_trials,
    condition_names,
    markdown_table,
    plain_value,
    row_labels,
    swept_keys,
)
from sweep.stats import SAME_RUN_TOLERANCE, Duplicate, Pooled, by_condition, drop_duplicates, paired_differences, pool

SEED = "param.trial.seed"
# where and how a study ran, not what its trials trained: left out of a trial's config when looking for re-runs
IGNORED_KEYS = {"name", "quiet", *NOT_CONDITIONS}
IGNORED_PREFIXES = ("paths.", "tracking.", "study.")


def _config_key(config: dict[str, object]) -> str:
    """A trial's configuration as one comparable string (sorted ``key=value``, whole floats as integers)."""
    return ";".join(f"{key}={plain_value(value)}" for key, value in sorted(config.items()))


def folder_frame(folder: Path, metric: str, scales: tuple[float, float]) -> pd.DataFrame:
    """The COMPLETE trials of a results folder as `sweep.stats.pooling`'s tidy frame (source = the folder's name),
    sorted by condition values and seed; MissingInput when the folder, the metric or one of ``scales`` is absent."""
    if not (folder / TRIALS_CSV).is_file():
        raise MissingInput(f"{folder}: no results folder there (no {TRIALS_CSV})")
    trials = load_results_folder(folder).trials
    if metric not in trials:
        raise MissingInput(f"{folder}: its {TRIALS_CSV} has no column {metric}")
    names = condition_names(trials)
    complete = complete_trials(trials).dropna(subset=["scale", metric])
    complete = complete.assign(seed=complete[SEED] if SEED in complete else 0.0).sort_values([*names, "seed"])
    ran = sorted(complete["scale"].unique())
    missing = [f"{scale:g}" for scale in scales if scale not in ran]
    if missing:
        listed = ", ".join(f"{scale:g}" for scale in ran) or "none"
        raise MissingInput(f"{folder}: no COMPLETE trial at scale {' or '.join(missing)} (its scales: {listed})")
    config = flat_config(folder)
    base = {k: v for k, v in config.items() if k not in IGNORED_KEYS and not k.startswith(IGNORED_PREFIXES)}
    swept = [key for key in swept_keys(trials) if key not in IGNORED_KEYS]
    overrides = trials.loc[complete.index, [f"param.{key}" for key in swept]]
    configs = [_config_key(base | dict(zip(swept, row, strict=True))) for row in overrides.itertuples(index=False)]
    labels = row_labels(complete, names)
    return pd.DataFrame(
        {
            "source": folder.name,
            "condition": labels,
            "seed": complete["seed"].to_numpy(),
            "scale": complete["scale"].to_numpy(),
            "value": complete[metric].to_numpy(),
            "config": configs,
        }
    )


@dataclass(frozen=True)
class PooledReport:
    """The per-condition table (with the pooled row and the dropped duplicates) and the lines the command prints."""

    table: pd.DataFrame
    lines: list[str]


def _name(source: str, condition: str) -> str:
    return f"{source} ({condition})" if condition else source


def _interval(mean: float, low: float, high: float) -> str:
    bounds = f"[{low:.3f}, {high:.3f}]" if pd.notna(low) else "(no interval: one seed pair)"
    return f"{mean:+.3f} {bounds}"


def _seeds(seeds: list[float]) -> str:
    """``seed 0``, ``seeds 0..2`` (consecutive) or ``seeds 0, 2``."""
    ints = sorted(int(s) for s in seeds)
    if len(ints) == 1:
        return f"seed {ints[0]}"
    consecutive = ints == list(range(ints[0], ints[-1] + 1))
    return f"seeds {ints[0]}..{ints[-1]}" if consecutive else "seeds " + ", ".join(map(str, ints))


DUPLICATE_COLUMNS = ["source", "condition", "seeds", "duplicate_of", "reason"]


def duplicate_groups(dropped: list[Duplicate]) -> pd.DataFrame:
    """The dropped units grouped by what they repeat and why: one row per source, condition, kept unit and reason,
    with the seeds (``seeds 0..2``)."""
    groups: dict[tuple[str, str, str, str], list[float]] = {}
    for unit in dropped:
        key = (unit.source, unit.condition, _name(unit.kept_source, unit.kept_condition), unit.reason)
        groups.setdefault(key, []).append(unit.seed)
    rows = [(source, condition, _seeds(seeds), kept, why) for (source, condition, kept, why), seeds in groups.items()]
    return pd.DataFrame(rows, columns=DUPLICATE_COLUMNS)


def pooled_report(
    folders: list[Path], a: float, b: float, metric: str, level: float = 0.95, tolerance: float = SAME_RUN_TOLERANCE
) -> PooledReport:
    """Read the folders, drop duplicate units, pool ``a - b``; MissingInput when something asked for is absent."""
    frame = pd.concat([folder_frame(folder, metric, (a, b)) for folder in folders], ignore_index=True)
    kept, dropped = drop_duplicates(frame, tolerance)
    differences = paired_differences(kept, a, b)
    conditions, pooled = by_condition(differences, level), pool(differences, level)
    duplicates = duplicate_groups(dropped)
    lines = [
        f"{_name(row['source'], row['condition'])}: {_interval(row['mean'], row['ci_low'], row['ci_high'])}; "
        f"{a:g} beats {b:g} in {row['n_a_beats_b']} of {row['n_pairs']} seed pairs"
        for row in conditions.to_dict("records")
    ]
    lines.append(_pooled_line(pooled, a, b, METRIC_LABELS.get(metric, metric), duplicates))
    pooled_row = {"source": "pooled", "condition": pooled.method, "n_pairs": pooled.n_pairs, "mean": pooled.mean}
    pooled_row |= {"ci_low": pooled.ci_low, "ci_high": pooled.ci_high, "n_a_beats_b": pooled.n_a_beats_b}
    table = pd.concat(
        [
            conditions.assign(role="condition"),
            pd.DataFrame([pooled_row | {"role": "pooled"}]),
            duplicates.assign(role="duplicate"),
        ],
        ignore_index=True,
    )
    table = table.astype({"n_pairs": "Int64", "n_a_beats_b": "Int64"}).assign(a=a, b=b, metric=metric, level=level)
    return PooledReport(table[["role", *table.columns.drop("role")]], lines)


def _pooled_line(pooled: Pooled, a: float, b: float, label: str, duplicates: pd.DataFrame) -> str:
    """``scale 10 vs 20, <label>, pooled over 7 distinct conditions (21 seed pairs): +0.012 [0.008, 0.016] (random
    effects over conditions, 95%); 10 beats 20 in 21 of 21 seed pairs; dropped as duplicates: ...``"""
    plural = "s" if pooled.n_conditions != 1 else ""
    dropped = "; ".join(
        f"{_name(row['source'], '; '.join(filter(None, [row['condition'], row['seeds']])))} = {row['duplicate_of']} "
        f"({row['reason']})"
        for row in duplicates.to_dict("records")
    )
    return (
        f"scale {a:g} vs {b:g}, {label}, pooled over {pooled.n_conditions} distinct condition{plural} "
        f"({pooled.n_pairs} seed pairs): {_interval(pooled.mean, pooled.ci_low, pooled.ci_high)} "
        f"({pooled.method}, {pooled.level:.0%}); {a:g} beats {b:g} in {pooled.n_a_beats_b} of {pooled.n_pairs} seed "
        f"pairs; dropped as duplicates: {dropped or 'none'}"
    )


def write_pooled(report: PooledReport, out_dir: Path, a: float, b: float) -> list[Path]:
    """``pooled_<a>_vs_<b>.csv`` (the table) and ``.md`` (the lines, then the table) in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv, markdown = (out_dir / f"pooled_{a:g}_vs_{b:g}.{suffix}" for suffix in ("csv", "md"))
    report.table.to_csv(csv, index=False)
    shown = report.table.drop(columns=["a", "b", "metric", "level"])  # the lines name them
    rows = markdown_table(shown.astype(object).where(shown.notna(), ""))
    markdown.write_text("\n".join([*(f"- {line}" for line in report.lines), "", *rows, ""]))
    return [csv, markdown]


def pooled_command(args: argparse.Namespace) -> list[Path]:
    """Print the per-condition and pooled lines; write the files with ``--out``. A folder, metric or scale that is
    not there: one line on stderr and exit code 2."""
    try:
        tolerance = SAME_RUN_TOLERANCE if args.tolerance is None else args.tolerance
        report = pooled_report(args.folders, args.a, args.b, args.metric, args.level, tolerance)
    except MissingInput as error:
        print(f"python -m sweep.report pooled: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print("\n".join(report.lines))
    return write_pooled(report, args.out, args.a, args.b) if args.out is not None else []

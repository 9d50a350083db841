"""The tables behind the study figures (pandas/scipy, no matplotlib): conditions, t-intervals and per-figure summaries.

Every function takes the ``load_trials`` frame (one row per trial, ``param.<key>`` columns, final metrics) and
returns a DataFrame; the figure modules draw these tables and save them next to the figures as CSV.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from sweep.evaluation import KINDS
from sweep.names import ATTR_TEST_SPEARMAN, ATTR_VALIDATION_SPEARMAN
from sweep.stats import ELIMINATED_AFTER, mean_interval

SCALE = "param.loss.scale"
SEARCH_SPACE = "param.study.search_space."  # one param per swept key: study.search_space.<key>
SCHEDULE = "loss.scale_schedule."  # the keys of a temperature schedule (sweep.losses.scale_schedule)
NOT_CONDITIONS = {"loss.scale", "loss.temperature", "trial.seed"}  # the x axis (temperature = 1/scale), the replicate
ANGLE_WEIGHTS = {"param.loss.w1": "w1", "param.loss.w2": "w2", "param.loss.w3": "w3"}
ANGLE_SCALES = {
    "param.loss.cos_scale": "cos_scale",
    "param.loss.ibn_scale": "ibn_scale",
    "param.loss.angle_scale": "angle_scale",
}
LAYER_GRID = re.compile(
    r"^stsb_(validation|test)_spearman_L(\d+)_D(\d+)$"
)  # sweep.evaluation.layer_grid's metric names
SPEARMAN_OF_SPLIT = {"validation": ATTR_VALIDATION_SPEARMAN, "test": ATTR_TEST_SPEARMAN}  # the STSB split -> its metric
METRIC_LABELS = {ATTR_VALIDATION_SPEARMAN: "STSB validation Spearman", ATTR_TEST_SPEARMAN: "STSB test Spearman"}
# cosine distributions logged as sim_{kind}_{mean,q05,q95}[_init] (see sweep.stats.concentration), legend labels
SIM_KINDS = {
    "pos": "positive pairs",
    "neg": "in-batch negatives",
    "rand": "random pairs",
    "high": "STSB pairs, high gold score",
    "low": "STSB pairs, low gold score",
}
SIM_STAGES = {"final": "", "init": "_init"}  # metric suffix per stage
INTERVAL_COLUMNS = ["n", "mean", "ci_low", "ci_high"]  # the columns of a t_interval
IN_CONFIDENCE_SET = "in_confidence_set_for_best"  # optional boolean column of a Spearman summary (paired test)
# optional columns of the paired table and a Spearman summary: the continuous optimum (`sweep.stats.optimum`) of the
# condition, constant over its rows; the flag says why it was not located ("" when it was)
OPTIMUM_COLUMNS = ("optimum", "optimum_low", "optimum_high", "optimum_flag")
SPEARMAN_COLUMNS = {"scale", "split", *INTERVAL_COLUMNS, IN_CONFIDENCE_SET, *OPTIMUM_COLUMNS}  # its own columns
TABLE_METRICS = (
    ATTR_VALIDATION_SPEARMAN,
    ATTR_TEST_SPEARMAN,
    "sim_pos_mean",
    "sim_neg_mean",
    "sim_rand_mean",
    "sim_rand_mean_init",
    "sim_uniformity",
    "sim_effective_rank",
    "learned_scale",
    "max_weight_change",
    "trained_steps",
    "trial_wall_time_s",
)
# the mechanism statistics (sweep.stats.concentration) each trial logs after training and, suffixed INIT, before it
MECHANISM_METRICS = (
    "sim_alignment",
    "sim_pos_mean",
    "sim_uniformity",
    "sim_tolerance",
    "sim_effective_negatives",
    "sim_hardest_negative_weight",
    "sim_p_rand_above_pos",
)
LOSS_AT_SCALE = re.compile(r"^sim_loss_at_scale_([^_]+)$")  # the held-out MNRL loss at a scale (``loss_metric``)
INIT = "_init"  # the untrained model's value of a metric (step 0)


# ---------------------------------------------------------------- conditions


def t_interval(values: pd.Series, level: float = 0.95) -> dict[str, float]:
    """n, mean and the Student-t interval of the mean (NaN bounds for fewer than two values)."""
    values = values.dropna()
    mean, low, high = mean_interval(values.to_numpy(), level)
    return {"n": len(values), "mean": mean, "ci_low": low, "ci_high": high}


def swept_keys(trials: pd.DataFrame) -> list[str]:
    """The swept config keys, read from the logged ``study.search_space.<key>`` params."""
    return [column.removeprefix(SEARCH_SPACE) for column in trials.columns if column.startswith(SEARCH_SPACE)]


def condition_columns(trials: pd.DataFrame) -> dict[str, str]:
    """Swept parameters other than scale and seed that take several values: ``param.<key>`` -> short name.

    Each combination of their values is its own series in the figures: trials that differ in them are never
    pooled as if they were seeds. The swept keys are read from the logged ``study.search_space.*`` params.
    """
    columns = [f"param.{key}" for key in swept_keys(trials) if key not in NOT_CONDITIONS and f"param.{key}" in trials]
    complete = trials[trials["state"] == "COMPLETE"]
    return {column: column.split(".", 2)[-1] for column in columns if complete[column].nunique(dropna=False) > 1}


def condition_names(trials: pd.DataFrame) -> list[str]:
    """The short names of the condition columns (see ``condition_columns``)."""
    return list(condition_columns(trials).values())


def complete_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """COMPLETE trials with the scale as ``scale`` and each condition column under its short name; a metric of
    that name (the trainer logs ``learning_rate``) gives way to the condition."""
    complete = trials[trials["state"] == "COMPLETE"]
    names = {SCALE: "scale", **condition_columns(trials)}
    clashing = [name for name in names.values() if name in complete and name not in names]
    return complete.drop(columns=clashing).rename(columns=names).copy()  # copy: one block, not hundreds of columns


def condition_label(conditions: Sequence[str], values: Sequence[object]) -> str:
    """``name=value, ...`` for a combination of conditions ('' when there are none)."""
    return ", ".join(f"{name}={plain_value(value)}" for name, value in zip(conditions, values, strict=True))


def row_labels(table: pd.DataFrame, conditions: Sequence[str]) -> list[str]:
    """`condition_label` of each row of ``table``: '' for every row when there are no conditions (pandas before 3
    iterates no rows at all of a frame without columns, so the labels of a study without conditions came out empty,
    one per row in pandas 3)."""
    if not conditions:
        return [""] * len(table)
    return [condition_label(conditions, row) for row in table[list(conditions)].itertuples(index=False)]


def plain_value(value: object) -> object:
    """A whole float as an integer (``1000``, not ``1000.0``: MLflow hands numeric params back as floats)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def by_condition(table: pd.DataFrame, conditions: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """(label, rows) per combination of the condition columns; one unlabelled group when there are none."""
    if not conditions:
        return [("", table)]
    return [
        (condition_label(conditions, keys), group) for keys, group in table.groupby(conditions, sort=True, dropna=False)
    ]


IDENTICAL_WITHIN = 1e-4  # arms whose drawn means agree this closely are drawn once (e.g. three arms, one loss)


def merge_identical(
    groups: list[tuple[str, pd.DataFrame]], keys: list[str], value: str = "mean"
) -> list[tuple[list[str], pd.DataFrame]]:
    """``by_condition`` groups whose rows have the same ``keys`` (in order) and ``value`` within
    ``IDENTICAL_WITHIN`` merged: (every label, the first group's rows), in first-seen order."""
    merged: list[tuple[list[str], pd.DataFrame]] = []
    for label, rows in groups:
        columns = [key for key in keys if key in rows]
        for labels, first in merged:
            if (
                len(first) == len(rows)
                and [tuple(map(str, row)) for row in first[columns].itertuples(index=False)]
                == [tuple(map(str, row)) for row in rows[columns].itertuples(index=False)]
                and np.allclose(first[value], rows[value], rtol=0, atol=IDENTICAL_WITHIN, equal_nan=True)
            ):
                labels.append(label)
                break
        else:
            merged.append(([label], rows))
    return merged


def identical_title(labels: list[str], words: Callable[[str], str], separator: str = " = ") -> str:
    """A merged panel's title or legend label: every condition in ``words``, and that they are drawn once."""
    if len(labels) == 1:
        return words(labels[0])
    note = f"(identical within {IDENTICAL_WITHIN:g}: drawn once)"
    return separator.join(
        [*(words(label) for label in labels), note]
        if separator == "\n"
        else [separator.join(words(label) for label in labels) + " " + note]
    )


def swept_scales(trials: pd.DataFrame) -> bool:
    """Whether the COMPLETE trials span at least two scales (else a curve vs scale says nothing), none of them set
    by a swept `loss.scale_schedule` (then `loss.scale` is each schedule's first scale: its arms are grid points)."""
    return (
        SCALE in trials
        and trials.loc[trials["state"] == "COMPLETE", SCALE].nunique() > 1
        and not any(key.startswith(SCHEDULE) for key in swept_keys(trials))
    )


# ---------------------------------------------------------------- per-figure tables


def spearman_summary(trials: pd.DataFrame) -> pd.DataFrame:
    """Per condition, scale and split: n seeds, mean STSB Spearman and its 95% t-interval (COMPLETE trials)."""
    complete = complete_trials(trials)
    keys = [*condition_names(trials), "scale"]
    rows = [
        {**dict(zip(keys, group_keys, strict=True)), "split": split, **t_interval(group[column])}
        for split, column in SPEARMAN_OF_SPLIT.items()
        if column in complete
        for group_keys, group in complete.groupby(keys, dropna=False)
    ]
    summary = pd.DataFrame(rows, columns=[*keys, "split", *INTERVAL_COLUMNS])
    return summary[summary["n"] > 0].reset_index(drop=True)


def with_paired_verdict(summary: pd.DataFrame, paired: pd.DataFrame) -> pd.DataFrame:
    """The Spearman summary with ``in_confidence_set_for_best`` on its validation rows: whether the paired test's
    confidence set for the best holds the scale (``paired_comparison.csv``: one row per condition label and scale),
    and the `OPTIMUM_COLUMNS` of the condition when the paired table has them; unchanged when there is none."""
    if summary.empty or paired.empty:
        return summary
    conditions = [c for c in summary.columns if c not in SPEARMAN_COLUMNS]
    verdicts = {
        (str(label) if pd.notna(label) else "", float(scale)): bool(verdict)
        for label, scale, verdict in paired[["condition", "scale", "in_confidence_set"]].itertuples(index=False)
    }
    labels = row_labels(summary, conditions)
    keys = zip(labels, summary["scale"].astype(float), summary["split"], strict=True)
    column = [verdicts.get((label, scale)) if split == "validation" else None for label, scale, split in keys]
    summary = summary.assign(**{IN_CONFIDENCE_SET: pd.array(column, dtype="boolean")})
    return _with_optimum(summary, paired, labels)


def _with_optimum(summary: pd.DataFrame, paired: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    """The summary with the paired table's `OPTIMUM_COLUMNS` (per condition ``labels``, one per summary row) on its
    validation rows, NaN and "" elsewhere; unchanged when the paired table lacks them."""
    if not set(OPTIMUM_COLUMNS) <= set(paired.columns):
        return summary
    first = paired.assign(condition=paired["condition"].astype("string").fillna("")).drop_duplicates("condition")
    optima = first.set_index("condition")[list(OPTIMUM_COLUMNS)].reindex(labels).reset_index(drop=True)
    optima.index = summary.index
    optima["optimum_flag"] = optima["optimum_flag"].astype(object).fillna("").astype(str)
    validation = summary["split"] == "validation"
    optima.loc[~validation, list(OPTIMUM_COLUMNS[:-1])] = np.nan
    optima.loc[~validation, "optimum_flag"] = ""
    return summary.assign(**{column: optima[column] for column in OPTIMUM_COLUMNS})


def concentration_summary(trials: pd.DataFrame) -> pd.DataFrame:
    """Per condition, scale, pair kind and stage (final / init): mean over seeds of the similarity mean, q05, q95."""
    complete = complete_trials(trials)
    keys = [*condition_names(trials), "scale"]
    tables = []
    for kind in SIM_KINDS:
        for stage, suffix in SIM_STAGES.items():
            if f"sim_{kind}_mean{suffix}" not in complete:
                continue
            stats_ = {s: complete.get(f"sim_{kind}_{s}{suffix}", np.nan) for s in ("mean", "q05", "q95")}
            frame = complete[keys].assign(**stats_)
            table = frame.groupby(keys, dropna=False).agg(
                n=("mean", "count"), mean=("mean", "mean"), q05=("q05", "mean"), q95=("q95", "mean")
            )
            tables.append(table.reset_index().assign(kind=kind, stage=stage))
    columns = [*keys, "kind", "stage", "n", "mean", "q05", "q95"]
    return pd.concat(tables, ignore_index=True)[columns] if tables else pd.DataFrame(columns=columns)


def metric_history_table(trials: pd.DataFrame, history: pd.DataFrame) -> pd.DataFrame:
    """A ``load_metric_history`` frame joined to its trials: ``run_id, trial_number, state``, the conditions,
    ``scale, step, value`` (rows without a scale dropped; empty when the trials have no scale)."""
    if SCALE not in trials or history.empty:
        return pd.DataFrame()
    conditions = condition_columns(trials)
    columns = ["run_id", "trial_number", "state", SCALE, *conditions]
    data = history.merge(trials[columns], on="run_id").rename(columns={SCALE: "scale", **conditions})
    data = data.dropna(subset=["scale"])
    return data[["run_id", "trial_number", "state", *conditions.values(), "scale", "step", "value"]]


def mean_by(trials: pd.DataFrame, columns: Mapping[str, str], metric: str) -> pd.DataFrame:
    """n and mean of ``metric`` over COMPLETE trials per combination of ``columns`` (renamed to their values; a
    column already named so, such as the trainer's ``learning_rate`` metric beside a swept rate, gives way)."""
    complete = trials[trials["state"] == "COMPLETE"]
    clashing = [new for old, new in columns.items() if new != old and new in complete.columns]
    complete = complete.drop(columns=clashing).rename(columns=dict(columns))
    if not {*columns.values(), metric} <= set(complete.columns):
        return pd.DataFrame()
    keys = list(columns.values())
    table = complete.groupby(keys)[metric].agg(n="count", mean="mean").reset_index()
    return table[table["n"] > 0]


def layer_grid_summary(trials: pd.DataFrame) -> pd.DataFrame:
    """STSB Spearman per condition, scale, split, layer and dim (``stsb_{split}_spearman_L{l}_D{d}`` metrics):
    n seeds, mean and 95% t-interval over COMPLETE trials. Scale is a condition here unless it is absent."""
    complete = complete_trials(trials)
    keys = [*condition_names(trials), *(["scale"] if "scale" in complete and complete["scale"].nunique() > 1 else [])]
    groups = list(complete.groupby(keys, dropna=False)) if keys else [((), complete)]  # keys: a list, so tuples
    rows = []
    for column in complete.columns:
        match = LAYER_GRID.match(str(column))
        if not match:
            continue
        split, layer, dim = match.group(1), int(match.group(2)), int(match.group(3))
        for values, group in groups:
            rows.append(
                {
                    **dict(zip(keys, values, strict=True)),
                    "split": split,
                    "layer": layer,
                    "dim": dim,
                    **t_interval(group[column]),
                }
            )
    summary = pd.DataFrame(rows, columns=[*keys, "split", "layer", "dim", *INTERVAL_COLUMNS])
    summary = summary[summary["n"] > 0]
    return summary.sort_values([*keys, "split", "layer", "dim"], kind="stable", ignore_index=True)


def layer_grid_panels(summary: pd.DataFrame) -> pd.DataFrame:
    """The test split of a ``layer_grid_summary`` with a ``panel`` label per condition (and scale)."""
    keys = [k for k in summary.columns if k not in ("split", "layer", "dim", *INTERVAL_COLUMNS)]
    test = summary[summary["split"] == "test"].copy()
    test["panel"] = row_labels(test, keys)
    return test


def mechanism_metrics(trials: pd.DataFrame) -> list[str]:
    """The mechanism metrics the trials logged (final values): ``MECHANISM_METRICS``, then the held-out loss at each
    evaluated scale, by scale."""
    losses = [(float(match[1]), str(c)) for c in trials.columns if (match := LOSS_AT_SCALE.match(str(c)))]
    return [m for m in MECHANISM_METRICS if m in trials] + [name for _, name in sorted(losses)]


def trials_table(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per trial (every state): number, state, the swept parameters, the seed, the headline metrics, the
    extra sets' metrics (``eval.extra``), the mechanism metrics (final and untrained) and, in a raced study, the seeds
    after which the race dropped the trial's point, without ``param.``."""
    swept = [f"param.{key}" for key in swept_keys(trials)]
    mechanism = [name for metric in mechanism_metrics(trials) for name in (metric, metric + INIT)]
    suffixes = tuple(f"_{metric}" for _, names in KINDS.values() for metric in names)
    extra = [str(c) for c in trials.columns if str(c).endswith(suffixes) and not str(c).startswith("param.")]
    columns = [
        "trial_number",
        "state",
        *dict.fromkeys(c for c in [*swept, SCALE, "param.trial.seed"] if c in trials),
        *dict.fromkeys(m for m in [*TABLE_METRICS, *extra, *mechanism, ELIMINATED_AFTER] if m in trials),
    ]
    return trials[columns].rename(columns=lambda c: c.removeprefix("param."))


def markdown_table(table: pd.DataFrame) -> list[str]:
    """A GitHub markdown table, floats to 4 decimals."""
    cells = [[f"{v:.4f}" if isinstance(v, float) else str(v) for v in row] for row in table.itertuples(index=False)]
    return [
        "| " + " | ".join(table.columns) + " |",
        "|" + "---|" * len(table.columns),
        *("| " + " | ".join(row) + " |" for row in cells),
    ]

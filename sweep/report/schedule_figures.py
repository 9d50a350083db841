"""The ``schedule_arms`` figure of a study whose grid is a `loss.scale_schedule` axis: each arm's STSB Spearman
(validation and test, mean over seeds with its t-interval) beside the scale each arm trains at, step by step.

The scale per step is drawn from the schedule's formula (`sweep.losses.scale_schedule.ScaleSchedule.scale_at`),
which `tests/losses/test_scale_schedule.py` holds equal to the `scheduled_scale` each trial logs, so a results folder
redraws it without the metric histories.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.ticker import FixedLocator, NullLocator

from sweep.losses import parse_spec
from sweep.report.axes import (
    DOUBLE_COLUMN_WIDTH,
    PAPER_RC,
    legend_below,
    n_label,
    new_figure,
    plain_number,
    save_figure,
)
from sweep.report.summaries import METRIC_LABELS, t_interval

STEM = "schedule_arms"
ARM = "param.loss.scale_schedule.spec"  # the trials' column (MLflow's and a results folder's, `load_results_folder`)
UNTRAINED = "untrained"
SPLITS = {"validation": "stsb_validation_spearman", "test": "stsb_test_spearman"}


def arm_column(trials: pd.DataFrame) -> str | None:
    """The trials' column of schedule specs when the study swept them across at least two arms."""
    swept = ARM in trials and trials.loc[trials["state"] == "COMPLETE", ARM].nunique() > 1
    return ARM if swept else None


def schedule_arms_table(
    trials: pd.DataFrame, max_steps: int, untrained: Mapping[str, float] | None = None
) -> pd.DataFrame:
    """Rows ``panel="spearman"``: arm, split, n, mean, ci_low, ci_high; rows ``panel="scale"``: arm, step, scale;
    rows ``panel="untrained"``: split, mean (the reference lines, kept so that a results folder redraws them)."""
    column = arm_column(trials)
    if column is None:
        return pd.DataFrame()
    complete = trials[trials["state"] == "COMPLETE"]
    arms = sorted(complete[column].unique(), key=lambda spec: (parse_spec(spec).kind != "constant", spec))
    rows: list[dict[str, object]] = []
    for arm in arms:
        group = complete[complete[column] == arm]
        for split, metric in SPLITS.items():
            rows.append({"panel": "spearman", "arm": arm, "split": split, **t_interval(group[metric])})
        schedule = parse_spec(arm)
        rows += [
            {"panel": "scale", "arm": arm, "step": step + 1, "scale": schedule.scale_at(step, max_steps)}
            for step in range(max_steps)
        ]
    rows += [{"panel": UNTRAINED, "split": split, "mean": value} for split, value in (untrained or {}).items()]
    return pd.DataFrame(rows)


def write_schedule_arms(
    trials: pd.DataFrame, max_steps: int | None, out_dir: Path, untrained: Mapping[str, float] | None = None
) -> list[Path]:
    """The figure and its CSV; nothing unless the study swept schedule specs (and knows its steps). ``untrained``:
    the untrained model's Spearman per split, drawn as reference lines."""
    data = schedule_arms_table(trials, max_steps, untrained) if max_steps else pd.DataFrame()
    if data.empty:
        return []
    spearman, scales = data[data["panel"] == "spearman"], data[data["panel"] == "scale"]
    arms = list(dict.fromkeys(spearman["arm"]))
    colours = {arm: mpl.colormaps["tab10"](i) for i, arm in enumerate(arms)}
    with mpl.rc_context(PAPER_RC):
        fig = new_figure(DOUBLE_COLUMN_WIDTH, 2.8)
        left, right = fig.subplots(1, 2)
        positions = np.arange(len(arms))
        for offset, (split, marker) in zip((-0.12, 0.12), (("validation", "o"), ("test", "s")), strict=True):
            rows = spearman[spearman["split"] == split].set_index("arm").loc[arms]
            errors = np.nan_to_num([rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]])
            left.errorbar(
                rows["mean"],
                positions + offset,
                xerr=errors,
                fmt=marker,
                ms=3.5,
                lw=0.8,
                capsize=2,
                color="0.2" if split == "validation" else "0.55",
                label=f"{METRIC_LABELS[SPLITS[split]]}, mean and 95% t-interval ({n_label(rows['n'])} seeds)",
            )
        baselines = data[data["panel"] == UNTRAINED]
        for row in baselines.itertuples():  # the untrained model: one reference line per split it was scored on
            style = "--" if row.split == "test" else "-"
            unscored = [split for split in SPLITS if split not in set(baselines["split"])]
            note = f" ({' and '.join(unscored)} not scored untrained: no line)" if unscored else ""
            left.axvline(
                row.mean, color="0.7", linestyle=style, lw=0.8, label=f"untrained model, {row.split}{note}", zorder=0
            )
        left.set_yticks(positions, arms)
        left.invert_yaxis()
        left.set_xlabel("STSB Spearman")
        left.set_title("STSB Spearman by temperature schedule")
        for arm in arms:
            curve = scales[scales["arm"] == arm]
            right.plot(curve["step"], curve["scale"], color=colours[arm], lw=1.0, label=arm)
        right.set_yscale("log")
        spec_scales = sorted({float(v) for arm in arms for v in re.findall(r"\d+(?:\.\d+)?", arm.split(" period")[0])})
        right.yaxis.set_major_locator(FixedLocator(spec_scales))
        right.yaxis.set_minor_locator(NullLocator())
        right.yaxis.set_major_formatter(plain_number)
        right.set_xlabel("training step")
        right.set_ylabel("scale (1/temperature)")
        right.set_title(f"Scale at each of the {max_steps} training steps")
        legend_below(left, "", columns=1)
        right.legend(title="schedule", fontsize=6, title_fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
        return save_figure(fig, data, out_dir, STEM)

"""Everything ``python -m sweep.report study`` writes for one study: the trials table and every figure whose
columns the trials have."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from sweep.report.grid_figures import write_angle_scales_heatmap, write_angle_weights_heatmap, write_layer_grid_figures
from sweep.report.scale_figures import write_concentration_vs_scale, write_metric_histories, write_spearman_vs_scale
from sweep.report.summaries import trials_table


def write_trials_table(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """``trials.csv``: one row per trial (every state) with the swept parameters, the seed and the headline metrics."""
    if trials.empty:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "trials.csv"
    trials_table(trials).to_csv(path, index=False)
    return [path]


def write_study_figures(trials: pd.DataFrame, histories: Mapping[str, pd.DataFrame], out_dir: Path) -> list[Path]:
    """Every study figure whose columns exist, and the trials table; ``histories`` maps metric key to
    ``load_metric_history``."""
    empty = pd.DataFrame(columns=["run_id", "step", "value"])
    return [
        *write_trials_table(trials, out_dir),
        *write_spearman_vs_scale(trials, out_dir),
        *write_concentration_vs_scale(trials, out_dir),
        *write_metric_histories(
            trials, histories.get("train_loss", empty), out_dir, "train_loss_curves", "training loss"
        ),
        *write_metric_histories(
            trials,
            histories.get("learned_scale", empty),
            out_dir,
            "learned_scale_trajectory",
            "learned scale",
            scale_label="initial scale",
        ),
        *write_angle_weights_heatmap(trials, out_dir),
        *write_angle_scales_heatmap(trials, out_dir),
        *write_layer_grid_figures(trials, out_dir),
    ]

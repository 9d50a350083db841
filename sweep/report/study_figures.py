"""Everything ``python -m sweep.report study`` writes for one study: the trials table and every figure whose
columns the trials have, from MLflow's trials and histories or from a published results folder's CSVs."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path

import pandas as pd

from sweep.names import ATTR_VALIDATION_SPEARMAN
from sweep.report.convergence_figures import (
    spearman_step_summary,
    write_spearman_vs_step,
    write_validation_history,
)
from sweep.report.extra_set_figures import write_extra_sets_vs_scale
from sweep.report.factor_figures import write_scale_and_condition
from sweep.report.findings import findings_block, write_findings
from sweep.report.grid_figures import write_angle_scales_heatmap, write_angle_weights_heatmap, write_layer_grid_figures
from sweep.report.history_figures import write_learned_scale_trajectory, write_train_loss_curves
from sweep.report.mechanism_figures import mechanism_summary, write_mechanism_vs_scale
from sweep.report.objective_table import OBJECTIVE_FIGURES
from sweep.report.results_folder import HISTORY_STEM, PAIRED_STEM, FixedScaleReference, ResultsFolder
from sweep.report.scale_figures import write_concentration_vs_scale, write_spearman_vs_scale
from sweep.report.schedule_figures import write_schedule_arms
from sweep.report.study_context import UNTRAINED_SCALE, config_value, library_default, untrained_rows
from sweep.report.summaries import (
    SPEARMAN_COLUMNS,
    SPEARMAN_OF_SPLIT,
    concentration_summary,
    condition_columns,
    layer_grid_summary,
    metric_history_table,
    spearman_summary,
    swept_scales,
    trials_table,
    with_paired_verdict,
)

EMPTY_HISTORY = pd.DataFrame(columns=["run_id", "step", "value"])
WALL_TIME = "trial_wall_time_s"  # each trial's wall time (sweep.study.run_loop)


def write_trials_table(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """``trials.csv``: one row per trial (every state) with the swept parameters, the seed and the headline metrics."""
    if trials.empty:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "trials.csv"
    trials_table(trials).to_csv(path, index=False)
    return [path]


def with_untrained(summary: pd.DataFrame, untrained: pd.DataFrame) -> pd.DataFrame:
    """The Spearman summary with the untrained model's rows at scale 0, unless it has trials there already;
    rows without the summary's condition columns stand for every condition."""
    if summary.empty or untrained.empty or (summary["scale"] == UNTRAINED_SCALE).any():
        return summary
    conditions = [c for c in summary.columns if c not in SPEARMAN_COLUMNS]
    if conditions and not set(conditions) <= set(untrained.columns):
        combos = summary[conditions].drop_duplicates()
        untrained = combos.merge(untrained.drop(columns=conditions, errors="ignore"), how="cross")
    rows = untrained.reindex(columns=summary.columns)
    merged = pd.concat([rows, summary], ignore_index=True).astype({"n": int})
    return merged.sort_values([*conditions, "scale"], kind="stable", ignore_index=True)


def write_study_findings(
    spearman: pd.DataFrame, tables: Mapping[str, pd.DataFrame], trials: pd.DataFrame, out_dir: Path
) -> list[Path]:
    """The generated findings block of ``out_dir/README.md`` (see ``sweep.report.findings``), when scale was swept."""
    if spearman.empty or spearman.loc[spearman["scale"] != UNTRAINED_SCALE, "scale"].nunique() < 2:
        return []
    paired = tables.get(PAIRED_STEM, pd.DataFrame())
    concentration = tables.get("concentration_vs_scale", pd.DataFrame())
    wall_times = trials.get(WALL_TIME, pd.Series(dtype=float))
    block = findings_block(spearman, paired, concentration, library_default(trials)[0], wall_times)
    return [write_findings(out_dir / "README.md", block, out_dir.name)]


def write_study_figures(
    trials: pd.DataFrame,
    histories: Mapping[str, pd.DataFrame],
    out_dir: Path,
    tables: Mapping[str, pd.DataFrame] | None = None,
    untrained: pd.DataFrame | None = None,
    write_trials: bool = True,
    reference: FixedScaleReference | None = None,
    figures: Collection[str] | None = None,
) -> list[Path]:
    """Every study figure whose columns exist (or, with ``figures``, those of these stems, e.g.
    ``{"spearman_vs_scale"}``), each with its CSV, the trials table and the findings block.

    ``histories`` maps metric key to ``load_metric_history`` (``stsb_validation_spearman`` at step 0 gives the
    untrained baseline); ``tables`` gives figure tables by stem that replace the ones computed from ``trials``
    (a results folder's CSVs); ``untrained``: scale-0 Spearman rows to draw when no trial ran at scale 0;
    ``write_trials=False`` leaves ``trials.csv`` alone; ``reference``: a sibling's fixed-scale validation curve,
    drawn in grey on the Spearman figure of a learnable-scale study. An unknown stem in ``figures`` raises
    `ValueError` naming the known ones, before anything is drawn.
    """
    tables = dict(tables or {})
    if (
        "spearman_vs_scale" not in tables
        and swept_scales(trials)
        and any(c in trials for c in SPEARMAN_OF_SPLIT.values())
    ):
        tables["spearman_vs_scale"] = spearman_summary(trials)
    if PAIRED_STEM in tables and "spearman_vs_scale" in tables:
        tables["spearman_vs_scale"] = with_paired_verdict(tables["spearman_vs_scale"], tables[PAIRED_STEM])
    if untrained is None:
        history = histories.get(ATTR_VALIDATION_SPEARMAN, EMPTY_HISTORY)
        untrained = untrained_rows(trials, history, condition_columns(trials))
    spearman = with_untrained(tables.get("spearman_vs_scale", pd.DataFrame()), untrained)
    baseline = untrained.loc[untrained["split"] == "validation", "mean"] if not untrained.empty else pd.Series()
    validation = float(baseline.mean()) if len(baseline) else None
    if "concentration_vs_scale" not in tables and swept_scales(trials):
        tables["concentration_vs_scale"] = concentration_summary(trials)
    for stem, key in (("train_loss_curves", "train_loss"), ("learned_scale_trajectory", "learned_scale")):
        if stem not in tables:
            tables[stem] = metric_history_table(trials, histories.get(key, EMPTY_HISTORY))
    if HISTORY_STEM not in tables and swept_scales(trials):
        validation_history = histories.get(ATTR_VALIDATION_SPEARMAN, EMPTY_HISTORY)
        tables[HISTORY_STEM] = metric_history_table(trials, validation_history)
    if "spearman_vs_step" not in tables and HISTORY_STEM in tables:
        tables["spearman_vs_step"] = spearman_step_summary(tables[HISTORY_STEM])
    mechanism = mechanism_summary(trials) if swept_scales(trials) else pd.DataFrame()
    if "layer_grid_heatmap" not in tables:
        tables["layer_grid_heatmap"] = layer_grid_summary(trials)
    by_stem: dict[tuple[str, ...], Callable[[], list[Path]]] = {  # each figure's stems -> what draws it
        ("spearman_vs_scale",): lambda: write_spearman_vs_scale(spearman, trials, out_dir, reference),
        ("scale_and_condition",): lambda: write_scale_and_condition(spearman, out_dir),
        ("concentration_vs_scale",): lambda: write_concentration_vs_scale(
            tables.get("concentration_vs_scale", pd.DataFrame()), trials, out_dir
        ),
        ("mechanism_vs_scale",): lambda: write_mechanism_vs_scale(mechanism, trials, out_dir),
        ("train_loss_curves",): lambda: write_train_loss_curves(tables["train_loss_curves"], trials, out_dir),
        ("spearman_vs_step",): lambda: write_spearman_vs_step(
            tables.get("spearman_vs_step", pd.DataFrame()), trials, out_dir
        ),
        ("learned_scale_trajectory",): lambda: write_learned_scale_trajectory(
            tables["learned_scale_trajectory"], trials, out_dir
        ),
        ("angle_weights_heatmap",): lambda: write_angle_weights_heatmap(trials, out_dir, validation),
        ("angle_scales_heatmap",): lambda: write_angle_scales_heatmap(trials, out_dir, validation),
        ("layer_grid_heatmap", "layer_grid_tradeoff"): lambda: write_layer_grid_figures(
            tables["layer_grid_heatmap"], out_dir
        ),
        ("extra_sets_vs_scale",): lambda: write_extra_sets_vs_scale(trials, out_dir),
        ("schedule_arms",): lambda: write_schedule_arms(
            trials, _int_or_none(config_value(trials, "trial.max_steps")), out_dir, _by_split(untrained)
        ),
    }
    known = [stem for stems in by_stem for stem in stems] + list(OBJECTIVE_FIGURES)  # these: a folder's objective
    unknown = sorted(set(figures or ()) - set(known))
    if unknown:
        raise ValueError(f"unknown figure stems {unknown}: the study figures are {', '.join(known)}")
    drawn = [draw for stems, draw in by_stem.items() if figures is None or set(stems) & set(figures)]
    return [
        *write_study_findings(spearman, tables, trials, out_dir),
        *(write_trials_table(trials, out_dir) if write_trials else []),
        *write_validation_history(tables.get(HISTORY_STEM, pd.DataFrame()), out_dir),
        *(path for draw in drawn for path in draw()),
    ]


def _by_split(untrained: pd.DataFrame) -> dict[str, float]:
    """The untrained model's mean Spearman per split (nothing when unknown)."""
    if untrained.empty:
        return {}
    return {str(split): float(rows["mean"].mean()) for split, rows in untrained.groupby("split")}


def _int_or_none(value: object) -> int | None:
    """A config value read back as text or number (``120``, ``"120"``, ``120.0``) as an int; None when absent."""
    try:
        return int(float(str(value))) if value is not None else None
    except ValueError:
        return None


def write_results_folder(folder: ResultsFolder, out_dir: Path, figures: Collection[str] | None = None) -> list[Path]:
    """Redraw a published results folder's figures (all, or those of the stems in ``figures``) from its CSVs into
    ``out_dir`` (``trials.csv`` and ``config.yaml`` copied unchanged)."""
    written = write_study_figures(
        folder.trials,
        {},
        out_dir,
        folder.tables,
        folder.untrained,
        write_trials=False,
        reference=folder.reference,
        figures=figures,
    )
    return [*folder.copy_sources(out_dir), *written]

"""Read a published ``research/results/<study>/`` folder back into what ``write_study_figures`` draws, without MLflow.

``trials.csv`` becomes a trials frame (``param.<key>`` columns, the swept keys marked as
``param.study.search_space.<key>``), ``config.yaml`` adds the study's config as constant ``param.*`` columns, and
the figure CSVs whose inputs ``trials.csv`` does not hold (concentration quantiles, metric histories, the layer
grid; the Spearman table when there is no ``trials.csv``) are read as the tables themselves.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from sweep.report.predictions_file import PREDICTIONS_FILE, predictions_table, write_predictions
from sweep.report.study_context import UNTRAINED_SCALE
from sweep.report.summaries import ANGLE_WEIGHTS, INIT, LOSS_AT_SCALE, SEARCH_SPACE, SPEARMAN_COLUMNS

TRIALS_CSV, CONFIG_YAML = "trials.csv", "config.yaml"
HISTORY_STEM = "validation_history"  # every trial's validation at each evaluation: what a race replay reads
HISTORY_CSV = f"{HISTORY_STEM}.csv"
PAIRED_STEM = "paired_comparison"  # the paired test's table (sweep.report.paired_table), merged into the Spearman
PAIRED_TEST_CSV = f"{PAIRED_STEM}_test.csv"  # the same comparison on STSB test, confirming the validation choice
PAIRED_FILES = (f"{PAIRED_STEM}.csv", f"{PAIRED_STEM}.md")  # computed from MLflow's predictions: copied
TABLE_STEMS = (
    "concentration_vs_scale",
    "train_loss_curves",
    "spearman_vs_step",
    HISTORY_STEM,
    "learned_scale_trajectory",
    "layer_grid_heatmap",
    PAIRED_STEM,
)
SPEARMAN_STEM = "spearman_vs_scale"
HEATMAP_STEMS = ("angle_weights_heatmap", "angle_scales_heatmap")
# the untrained Spearman is one model's: these config keys must match for a sibling's value to stand in
# (model.normalize may differ: the cosine of the evaluation does not depend on it)
SAME_MODEL_KEYS = ("model.name_or_path", "model.kind", "model.static_init", "model.num_layers", "model.reinit")
SAME_EVAL_KEYS = ("data.validation", "data.test", "data.local_dir", "data.source")


def table_path(folder: Path, stem: str) -> Path:
    """The folder's table ``stem``: ``stem.csv``, or ``stem.csv.gz`` where the table is written compressed (a long
    one: `sweep.report.axes.save_figure`) or a folder keeps it so."""
    compressed = folder / f"{stem}.csv.gz"
    return compressed if compressed.exists() else folder / f"{stem}.csv"


def read_csv(path: Path) -> pd.DataFrame:
    """A results CSV with only empty fields as missing (``None`` and ``nan`` stay the labels they were)."""
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def complete_trials(folder: Path) -> pd.DataFrame:
    """The COMPLETE trials of the folder's ``trials.csv`` (`read_csv`), as they were written."""
    trials = read_csv(folder / TRIALS_CSV)
    return trials[trials["state"] == "COMPLETE"]


def flat_config(folder: Path) -> dict[str, object]:
    """``config.yaml`` flattened to dotted keys; lists as their string form (one hashable value per key)."""
    path = folder / CONFIG_YAML
    if not path.exists():
        return {}

    def walk(node: object, prefix: str) -> dict[str, object]:
        if isinstance(node, dict):
            return {k: v for key, value in node.items() for k, v in walk(value, f"{prefix}{key}.").items()}
        return {prefix[:-1]: str(node) if isinstance(node, list) else node}

    return walk(yaml.safe_load(path.read_text()) or {}, "")


@dataclass(frozen=True)
class FixedScaleReference:
    """A sibling study's fixed-scale validation curve (``scale, n, mean`` rows, scale > 0), drawn in grey on a
    learnable-scale study's Spearman figure; ``name`` is the sibling folder's."""

    name: str
    rows: pd.DataFrame


@dataclass
class ResultsFolder:
    """A results folder read back: the trials frame (config params even without trials), the tables read as
    they are, and the untrained model's Spearman rows (scale 0) where the folder or a sibling has them."""

    path: Path
    trials: pd.DataFrame
    has_trials: bool
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    untrained: pd.DataFrame = field(default_factory=pd.DataFrame)
    reference: FixedScaleReference | None = None

    def copy_sources(self, out_dir: Path) -> list[Path]:
        """Copy ``trials.csv``, ``config.yaml``, the paired comparison and the shipped predictions unchanged into
        ``out_dir`` (nothing when it is the folder); predictions shipped as ``predictions.csv.gz`` (before
        ``predictions.npz``) are written as ``predictions.npz`` (`sweep.report.predictions_file`)."""
        out_dir.mkdir(parents=True, exist_ok=True)
        copied = []
        for name in (TRIALS_CSV, CONFIG_YAML, *PAIRED_FILES, PAIRED_TEST_CSV, PREDICTIONS_FILE):
            source, target = self.path / name, out_dir / name
            if source.exists() and source.resolve() != target.resolve():
                shutil.copyfile(source, target)
                copied.append(target)
        legacy = predictions_table(self.path) if not (self.path / PREDICTIONS_FILE).exists() else None
        if legacy is not None:
            copied.append(write_predictions(legacy, out_dir / PREDICTIONS_FILE))
        return copied


def _trials_frame(folder: Path, config: dict[str, object]) -> tuple[pd.DataFrame, bool]:
    """``trials.csv`` as a ``load_trials``-like frame, or one config-only row when the folder has none."""
    path = folder / TRIALS_CSV
    if not path.exists():
        return pd.DataFrame([{f"param.{key}": value for key, value in config.items()} | {"state": None}]), False
    table = read_csv(path)
    # a config key has a dot; so has a metric of the loss at a fractional scale (sim_loss_at_scale_0.5)
    params = [c for c in table.columns if "." in c and not LOSS_AT_SCALE.match(c.removesuffix(INIT))]
    trials = table.rename(columns={column: f"param.{column}" for column in params})
    for column in params:  # every config column of trials.csv is swept (or the scale or the seed)
        trials[SEARCH_SPACE + column] = "swept"
    if "param.loss.weights" in trials:  # the AnglE weights, logged as "w1,w2,w3"
        weights = trials["param.loss.weights"].astype(str).str.split(",", expand=True).astype(float)
        for index, column in enumerate(ANGLE_WEIGHTS):
            trials[column] = weights[index]
    constants = {f"param.{key}": value for key, value in config.items() if f"param.{key}" not in trials}
    return pd.concat([trials, pd.DataFrame(constants, index=trials.index)], axis=1), True


def _own_untrained(folder: Path) -> pd.DataFrame:
    """Scale-0 rows of the folder's Spearman table, the ``untrained`` rows of a schedule study's arms table, or the
    ``untrained`` column of an AnglE heatmap."""
    spearman = folder / f"{SPEARMAN_STEM}.csv"
    if spearman.exists():
        table = read_csv(spearman)
        return table[table["scale"] == UNTRAINED_SCALE]
    arms = folder / "schedule_arms.csv"
    if arms.exists():
        rows = read_csv(arms).query("panel == 'untrained'")
        return pd.DataFrame({"scale": UNTRAINED_SCALE, "split": rows["split"], "n": 1, "mean": rows["mean"]})
    for stem in HEATMAP_STEMS:
        path = folder / f"{stem}.csv"
        if path.exists() and "untrained" in (table := read_csv(path)):
            return pd.DataFrame(
                [
                    {"scale": UNTRAINED_SCALE, "split": "validation", "n": 1}
                    | {"mean": float(table["untrained"].iloc[0])}
                ]
            )
    return pd.DataFrame()


def _check_same_model(folder: Path, sibling: Path) -> None:
    """ValueError unless both folders' configs name the same base model and evaluation data."""
    mine, theirs = flat_config(folder), flat_config(sibling)
    keys = [k for k in {*mine, *theirs} if k.startswith(SAME_MODEL_KEYS + SAME_EVAL_KEYS)]
    different = sorted(k for k in keys if mine.get(k) != theirs.get(k))
    if different:
        raise ValueError(f"--untrained-from {sibling}: its model or evaluation data differ ({', '.join(different)})")


def sibling_reference(folder: Path, sibling: Path) -> FixedScaleReference | None:
    """For a learnable-scale study: ``sibling``'s fixed-scale validation Spearman curve (its trained rows of
    ``spearman_vs_scale.csv``), the curve the learnable scale is compared to; None for other losses or when the
    sibling has no such rows."""
    if flat_config(folder).get("loss.name") != "learnable_scale" or not (sibling / f"{SPEARMAN_STEM}.csv").exists():
        return None
    _check_same_model(folder, sibling)
    table = read_csv(sibling / f"{SPEARMAN_STEM}.csv")
    rows = table[(table["split"] == "validation") & (table["scale"] != UNTRAINED_SCALE)]
    conditions = [c for c in rows.columns if c not in SPEARMAN_COLUMNS]
    if rows.empty or any(rows[c].nunique() > 1 for c in conditions):  # one curve only
        return None
    return FixedScaleReference(sibling.name, rows[["scale", "n", "mean"]].sort_values("scale", ignore_index=True))


def sibling_untrained(folder: Path, sibling: Path) -> pd.DataFrame:
    """The untrained rows of ``sibling`` (its scale-0 Spearman rows), after checking that both folders' configs
    name the same base model and evaluation data; ValueError otherwise."""
    _check_same_model(folder, sibling)
    rows = _own_untrained(sibling)
    if rows.empty:
        raise ValueError(f"--untrained-from {sibling}: it has no scale-0 (untrained) rows in {SPEARMAN_STEM}.csv")
    return rows[["scale", "split", "n", "mean"]].groupby(["scale", "split"], sort=False).mean().reset_index()


def load_results_folder(folder: Path, untrained_from: Path | None = None) -> ResultsFolder:
    """Read ``folder``; ``untrained_from``: a sibling results folder with the same base model and scale-0 rows,
    used for each split ``folder`` has no untrained value of its own for (a schedule study scores the untrained
    model on validation only, at step 0), and for a learnable-scale study the fixed-scale curve it
    is compared to (``sibling_reference``)."""
    config = flat_config(folder)
    trials, has_trials = _trials_frame(folder, config)
    stems = [*TABLE_STEMS, *([] if has_trials else [SPEARMAN_STEM])]
    tables = {stem: read_csv(table_path(folder, stem)) for stem in stems if table_path(folder, stem).exists()}
    untrained = _own_untrained(folder)
    if untrained_from is not None:  # the sibling fills the splits the folder has no untrained value for
        theirs = sibling_untrained(folder, untrained_from)
        missing = theirs[~theirs["split"].isin(untrained["split"] if not untrained.empty else [])]
        conditions = [c for c in untrained.columns if c not in SPEARMAN_COLUMNS]
        if conditions:  # one untrained model: its value stands in every condition the folder has rows for
            missing = untrained[conditions].drop_duplicates().merge(missing, how="cross")
        untrained = pd.concat([untrained, missing], ignore_index=True) if not untrained.empty else missing
    reference = sibling_reference(folder, untrained_from) if untrained_from is not None else None
    return ResultsFolder(folder, trials, has_trials, tables, untrained, reference)

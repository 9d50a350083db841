"""Paper figures (column width, Agg, no display). Each writer saves PNG + SVG + the CSV behind the
figure into ``out_dir`` and returns the paths it wrote, or ``[]`` when the trials lack its columns."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import Normalize, SymLogNorm
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullLocator, SymmetricalLogLocator
from matplotlib.transforms import Transform
from scipy import stats

from sweep.report.loss_curves import gradient_long

PAPER_RC = {
    "font.size": 7,
    "axes.labelsize": 7,
    "axes.titlesize": 7,
    "legend.fontsize": 6,
    "xtick.labelsize": 6,
    "ytick.labelsize": 6,
    "lines.linewidth": 1.0,
    "lines.markersize": 3,
    "svg.fonttype": "none",  # keep text editable in the SVG
}
COLUMN_SIZE = (3.5, 2.6)  # inches, one column of a two-column paper
DOUBLE_COLUMN_WIDTH = 7.0
DPI = 200
MAX_LABELLED_SCALES = 8  # colour bars get a tick at each swept scale up to this many

SCALE = "param.loss.scale"
SEARCH_SPACE = "param.study.search_space."  # one param per swept key: study.search_space.<key>
NOT_CONDITIONS = {"loss.scale", "loss.temperature", "trial.seed"}  # the x axis (temperature = 1/scale), the replicate
ANGLE_WEIGHTS = {"param.loss.w1": "w1", "param.loss.w2": "w2", "param.loss.w3": "w3"}
ANGLE_SCALES = {
    "param.loss.cos_scale": "cos_scale",
    "param.loss.ibn_scale": "ibn_scale",
    "param.loss.angle_scale": "angle_scale",
}
LAYER_GRID = re.compile(r"^stsb_(validation|test)_spearman_L(\d+)_D(\d+)$")  # sweep.layer_grid's metric names
LINESTYLES = ("-", "--", ":", "-.")
SPLITS = {"validation": "stsb_validation_spearman", "test": "stsb_test_spearman"}
# cosine distributions logged as sim_{kind}_{mean,q05,q95}[_init] (see sweep.concentration), legend labels
SIM_KINDS = {
    "pos": "positive pairs",
    "neg": "in-batch negatives",
    "rand": "random pairs",
    "high": "STSB pairs, high gold score",
    "low": "STSB pairs, low gold score",
}
SIM_STAGES = {"final": "", "init": "_init"}  # metric suffix per stage
SCALE_LABEL = "scale"
# round temperatures offered as ticks on the top axis, by priority: decades, then 5 and 2 multiples where room
_NICE_TEMPERATURES = (10.0, 1.0, 0.1, 0.01, 0.001, 5.0, 0.5, 0.05, 0.005, 2.0, 0.2, 0.02, 0.002)


# ---------------------------------------------------------------- shared helpers


def new_figure(width: float = COLUMN_SIZE[0], height: float = COLUMN_SIZE[1]) -> Figure:
    """A constrained-layout Figure, not attached to pyplot."""
    return Figure(figsize=(width, height), layout="constrained")


def save_figure(fig: Figure, data: pd.DataFrame, out_dir: Path, stem: str) -> list[Path]:
    """Write ``stem.png`` (DPI), ``stem.svg`` and ``stem.csv`` (the data behind the figure)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg, csv = (out_dir / f"{stem}.{ext}" for ext in ("png", "svg", "csv"))
    fig.savefig(png, dpi=DPI)
    fig.savefig(svg)
    data.to_csv(csv, index=False)
    return [png, svg, csv]


def _reciprocal(x: np.ndarray | float) -> np.ndarray:
    """Elementwise 1/x with 1/0 = 1e300: scale 0 is an infinite temperature, but axis limits must be finite."""
    x = np.asarray(x, dtype=float)
    return np.divide(1.0, x, out=np.full(x.shape, 1e300), where=x != 0)


def _plain_number(value: float, _position: int | None = None) -> str:
    """Tick label ``100`` rather than ``10^2``."""
    return f"{value:g}"


def _on_x(transform: Transform) -> Callable[[np.ndarray], np.ndarray]:
    """Apply a 2-D transform to x values only."""

    def apply(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        points = np.column_stack([x.ravel(), np.ones(x.size)])
        return transform.transform(points)[:, 0].reshape(x.shape)

    return apply


def add_temperature_axis(ax: Axes, min_gap: float = 0.09) -> None:
    """Top x-axis labelled with temperature = 1/scale at round values; call once limits are final.

    ``secondary_xaxis`` composes its functions with a linear parent scale only, so the top axis gets its
    own scale, the parent's scale transform after 1/x: ticks then also line up on a symlog axis.
    Round temperatures are taken in priority order unless closer than ``min_gap`` (axes fraction) to a kept one.
    """
    to_scaled, from_scaled = _on_x(ax.transScale), _on_x(ax.transScale.inverted())
    top = ax.secondary_xaxis("top", functions=(_reciprocal, _reciprocal))
    top.set_xscale("function", functions=(lambda t: to_scaled(_reciprocal(t)), lambda u: _reciprocal(from_scaled(u))))
    ax.get_xlim()  # applies pending autoscaling, so that transData below sees the final limits
    to_axes = _on_x(ax.transData + ax.transAxes.inverted())
    kept: dict[float, float] = {}  # temperature -> position
    for temperature in _NICE_TEMPERATURES:
        position = float(to_axes(_reciprocal(temperature)))
        if 0 <= position <= 1 and all(abs(position - other) >= min_gap for other in kept.values()):
            kept[temperature] = position
    top.set_xticks(sorted(kept))
    top.xaxis.set_major_formatter(_plain_number)
    top.xaxis.set_minor_locator(NullLocator())
    top.set_xlabel("temperature = 1/scale")


def format_scale_axis(ax: Axes, symlog: bool = True) -> None:
    """Scale on x (symlog with linthresh 1 so that 0 shows, or linear) and temperature on top."""
    if symlog:
        ax.set_xscale("symlog", linthresh=1)
        ax.xaxis.set_major_formatter(_plain_number)
        ax.xaxis.set_minor_locator(SymmetricalLogLocator(linthresh=1, base=10, subs=np.arange(2, 10)))
    ax.set_xlabel(SCALE_LABEL)
    add_temperature_axis(ax)


def legend_below(ax: Axes, title: str) -> None:
    """The axes' legend under the figure, so that it hides no data (needs constrained layout)."""
    handles, labels = ax.get_legend_handles_labels()
    columns = 1 if max(map(len, labels), default=0) > 30 else min(len(labels), 2)
    ax.get_figure().legend(handles, labels, title=title, loc="outside lower center", ncols=columns, title_fontsize=6)


def scale_norm(scales: pd.Series) -> Normalize:
    """Colour norm for scales: symlog (linthresh 1) so that 0 and large scales both get colours."""
    low, high = float(scales.min()), float(scales.max())
    return SymLogNorm(linthresh=1, vmin=low, vmax=max(high, low + 1))


def t_interval(values: pd.Series, level: float = 0.95) -> dict[str, float]:
    """n, mean and the Student-t interval of the mean (NaN bounds for fewer than two values)."""
    values = values.dropna()
    n, mean = len(values), values.mean()
    half = stats.t.ppf((1 + level) / 2, n - 1) * values.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
    return {"n": n, "mean": mean, "ci_low": mean - half, "ci_high": mean + half}


def condition_columns(trials: pd.DataFrame) -> dict[str, str]:
    """Swept parameters other than scale and seed that take several values: ``param.<key>`` -> short name.

    Each combination of their values is its own series in the figures: trials that differ in them are never
    pooled as if they were seeds. The swept keys are read from the logged ``study.search_space.*`` params.
    """
    swept = [column.removeprefix(SEARCH_SPACE) for column in trials.columns if column.startswith(SEARCH_SPACE)]
    columns = [f"param.{key}" for key in swept if key not in NOT_CONDITIONS and f"param.{key}" in trials]
    complete = trials[trials["state"] == "COMPLETE"]
    return {column: column.split(".", 2)[-1] for column in columns if complete[column].nunique(dropna=False) > 1}


def complete_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """COMPLETE trials with the scale as ``scale`` and each condition column under its short name."""
    complete = trials[trials["state"] == "COMPLETE"]
    return complete.rename(columns={SCALE: "scale", **condition_columns(trials)})


def _condition_label(conditions: Sequence[str], values: Sequence[object]) -> str:
    """``name=value, ...`` for a combination of conditions ('' when there are none)."""
    return ", ".join(f"{name}={value}" for name, value in zip(conditions, values, strict=True))


def _by_condition(table: pd.DataFrame, conditions: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """(label, rows) per combination of the condition columns; one unlabelled group when there are none."""
    if not conditions:
        return [("", table)]
    return [
        (_condition_label(conditions, keys), group)
        for keys, group in table.groupby(conditions, sort=True, dropna=False)
    ]


def _swept_scales(trials: pd.DataFrame) -> bool:
    """Whether the COMPLETE trials span at least two scales (else a curve vs scale says nothing)."""
    return SCALE in trials and trials.loc[trials["state"] == "COMPLETE", SCALE].nunique() > 1


# ---------------------------------------------------------------- analytic loss vs scale


def _profile_lines(ax: Axes, table: pd.DataFrame, y: str) -> None:
    """One line of ``y`` vs scale per similarity profile."""
    for profile, group in table.groupby("profile", sort=False):
        ax.plot(group["scale"], group[y], label=profile)
    legend_below(ax, "similarities (positive first)")


@mpl.rc_context(PAPER_RC)
def write_loss_vs_scale(table: pd.DataFrame, out_dir: Path, gradient: bool = False) -> list[Path]:
    """The ``loss_vs_scale`` figure from a ``loss_curves.loss_table``; with ``gradient`` also its gradients.

    With ``gradient`` the loss CSV keeps the ``grad_i`` columns when all profiles have the same length, and
    ``loss_vs_scale_gradient`` shows d loss / d positive similarity (its CSV: every similarity, long format).
    """
    fig = new_figure()
    ax = fig.add_subplot()
    _profile_lines(ax, table, "loss")
    ax.set_ylabel("MNRL loss on one anchor (nats)")
    format_scale_axis(ax, symlog=False)
    keep_gradients = gradient and not table.isna().any().any()
    paths = save_figure(fig, table if keep_gradients else table[["profile", "scale", "loss"]], out_dir, "loss_vs_scale")
    if not gradient:
        return paths

    gradients = gradient_long(table)
    fig = new_figure()
    ax = fig.add_subplot()
    ax.axhline(0, color="0.6", linewidth=0.5)
    _profile_lines(ax, gradients[gradients["index"] == 0], "grad")
    ax.set_ylabel("d loss / d positive similarity")
    format_scale_axis(ax, symlog=False)
    return paths + save_figure(fig, gradients, out_dir, "loss_vs_scale_gradient")


# ---------------------------------------------------------------- study figures


def _condition_names(trials: pd.DataFrame) -> list[str]:
    """The short names of the condition columns (see ``condition_columns``)."""
    return list(condition_columns(trials).values())


def spearman_summary(trials: pd.DataFrame) -> pd.DataFrame:
    """Per condition, scale and split: n seeds, mean STSB Spearman and its 95% t-interval (COMPLETE trials)."""
    complete, conditions = complete_trials(trials), _condition_names(trials)
    keys = [*conditions, "scale"]
    rows = [
        {**dict(zip(keys, group_keys, strict=True)), "split": split, **t_interval(group[column])}
        for split, column in SPLITS.items()
        if column in complete
        for group_keys, group in complete.groupby(keys, dropna=False)
    ]
    summary = pd.DataFrame(rows, columns=[*keys, "split", "n", "mean", "ci_low", "ci_high"])
    return summary[summary["n"] > 0].reset_index(drop=True)


@mpl.rc_context(PAPER_RC)
def write_spearman_vs_scale(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Validation (solid) and test (dashed) Spearman vs scale with 95% t-interval error bars over seeds;
    one colour per condition."""
    if not _swept_scales(trials) or not any(column in trials for column in SPLITS.values()):
        return []
    summary = spearman_summary(trials)
    if summary.empty:
        return []
    fig = new_figure(height=COLUMN_SIZE[1] + (0.3 if condition_columns(trials) else 0))
    ax = fig.add_subplot()
    for colour, (condition, rows) in enumerate(_by_condition(summary, _condition_names(trials))):
        for split, group in rows.groupby("split", sort=False):
            errors = [group["mean"] - group["ci_low"], group["ci_high"] - group["mean"]]
            ax.errorbar(
                group["scale"],
                group["mean"],
                yerr=np.nan_to_num(errors),
                marker="o",
                capsize=2,
                color=f"C{colour}",
                linestyle="-" if split == "validation" else "--",
                label=f"{split}, {condition}" if condition else split,
            )
    ax.set_ylabel("STSB Spearman (cosine)")
    legend_below(ax, "STSB split: mean and 95% t-interval over seeds")
    format_scale_axis(ax)
    return save_figure(fig, summary, out_dir, "spearman_vs_scale")


def concentration_summary(trials: pd.DataFrame) -> pd.DataFrame:
    """Per condition, scale, pair kind and stage (final / init): mean over seeds of the similarity mean, q05, q95."""
    complete = complete_trials(trials)
    keys = [*_condition_names(trials), "scale"]
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


MAX_PANEL_COLUMNS = 3


def _panel_shape(n: int) -> tuple[int, int]:
    """(rows, columns) of a grid of ``n`` panels, at most ``MAX_PANEL_COLUMNS`` wide."""
    columns = min(n, MAX_PANEL_COLUMNS)
    return -(-n // columns), columns


def _panel_axes(fig: Figure, n: int, sharex: bool) -> tuple[list[Axes], list[Axes]]:
    """The grid's axes (all, for a shared colour bar) and its first ``n`` (the panels; the rest are hidden)."""
    rows, columns = _panel_shape(n)
    axes = list(fig.subplots(rows, columns, sharex=sharex, sharey=True, squeeze=False).ravel())
    for ax in axes[n:]:
        ax.set_visible(False)
    return axes, axes[:n]


def _facets(n: int, height: float = 2.0) -> tuple[Figure, list[Axes]]:
    """A figure with ``n`` panels sharing both axes: one column wide for one panel, two otherwise."""
    rows, _ = _panel_shape(n)
    fig = new_figure(
        COLUMN_SIZE[0] if n == 1 else DOUBLE_COLUMN_WIDTH, COLUMN_SIZE[1] if n == 1 else height * rows + 0.5
    )
    return fig, _panel_axes(fig, n, sharex=True)[1]


@mpl.rc_context(PAPER_RC)
def write_concentration_vs_scale(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Cosine similarity of each logged pair kind vs scale: mean, q05-q95 band, before training dashed;
    one panel per condition."""
    if not _swept_scales(trials):
        return []
    summary = concentration_summary(trials)
    summary = summary[summary["n"] > 0]
    if summary.empty:
        return []
    panels = _by_condition(summary, _condition_names(trials))
    fig, axes = _facets(len(panels))
    for ax, (condition, rows) in zip(axes, panels, strict=True):
        for kind, group in rows.groupby("kind", sort=False):
            final, init = (group[group["stage"] == stage] for stage in SIM_STAGES)
            (line,) = ax.plot(final["scale"], final["mean"], marker="o", label=SIM_KINDS[kind])
            ax.fill_between(final["scale"], final["q05"], final["q95"], color=line.get_color(), alpha=0.2, linewidth=0)
            ax.plot(init["scale"], init["mean"], color=line.get_color(), linestyle="--")
        if condition:
            ax.set_title(condition.replace(", ", "\n"))
        format_scale_axis(ax)
        ax.label_outer()
    axes[0].set_ylabel("cosine similarity")
    legend_below(axes[0], "mean over seeds, q05-q95 band; dashed: before training")
    return save_figure(fig, summary, out_dir, "concentration_vs_scale")


@mpl.rc_context(PAPER_RC)
def write_metric_histories(
    trials: pd.DataFrame, history: pd.DataFrame, out_dir: Path, stem: str, ylabel: str, scale_label: str = SCALE_LABEL
) -> list[Path]:
    """One line per trial of a metric vs step, coloured by scale (symlog colour bar, ticks at the swept scales);
    one line style per condition."""
    if SCALE not in trials or history.empty:
        return []
    conditions = condition_columns(trials)
    columns = ["run_id", "trial_number", "state", SCALE, *conditions]
    data = history.merge(trials[columns], on="run_id").rename(columns={SCALE: "scale", **conditions})
    data = data.dropna(subset=["scale"])
    if data.empty:
        return []
    data = data[["run_id", "trial_number", "state", *conditions.values(), "scale", "step", "value"]]
    norm, cmap = scale_norm(data["scale"]), mpl.colormaps["viridis"]
    fig = new_figure(height=COLUMN_SIZE[1] + (0.3 if conditions else 0))
    ax = fig.add_subplot()
    for index, (condition, rows) in enumerate(_by_condition(data, list(conditions.values()))):
        style = LINESTYLES[index % len(LINESTYLES)]
        for (_, scale), run in rows.groupby(["run_id", "scale"], sort=False):
            ax.plot(run["step"], run["value"], color=cmap(norm(scale)), alpha=0.8, linestyle=style)
        if condition:
            ax.plot([], [], color="0.3", linestyle=style, label=condition)
    colorbar = fig.colorbar(mpl.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, label=scale_label)
    swept = np.sort(data["scale"].unique())
    if len(swept) <= MAX_LABELLED_SCALES:
        colorbar.set_ticks(swept)
    colorbar.ax.yaxis.set_major_formatter(_plain_number)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    if conditions:
        legend_below(ax, "line style: condition")
    return save_figure(fig, data, out_dir, stem)


def _panel_heatmaps(
    table: pd.DataFrame, x: str, y: str, panel: str, labels: Mapping[str, str], colorbar_label: str
) -> Figure:
    """One annotated heatmap of ``table['mean']`` over (x, y) per value of ``panel``, sharing one colour scale.
    ``labels`` names the axes: keys x, y and panel (the panel title prefix)."""
    xs, ys, panels = (sorted(table[key].unique()) for key in (x, y, panel))
    rows, columns = _panel_shape(len(panels))
    fig = new_figure(min(DOUBLE_COLUMN_WIDTH, max(COLUMN_SIZE[0], 1.0 + 1.9 * columns)), 0.3 + 2.0 * rows)
    grid_axes, axes = _panel_axes(fig, len(panels), sharex=False)
    norm = Normalize(table["mean"].min(), table["mean"].max())
    for ax, value in zip(axes, panels, strict=True):
        grid = table[table[panel] == value].pivot(index=y, columns=x, values="mean").reindex(index=ys, columns=xs)
        image = ax.imshow(grid.to_numpy(dtype=float), origin="lower", cmap="viridis", norm=norm, aspect="auto")
        for (row, col), cell in np.ndenumerate(grid.to_numpy(dtype=float)):
            if np.isfinite(cell):
                colour = "w" if norm(cell) < 0.5 else "k"
                ax.text(col, row, f"{cell:.3f}", ha="center", va="center", fontsize=5, color=colour)
        ax.set_xticks(range(len(xs)), [f"{v:g}" if isinstance(v, float) else str(v) for v in xs])
        ax.set_yticks(range(len(ys)), [f"{v:g}" if isinstance(v, float) else str(v) for v in ys])
        title = f"{value:g}" if isinstance(value, float) else str(value)
        ax.set_title(labels[panel] + title.replace(", ", "\n"))
        ax.set_xlabel(labels[x])
        ax.set_ylabel(labels[y])
        ax.label_outer()
    fig.colorbar(image, ax=grid_axes, label=colorbar_label)
    return fig


def _mean_by(trials: pd.DataFrame, columns: Mapping[str, str], metric: str) -> pd.DataFrame:
    """n and mean of ``metric`` over COMPLETE trials per combination of ``columns`` (renamed to their values)."""
    complete = trials[trials["state"] == "COMPLETE"].rename(columns=dict(columns))
    if not {*columns.values(), metric} <= set(complete.columns):
        return pd.DataFrame()
    keys = list(columns.values())
    table = complete.groupby(keys)[metric].agg(n="count", mean="mean").reset_index()
    return table[table["n"] > 0]


@mpl.rc_context(PAPER_RC)
def write_angle_weights_heatmap(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Mean validation Spearman over the AnglE weights: a (w1, w2) heatmap per w3 value."""
    table = _mean_by(trials, ANGLE_WEIGHTS, SPLITS["validation"])
    if len(table) < 2:  # one weight triple: nothing to compare
        return []
    labels = {"w1": "w1 (cosine)", "w2": "w2 (in-batch)", "w3": "w3 (angle) = "}
    fig = _panel_heatmaps(table, "w1", "w2", "w3", labels, "validation Spearman (mean)")
    return save_figure(fig, table, out_dir, "angle_weights_heatmap")


@mpl.rc_context(PAPER_RC)
def write_angle_scales_heatmap(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Mean validation Spearman over the AnglE objectives' scales: (cos_scale, ibn_scale) per angle_scale."""
    table = _mean_by(trials, ANGLE_SCALES, SPLITS["validation"])
    if table.empty or not all(table[key].nunique() > 1 for key in ("cos_scale", "ibn_scale")):
        return []
    labels = {
        "cos_scale": "cosine objective scale",
        "ibn_scale": "in-batch objective scale",
        "angle_scale": "angle scale = ",
    }
    fig = _panel_heatmaps(table, "cos_scale", "ibn_scale", "angle_scale", labels, "validation Spearman (mean)")
    return save_figure(fig, table, out_dir, "angle_scales_heatmap")


def layer_grid_summary(trials: pd.DataFrame) -> pd.DataFrame:
    """STSB Spearman per condition, scale, split, layer and dim (``stsb_{split}_spearman_L{l}_D{d}`` metrics):
    n seeds, mean and 95% t-interval over COMPLETE trials. Scale is a condition here unless it is absent."""
    complete = complete_trials(trials)
    keys = [*_condition_names(trials), *(["scale"] if "scale" in complete and complete["scale"].nunique() > 1 else [])]
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
    summary = pd.DataFrame(rows, columns=[*keys, "split", "layer", "dim", "n", "mean", "ci_low", "ci_high"])
    summary = summary[summary["n"] > 0]
    return summary.sort_values([*keys, "split", "layer", "dim"], kind="stable", ignore_index=True)


def _layer_grid_panels(summary: pd.DataFrame) -> pd.DataFrame:
    """The test split of a layer-grid summary with a ``panel`` label per condition (and scale)."""
    keys = [k for k in summary.columns if k not in ("split", "layer", "dim", "n", "mean", "ci_low", "ci_high")]
    test = summary[summary["split"] == "test"].copy()
    test["panel"] = [_condition_label(keys, values) for values in test[keys].itertuples(index=False)] if keys else ""
    return test


@mpl.rc_context(PAPER_RC)
def write_layer_grid_figures(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """For layer x dim studies: a test-Spearman heatmap per (layer, dim) and condition, and the speed/quality
    trade-off (Spearman vs encoder layers kept, one line per dim; encoding cost grows linearly with layers,
    index size and search cost with dim)."""
    summary = layer_grid_summary(trials)
    if summary.empty or summary["layer"].nunique() * summary["dim"].nunique() < 2:
        return []
    test = _layer_grid_panels(summary)
    labels = {"dim": "embedding dims kept", "layer": "encoder layers kept", "panel": ""}
    heatmap = _panel_heatmaps(test, "dim", "layer", "panel", labels, "test Spearman (mean over seeds)")
    paths = save_figure(heatmap, summary, out_dir, "layer_grid_heatmap")

    panels = list(test.groupby("panel", sort=True))
    fig, axes = _facets(len(panels))
    dims = sorted(test["dim"].unique(), reverse=True)
    for ax, (panel, rows) in zip(axes, panels, strict=True):
        for index, dim in enumerate(dims):
            line = rows[rows["dim"] == dim]
            errors = np.nan_to_num([line["mean"] - line["ci_low"], line["ci_high"] - line["mean"]])
            ax.errorbar(
                line["layer"], line["mean"], yerr=errors, marker="o", capsize=2, color=f"C{index}", label=f"{dim} dims"
            )
        if panel:
            ax.set_title(panel.replace(", ", "\n"))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("encoder layers kept (encoding cost)")
        ax.label_outer()
    axes[0].set_ylabel("STSB test Spearman")
    legend_below(axes[0], "embedding dims kept (index size)")
    return paths + save_figure(fig, test, out_dir, "layer_grid_tradeoff")


TABLE_METRICS = (
    "stsb_validation_spearman",
    "stsb_test_spearman",
    "sim_pos_mean",
    "sim_neg_mean",
    "sim_rand_mean",
    "sim_rand_mean_init",
    "sim_uniformity",
    "sim_effective_rank",
    "learned_scale",
    "max_weight_change",
    "trial_wall_time_s",
)


def write_trials_table(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """``trials.csv``: one row per trial (every state) with the swept parameters, the seed and the headline metrics."""
    if trials.empty:
        return []
    swept = [f"param.{c.removeprefix(SEARCH_SPACE)}" for c in trials.columns if c.startswith(SEARCH_SPACE)]
    columns = [
        "trial_number",
        "state",
        *dict.fromkeys(c for c in [*swept, SCALE, "param.trial.seed"] if c in trials),
        *(m for m in TABLE_METRICS if m in trials),
    ]
    table = trials[columns].rename(columns=lambda c: c.removeprefix("param."))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "trials.csv"
    table.to_csv(path, index=False)
    return [path]


def write_study_figures(trials: pd.DataFrame, histories: Mapping[str, pd.DataFrame], out_dir: Path) -> list[Path]:
    """Every study figure whose columns exist, and the trials table; ``histories`` maps metric key to
    ``load_metric_history``."""
    from sweep.report.extra_sets import write_extra_sets_vs_scale  # imports this module: imported when called

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
        *write_extra_sets_vs_scale(trials, out_dir),
    ]

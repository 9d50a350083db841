"""Paper figures (column width, Agg, no display). Each writer saves PNG + SVG + the CSV behind the
figure into ``out_dir`` and returns the paths it wrote, or ``[]`` when the trials lack its columns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
LOSS_NAME = "param.loss.name"
ANGLE_WEIGHTS = {"param.loss.w1": "w1", "param.loss.w2": "w2", "param.loss.w3": "w3"}
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
    ax.get_figure().legend(
        handles, labels, title=title, loc="outside lower center", ncols=min(len(labels), 2), title_fontsize=6
    )


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


def complete_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """COMPLETE trials with the scale as ``scale`` and the loss name as ``loss`` (when logged)."""
    complete = trials[trials["state"] == "COMPLETE"]
    return complete.rename(columns={SCALE: "scale", LOSS_NAME: "loss"})


def _group_keys(complete: pd.DataFrame) -> list[str]:
    """Group by scale, and by loss too when the study mixes losses (they are not seeds of each other)."""
    return ["scale", "loss"] if "loss" in complete and complete["loss"].nunique() > 1 else ["scale"]


def _series_label(name: str, keys: dict[str, object]) -> str:
    """Legend label: the series name, plus the loss when there are several."""
    return f"{name}, {keys['loss']}" if "loss" in keys else name


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


def spearman_summary(trials: pd.DataFrame) -> pd.DataFrame:
    """Per scale and split: n seeds, mean STSB Spearman and its 95% t-interval (COMPLETE trials)."""
    complete = complete_trials(trials)
    keys = _group_keys(complete)
    rows = [
        {**dict(zip(keys, group_keys)), "split": split, **t_interval(group[column])}
        for split, column in SPLITS.items()
        if column in complete
        for group_keys, group in complete.groupby(keys)
    ]
    summary = pd.DataFrame(rows, columns=[*keys, "split", "n", "mean", "ci_low", "ci_high"])
    return summary[summary["n"] > 0].reset_index(drop=True)


@mpl.rc_context(PAPER_RC)
def write_spearman_vs_scale(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Validation and test Spearman vs scale with 95% t-interval error bars over seeds."""
    if SCALE not in trials or not any(column in trials for column in SPLITS.values()):
        return []
    summary = spearman_summary(trials)
    if summary.empty:
        return []
    fig = new_figure()
    ax = fig.add_subplot()
    series = [k for k in summary.columns if k in ("loss", "split")]
    for keys, group in summary.groupby(series, sort=False):
        labels = dict(zip(series, keys))
        errors = [group["mean"] - group["ci_low"], group["ci_high"] - group["mean"]]
        ax.errorbar(
            group["scale"], group["mean"], yerr=np.nan_to_num(errors), marker="o", capsize=2,
            linestyle="-" if labels["split"] == "validation" else "--",
            label=_series_label(labels["split"], labels),
        )
    ax.set_ylabel("STSB Spearman (cosine)")
    legend_below(ax, "STSB split: mean and 95% t-interval over seeds")
    format_scale_axis(ax)
    return save_figure(fig, summary, out_dir, "spearman_vs_scale")


def concentration_summary(trials: pd.DataFrame) -> pd.DataFrame:
    """Per scale, pair kind and stage (final / init): mean over seeds of the similarity mean, q05, q95."""
    complete = complete_trials(trials)
    keys = _group_keys(complete)
    tables = []
    for kind in SIM_KINDS:
        for stage, suffix in SIM_STAGES.items():
            if f"sim_{kind}_mean{suffix}" not in complete:
                continue
            stats_ = {s: complete.get(f"sim_{kind}_{s}{suffix}", np.nan) for s in ("mean", "q05", "q95")}
            frame = complete[keys].assign(**stats_)
            table = frame.groupby(keys).agg(
                n=("mean", "count"), mean=("mean", "mean"), q05=("q05", "mean"), q95=("q95", "mean")
            )
            tables.append(table.reset_index().assign(kind=kind, stage=stage))
    columns = [*keys, "kind", "stage", "n", "mean", "q05", "q95"]
    return pd.concat(tables, ignore_index=True)[columns] if tables else pd.DataFrame(columns=columns)


@mpl.rc_context(PAPER_RC)
def write_concentration_vs_scale(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Cosine similarity of each logged pair kind vs scale: mean, q05-q95 band, before training dashed."""
    if SCALE not in trials:
        return []
    summary = concentration_summary(trials)
    summary = summary[summary["n"] > 0]
    if summary.empty:
        return []
    fig = new_figure()
    ax = fig.add_subplot()
    series = [k for k in summary.columns if k in ("loss", "kind")]
    for keys, group in summary.groupby(series, sort=False):
        labels = dict(zip(series, keys))
        final, init = (group[group["stage"] == stage] for stage in SIM_STAGES)
        label = _series_label(SIM_KINDS[labels["kind"]], labels)
        (line,) = ax.plot(final["scale"], final["mean"], marker="o", label=label)
        ax.fill_between(final["scale"], final["q05"], final["q95"], color=line.get_color(), alpha=0.2, linewidth=0)
        ax.plot(init["scale"], init["mean"], color=line.get_color(), linestyle="--")
    ax.set_ylabel("cosine similarity")
    legend_below(ax, "mean over seeds, q05-q95 band; dashed: before training")
    format_scale_axis(ax)
    return save_figure(fig, summary, out_dir, "concentration_vs_scale")


@mpl.rc_context(PAPER_RC)
def write_metric_histories(
    trials: pd.DataFrame, history: pd.DataFrame, out_dir: Path, stem: str, ylabel: str, scale_label: str = SCALE_LABEL
) -> list[Path]:
    """One line per trial of a metric vs step, coloured by scale (symlog colour bar, ticks at the swept scales)."""
    if SCALE not in trials or history.empty:
        return []
    columns = ["run_id", "trial_number", "state", SCALE]
    data = history.merge(trials[columns], on="run_id").rename(columns={SCALE: "scale"}).dropna(subset=["scale"])
    if data.empty:
        return []
    data = data[["run_id", "trial_number", "state", "scale", "step", "value"]]
    norm, cmap = scale_norm(data["scale"]), mpl.colormaps["viridis"]
    fig = new_figure()
    ax = fig.add_subplot()
    for (_, scale), run in data.groupby(["run_id", "scale"], sort=False):
        ax.plot(run["step"], run["value"], color=cmap(norm(scale)), alpha=0.8)
    colorbar = fig.colorbar(mpl.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, label=scale_label)
    swept = np.sort(data["scale"].unique())
    if len(swept) <= MAX_LABELLED_SCALES:
        colorbar.set_ticks(swept)
    colorbar.ax.yaxis.set_major_formatter(_plain_number)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    return save_figure(fig, data, out_dir, stem)


@mpl.rc_context(PAPER_RC)
def write_angle_weights_heatmap(trials: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Mean validation Spearman over the AnglE weights: a (w1, w2) heatmap per w3 value."""
    metric = SPLITS["validation"]
    complete = complete_trials(trials).rename(columns=ANGLE_WEIGHTS)
    if not {*ANGLE_WEIGHTS.values(), metric} <= set(complete.columns):
        return []
    weights = list(ANGLE_WEIGHTS.values())
    table = complete.groupby(weights)[metric].agg(n="count", mean="mean").reset_index()
    table = table[table["n"] > 0]
    if table.empty:
        return []
    w1s, w2s, w3s = (sorted(table[w].unique()) for w in weights)
    fig = new_figure(min(DOUBLE_COLUMN_WIDTH, max(COLUMN_SIZE[0], 1.0 + 1.6 * len(w3s))), 2.2)
    axes = fig.subplots(1, len(w3s), sharey=True, squeeze=False)[0]
    norm = Normalize(table["mean"].min(), table["mean"].max())
    for ax, w3 in zip(axes, w3s):
        grid = table[table["w3"] == w3].pivot(index="w2", columns="w1", values="mean").reindex(index=w2s, columns=w1s)
        image = ax.imshow(grid.to_numpy(dtype=float), origin="lower", cmap="viridis", norm=norm, aspect="auto")
        for (row, col), value in np.ndenumerate(grid.to_numpy(dtype=float)):
            if np.isfinite(value):
                colour = "w" if norm(value) < 0.5 else "k"
                ax.text(col, row, f"{value:.3f}", ha="center", va="center", fontsize=5, color=colour)
        ax.set_xticks(range(len(w1s)), [f"{w:g}" for w in w1s])
        ax.set_yticks(range(len(w2s)), [f"{w:g}" for w in w2s])
        ax.set_title(f"w3 (angle) = {w3:g}")
        ax.set_xlabel("w1 (cosine)")
    axes[0].set_ylabel("w2 (in-batch)")
    fig.colorbar(image, ax=axes, label="validation Spearman (mean)")
    return save_figure(fig, table, out_dir, "angle_weights_heatmap")


def write_study_figures(trials: pd.DataFrame, histories: Mapping[str, pd.DataFrame], out_dir: Path) -> list[Path]:
    """Every study figure whose columns exist; ``histories`` maps metric key to ``load_metric_history``."""
    empty = pd.DataFrame(columns=["run_id", "step", "value"])
    return [
        *write_spearman_vs_scale(trials, out_dir),
        *write_concentration_vs_scale(trials, out_dir),
        *write_metric_histories(
            trials, histories.get("train_loss", empty), out_dir, "train_loss_curves", "training loss"
        ),
        *write_metric_histories(
            trials, histories.get("learned_scale", empty), out_dir, "learned_scale_trajectory", "learned scale",
            scale_label="initial scale",
        ),
        *write_angle_weights_heatmap(trials, out_dir),
    ]

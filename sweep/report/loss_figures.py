"""The analytic (and measured) MNRL loss vs scale figures: ``loss_vs_scale`` on a log y axis (no linear band near
0, hence no kink where a curve crosses it) and its gradient on a symlog one (it is 0 at scale 0)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.ticker import LogLocator, NullFormatter

from sweep.report.axes import PAPER_RC, format_scale_axis, legend_below, new_figure, plain_number, save_figure
from sweep.report.loss_curves import gradient_long

GRADIENT_LINTHRESH = 0.1
LOSS_FLOOR = 1e-3  # bottom of the log loss axis: a curve below it (a forgiven positive, ~1e-15) is named, not drawn
NORMALISED = "loss_over_ln_c"  # loss / ln C (C candidates per anchor: the loss at scale 0), when C differs


def chance_losses(table: pd.DataFrame) -> pd.Series:
    """Each profile's loss at scale 0, ln C for C candidates (any similarities), by profile; empty where a profile
    has no scale-0 row."""
    zero = table[table["scale"] == 0].drop_duplicates("profile").set_index("profile")["loss"]
    return zero if set(zero.index) == set(table["profile"]) else pd.Series(dtype=float)


def with_normalised_loss(table: pd.DataFrame) -> pd.DataFrame:
    """The table with ``loss_over_ln_c`` = loss / loss at scale 0 of its profile when the profiles have different
    candidate counts (their curves then start at different ln C); unchanged otherwise."""
    chance = chance_losses(table)
    if chance.empty or math.isclose(chance.min(), chance.max(), rel_tol=1e-9):
        return table
    return table.assign(**{NORMALISED: table["loss"] / table["profile"].map(chance)})


def _profile_lines(ax: Axes, table: pd.DataFrame, y: str, chance: pd.Series | None = None) -> None:
    """One line of ``y`` vs scale per similarity profile (``chance``: its ln C, to name C in the legend)."""
    for profile, group in table.groupby("profile", sort=False):
        label = str(profile)
        if chance is not None and not chance.empty:
            label += f" (C={round(math.exp(chance[profile]))})"
        ax.plot(group["scale"], group[y], label=label)
    ax.grid(True, which="major", axis="y", color="0.9", linewidth=0.5)
    legend_below(ax, "similarities (positive first)" + ("; C: candidates per anchor" if chance is not None else ""))


def _clip_below_floor(ax: Axes) -> None:
    """Stop the log y axis at ``LOSS_FLOOR`` when a curve falls below it, and say in the curve's colour where it
    leaves the axis and how low it goes (the CSV keeps every value)."""
    lines = [line for line in ax.get_lines() if not str(line.get_label()).startswith("_")]
    notes = []
    for line in lines:
        x, y = np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)
        below = np.flatnonzero(y < LOSS_FLOOR)
        if below.size:
            lowest = int(np.argmin(y))
            text = f"below {LOSS_FLOOR:g} from scale {x[below[0]]:g} ({y[lowest]:.1g} at {x[lowest]:g})"
            notes.append((to_hex(line.get_color()), text))
    if not notes:
        return
    ax.set_ylim(bottom=LOSS_FLOOR)
    for row, (colour, text) in enumerate(notes):
        ax.text(
            0.98, 0.04 + 0.08 * row, text, transform=ax.transAxes, ha="right", va="bottom", fontsize=5, color=colour
        )


@mpl.rc_context(PAPER_RC)
def write_loss_vs_scale(table: pd.DataFrame, out_dir: Path, gradient: bool = False) -> list[Path]:
    """The ``loss_vs_scale`` figure from a ``loss_curves.loss_table``; with ``gradient`` also its gradients.

    The loss axis is logarithmic. When the profiles have different candidate counts C (the measured batches'
    128 next to the analytic 4), each loss is divided by its ln C (its value at scale 0, so every curve starts at
    1) and the CSV gets that as ``loss_over_ln_c`` beside the raw ``loss``.
    With ``gradient`` the loss CSV keeps the ``grad_i`` columns when all profiles have the same length, and
    ``loss_vs_scale_gradient`` shows d loss / d positive similarity (its CSV: every similarity, long format).
    Scale 0 is a point of the analytic curve here (loss ln k), so the x axis is linear from 0.
    """
    fig = new_figure()
    ax = fig.add_subplot()
    normalised = with_normalised_loss(table)
    if NORMALISED in normalised:
        _profile_lines(ax, normalised, NORMALISED, chance_losses(table))
        ax.axhline(1.0, color="0.6", linestyle=":", linewidth=0.8, zorder=0)
        ax.set_ylabel("MNRL loss / ln C (log scale;\n1 = scale 0, chance)")
    else:
        _profile_lines(ax, table, "loss")
        ax.set_ylabel("MNRL loss (nats, log scale)")
    ax.set_yscale("log")
    _clip_below_floor(ax)
    ax.yaxis.set_major_locator(LogLocator(numticks=8))
    ax.yaxis.set_major_formatter(plain_number)
    ax.yaxis.set_minor_formatter(NullFormatter())
    format_scale_axis(ax, symlog=False)
    keep_gradients = gradient and not table.isna().any().any()
    data = normalised if keep_gradients else normalised.drop(columns=normalised.filter(like="grad_").columns)
    paths = save_figure(fig, data, out_dir, "loss_vs_scale")
    if not gradient:
        return paths

    gradients = gradient_long(table)
    fig = new_figure()
    ax = fig.add_subplot()
    ax.axhline(0, color="0.6", linewidth=0.5)
    _profile_lines(ax, gradients[gradients["index"] == 0], "grad")
    ax.set_yscale("symlog", linthresh=GRADIENT_LINTHRESH)
    ax.yaxis.set_major_formatter(plain_number)
    ax.set_ylabel(f"d loss / d positive sim.\n(symlog, linear within ±{GRADIENT_LINTHRESH:g})")
    format_scale_axis(ax, symlog=False)
    return paths + save_figure(fig, gradients, out_dir, "loss_vs_scale_gradient")

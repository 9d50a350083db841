"""The analytic (and measured) MNRL loss vs scale figures: ``loss_vs_scale`` and its gradient, on symlog y axes
so that curves spanning several decades stay readable."""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
import pandas as pd
from matplotlib.axes import Axes

from sweep.report.axes import PAPER_RC, format_scale_axis, legend_below, new_figure, plain_number, save_figure
from sweep.report.loss_curves import gradient_long

LOSS_LINTHRESH = 0.01  # nats: below this the loss axis is linear (a forgiven positive's loss goes to 0)
GRADIENT_LINTHRESH = 0.1


def _profile_lines(ax: Axes, table: pd.DataFrame, y: str, linthresh: float) -> None:
    """One line of ``y`` vs scale per similarity profile, on a symlog y axis."""
    for profile, group in table.groupby("profile", sort=False):
        ax.plot(group["scale"], group[y], label=profile)
    ax.set_yscale("symlog", linthresh=linthresh)
    ax.yaxis.set_major_formatter(plain_number)
    ax.grid(True, which="major", axis="y", color="0.9", linewidth=0.5)
    legend_below(ax, "similarities (positive first)")


@mpl.rc_context(PAPER_RC)
def write_loss_vs_scale(table: pd.DataFrame, out_dir: Path, gradient: bool = False) -> list[Path]:
    """The ``loss_vs_scale`` figure from a ``loss_curves.loss_table``; with ``gradient`` also its gradients.

    With ``gradient`` the loss CSV keeps the ``grad_i`` columns when all profiles have the same length, and
    ``loss_vs_scale_gradient`` shows d loss / d positive similarity (its CSV: every similarity, long format).
    Scale 0 is a point of the analytic curve here (loss ln k), so the x axis is linear from 0.
    """
    fig = new_figure()
    ax = fig.add_subplot()
    _profile_lines(ax, table, "loss", LOSS_LINTHRESH)
    ax.set_ylabel("MNRL loss (nats, symlog)")
    format_scale_axis(ax, symlog=False)
    keep_gradients = gradient and not table.isna().any().any()
    paths = save_figure(fig, table if keep_gradients else table[["profile", "scale", "loss"]], out_dir, "loss_vs_scale")
    if not gradient:
        return paths

    gradients = gradient_long(table)
    fig = new_figure()
    ax = fig.add_subplot()
    ax.axhline(0, color="0.6", linewidth=0.5)
    _profile_lines(ax, gradients[gradients["index"] == 0], "grad", GRADIENT_LINTHRESH)
    ax.set_ylabel("d loss / d positive sim. (symlog)")
    format_scale_axis(ax, symlog=False)
    return paths + save_figure(fig, gradients, out_dir, "loss_vs_scale_gradient")

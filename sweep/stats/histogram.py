"""The per-trial histogram of cosine distributions (the figure each trial logs next to its statistics): plotting,
kept apart from the statistics in ``sweep.stats.concentration``, which need no matplotlib."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure


def histogram_figure(distributions: dict[str, np.ndarray], title: str = "") -> Figure:
    """Overlaid density step histograms of cosine distributions on 80 shared bins over [-1, 1].

    Built without pyplot (no global state, no GUI backend); empty distributions are left out. Fixed margins
    rather than a layout engine: every trial draws two, and the constrained layout took a third of each.
    """
    fig = Figure(figsize=(7, 4.5))
    fig.subplots_adjust(left=0.09, right=0.98, bottom=0.11, top=0.92)
    ax = fig.add_subplot()
    bins = np.linspace(-1.0, 1.0, 81).tolist()  # matplotlib's types take a sequence of edges, not an array
    for name, values in distributions.items():
        v = np.clip(np.asarray(values, dtype=np.float64).ravel(), -1.0, 1.0)  # rounding can exceed 1
        if v.size:
            ax.hist(v, bins=bins, density=True, histtype="step", linewidth=1.5, label=f"{name} (n={v.size})")
    ax.set_xlim(-1.0, 1.0)
    ax.set_xlabel("cosine similarity")
    ax.set_ylabel("density")
    if title:
        ax.set_title(title)
    if ax.patches:
        ax.legend()
    return fig

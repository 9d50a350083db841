"""Analytic MultipleNegativesRankingLoss (InfoNCE) on one anchor as a function of the scale.

For similarities ``sims = [positive, negative_1, ...]`` the loss is ``CE(scale * sims, target 0)``:
ln(k) at scale 0 for k candidates, whatever the similarities, and ln(k) at every scale when they are equal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

# Similarity profiles [positive, negatives...] plotted when the user gives none.
DEFAULT_PROFILES: dict[str, tuple[float, ...]] = {
    # the positive is far above every negative: the loss falls to 0 as the scale grows
    "confident": (0.78, 0.08, 0.06, 0.06),
    # the positive barely wins: the loss falls slowly, a high scale is needed to separate it
    "slightly_above": (0.55, 0.50, 0.48, 0.45),
    # the positive barely loses to a negative: the loss grows (slowly) with the scale
    "slightly_below": (0.45, 0.50, 0.48, 0.40),
    # a negative is far above the positive: the loss grows about linearly with the scale
    "bad": (0.10, 0.70, 0.65, 0.60),
}

_GRID_TOLERANCE = 1e-9


def parse_scales(text: str) -> list[float]:
    """Parse ``a:b`` (step 1), ``a:b:step`` (end inclusive when on the grid) or ``s1,s2,...``."""
    text = text.strip()
    if ":" in text:
        parts = [float(p) for p in text.split(":")]
        if len(parts) not in (2, 3):
            raise ValueError(f"scale range must be a:b or a:b:step, got {text!r}")
        start, stop, step = parts if len(parts) == 3 else (*parts, 1.0)
        if step <= 0 or stop < start:
            raise ValueError(f"scale range {text!r} needs step > 0 and b >= a")
        count = int(np.floor((stop - start) / step + _GRID_TOLERANCE)) + 1
        scales = np.round(start + step * np.arange(count), 12).tolist()  # 0.3, not 0.30000000000000004
    else:
        scales = [float(p) for p in text.split(",") if p.strip()]
    if not scales:
        raise ValueError(f"no scale in {text!r}")
    bad = [s for s in scales if not np.isfinite(s) or s < 0]
    if bad:
        raise ValueError(f"scales must be finite and >= 0 (scale = 1/temperature), got {bad}")
    return scales


def parse_similarities(text: str) -> list[float]:
    """Parse ``positive,negative_1,...`` (at least one negative)."""
    sims = [float(p) for p in text.split(",") if p.strip()]
    if len(sims) < 2 or not np.all(np.isfinite(sims)):
        raise ValueError(f"need finite similarities 'positive,negative[,...]', got {text!r}")
    return sims


def loss_vs_scale(similarities: Sequence[float], scales: Sequence[float]) -> pd.DataFrame:
    """Loss and its gradient w.r.t. each similarity (``grad_i``) at each scale.

    Returns columns ``scale, loss, grad_0 .. grad_{k-1}``; ``grad_0`` is d loss / d positive similarity.
    """
    scale = torch.tensor(list(scales), dtype=torch.float64)
    # one independent copy of the similarities per scale, so each row gets its own gradient
    sims = torch.tensor(list(similarities), dtype=torch.float64).repeat(len(scale), 1).requires_grad_()
    target = torch.zeros(len(scale), dtype=torch.long)
    loss = F.cross_entropy(scale[:, None] * sims, target, reduction="none")
    loss.sum().backward()
    assert sims.grad is not None  # set by backward()
    grads = sims.grad.numpy() + 0.0  # turns -0.0 (scale 0) into 0.0
    columns = {"scale": scale.numpy(), "loss": loss.detach().numpy()}
    return pd.DataFrame(columns | {f"grad_{i}": grads[:, i] for i in range(grads.shape[1])})


def profile_label(similarities: Sequence[float]) -> str:
    """The profile name used in tables and legends: the similarities joined by commas."""
    return ",".join(f"{s:g}" for s in similarities)


def loss_table(profiles: Mapping[str, Sequence[float]], scales: Sequence[float]) -> pd.DataFrame:
    """``loss_vs_scale`` for each named profile, stacked with a leading ``profile`` column.

    Gradient columns are NaN where a profile has fewer similarities than the longest one.
    """
    tables = [loss_vs_scale(sims, scales).assign(profile=name) for name, sims in profiles.items()]
    table = pd.concat(tables, ignore_index=True)
    return table[["profile", *table.columns.drop("profile")]]


def gradient_long(table: pd.DataFrame) -> pd.DataFrame:
    """Gradients of a ``loss_table`` in long format: ``profile, scale, index, grad`` (0 = positive)."""
    long = table.drop(columns="loss").melt(id_vars=["profile", "scale"], var_name="index", value_name="grad")
    long["index"] = long["index"].str.removeprefix("grad_").astype(int)
    return long.dropna(subset=["grad"]).reset_index(drop=True)

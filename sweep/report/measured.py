"""MNRL loss vs scale on real training batches: the similarity profiles a model actually produces.

For a batch of B (anchor, positive[, negative]) rows, anchor i's candidates are every positive of the batch
(its own is the target) and every hard negative, as in MultipleNegativesRankingLoss:

.. math::
    \\mathcal{L}(s) = \\frac{1}{B} \\sum_i -\\log
    \\frac{e^{s \\cos(a_i, p_i)}}{\\sum_j e^{s \\cos(a_i, p_j)} + \\sum_j e^{s \\cos(a_i, n_j)}}

so the curve shows what the loss does on this dataset under the base model (or a trained one), next to the
analytic single-anchor profiles of ``sweep.report.loss_curves``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from sweep.config import compose_config, eval_batch_size
from sweep.errors import ConfigError


@dataclass(frozen=True)
class MeasuredBatches:
    """Cosine similarities of real batches: ``similarities[k]`` is batch k's (B, C) anchor x candidate matrix,
    the target of anchor i being candidate i."""

    label: str
    similarities: list[torch.Tensor]

    def summary(self) -> dict[str, float]:
        """Mean cosine of the anchors' positives and of their other candidates."""
        positives = torch.cat([s.diagonal() for s in self.similarities])
        others = torch.cat([s[~torch.eye(*s.shape, dtype=torch.bool)] for s in self.similarities])
        return {"positive": float(positives.mean()), "candidates": float(others.mean())}


def measure_batches(overrides: Sequence[str], model_path: str | None, batches: int, batch_size: int) -> MeasuredBatches:
    """Encode ``batches`` seeded random batches of the configured training data (Hydra ``overrides`` of the
    project config, e.g. ``data=nli_stsb``) with the configured base model, or the SentenceTransformer saved at
    ``model_path``."""
    # imported here: sentence-transformers and datasets are slow to import; the loss table needs neither
    from sentence_transformers import SentenceTransformer

    from sweep.inputs import build_model, load_split

    cfg = compose_config(overrides)
    columns = list(cfg.data.train.columns)
    if len(columns) < 2 or "score" in columns:
        raise ConfigError(
            "data.train.columns", columns, "measured MNRL profiles need (anchor, positive[, negative]) text columns"
        )
    train = load_split(cfg.data, "train")
    rows = batches * batch_size
    if rows > len(train):
        raise ConfigError("--batches", batches, f"{batches} x {batch_size} rows exceed the {len(train)} training rows")
    train = train.shuffle(seed=cfg.data.seed).select(range(rows))
    model = (
        SentenceTransformer(model_path, device="cpu")
        if model_path
        else build_model(cfg.model, seed=cfg.trial.seed, device="cpu")
    )
    encoded = {
        column: F.normalize(
            model.encode(
                train[column],
                batch_size=eval_batch_size(cfg.trial, cfg.model.kind),
                convert_to_tensor=True,
                show_progress_bar=False,
            ).float(),
            dim=-1,
        )
        for column in columns
    }
    anchors, candidates = encoded[columns[0]], [encoded[c] for c in columns[1:]]
    similarities = [
        anchors[k * batch_size : (k + 1) * batch_size]
        @ torch.cat([c[k * batch_size : (k + 1) * batch_size] for c in candidates]).T
        for k in range(batches)
    ]
    source = Path(model_path).name if model_path else f"base {Path(cfg.model.name_or_path).name} {cfg.model.kind}"
    label = f"measured: {source}, {batches} x {batch_size} {'/'.join(columns)}"  # short enough for a legend
    return MeasuredBatches(label, similarities)


def measured_loss_table(measured: MeasuredBatches, scales: Sequence[float]) -> pd.DataFrame:
    """Columns ``profile, scale, loss``: the mean MNRL loss over every anchor of the measured batches."""
    rows = []
    for scale in scales:
        losses = [F.cross_entropy(scale * s.double(), torch.arange(len(s))) for s in measured.similarities]
        rows.append(
            {"profile": measured.label, "scale": float(scale), "loss": float(np.mean([float(x) for x in losses]))}
        )
    return pd.DataFrame(rows)

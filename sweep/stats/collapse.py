"""Collapse: a model whose embeddings all point the same way, so that every evaluation pair gets (nearly) the same
cosine and no ranking of pairs can be read from them.

Definition: the cosines a model gives the STSB validation pairs are *collapsed* when their standard deviation is below
`COLLAPSE_STD` (constant cosines, whose Spearman correlation is undefined, included) or when one of them is not
finite. Healthy models spread far wider, trained or not: measured on 300 STSB validation pairs, a random 2-layer BERT
(`model=tiny_bert`) 0.020, MiniLM's first layer 0.064, the static CPU model 0.11; all-MiniLM-L6-v2 trained at the
static model's learning rate 0.05 gives every pair the cosine 1.0 up to float32 rounding (a spread near 1e-7). A
collapsed trial's Spearman is noise (e.g. 0.004), not a score: the trial is flagged, never kept as the study's best
(`sweep.training.kept_models`) and left out of the paired comparison (`sweep.stats.bootstrap`).
"""

from __future__ import annotations

import numpy as np

COLLAPSE_STD = 1e-4  # two orders below the narrowest healthy spread measured (0.020), far above float32 noise


def collapse_reason(cosines: np.ndarray) -> str | None:
    """Why ``cosines`` (one model's cosine per evaluation pair) are collapsed, or None when they are not."""
    cosines = np.asarray(cosines, dtype=np.float64)
    if not np.isfinite(cosines).all():
        return "a cosine is not finite"
    spread = float(cosines.std())
    if spread < COLLAPSE_STD:
        return f"cosine std {spread:.1e} < {COLLAPSE_STD:g}: every pair scores about {cosines.mean():.4f}"
    return None

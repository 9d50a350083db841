"""Item 7: the GPU row, which says why the GPU comparison was not measured."""

from __future__ import annotations

from sweep.bench.table import Row


def gpu_rows() -> list[Row]:
    """Item 7: the GPU comparison needs a GPU; without one the row says so."""
    import torch  # a slow import: only when this item runs

    if torch.cuda.is_available():
        note = "not measured by this benchmark yet: run items 1-3 with trial.device=cuda"
    else:
        note = "skipped: no GPU on this machine (torch.cuda.is_available() is False)"
    return [Row("7", "GPU (preset=gpu)", "-", "-", None, "", note, status="skipped")]

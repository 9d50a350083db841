"""Item 7: the GPU row, which says why the GPU comparison was not measured."""

from __future__ import annotations

from benchmarks.table import Row


def gpu_rows() -> list[Row]:
    """Item 7: the GPU comparison needs a GPU; without one the row says so."""
    import torch  # a slow import: only when this item runs

    if torch.cuda.is_available():
        note = "measured by its own command: python -m benchmarks.gpu_check --out DIR --reference-trials CSV"
    else:
        note = "skipped: no GPU on this machine (torch.cuda.is_available() is False)"
    return [Row("7", "GPU (preset=gpu)", "-", "-", None, "", note, status="skipped")]

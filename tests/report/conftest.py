"""Fixtures shared by the report tests."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from matplotlib.figure import Figure

from sweep.report import (
    convergence_figures,
    factor_figures,
    gap_figures,
    grid_figures,
    history_figures,
    loss_figures,
    mechanism_figures,
    scale_figures,
    schedule_figures,
)


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Figure]:
    """The figures the writers would save, by stem (nothing is written)."""
    figures: dict[str, Figure] = {}

    def save(fig: Figure, data: pd.DataFrame, out_dir: Path, stem: str, compress: bool = False) -> list[Path]:
        figures[stem] = fig
        return [out_dir / f"{stem}.png"]

    modules = (
        scale_figures,
        history_figures,
        grid_figures,
        loss_figures,
        mechanism_figures,
        convergence_figures,
        schedule_figures,
        factor_figures,
        gap_figures,
    )
    for module in modules:
        monkeypatch.setattr(module, "save_figure", save)
    return figures

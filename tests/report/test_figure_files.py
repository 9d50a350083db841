"""What `sweep.report.axes.save_figure` writes: a palette PNG at the resolution a page needs, under
`MAX_PNG_BYTES` even for a figure of many panels, the same bytes for the same figure, and its CSV (gzipped when
asked)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib import colors
from PIL import Image

from sweep.report import axes
from sweep.report.axes import COLUMN_SIZE, DPI, MIN_DPI, new_figure, png_bytes, save_figure
from sweep.report.results_folder import read_csv, table_path

DATA = pd.DataFrame({"scale": [1.0, 10.0, 20.0], "mean": [0.5, 0.73, 0.72]})


def line_figure():
    fig = new_figure()
    fig.add_subplot().plot(DATA["scale"], DATA["mean"], marker="o", label="validation")
    return fig


def test_a_column_figure_is_a_small_palette_png_at_the_page_resolution(tmp_path: Path) -> None:
    png, csv = save_figure(line_figure(), DATA, tmp_path, "curve")
    image = Image.open(png)
    assert image.mode == "P" and round(image.info["dpi"][0]) == DPI
    assert image.width <= COLUMN_SIZE[0] * DPI * 1.05 and png.stat().st_size < 40_000
    pd.testing.assert_frame_equal(read_csv(csv), DATA)
    again = save_figure(line_figure(), DATA, tmp_path / "again", "curve")[0]
    assert again.read_bytes() == png.read_bytes()  # a redraw leaves git nothing to commit


def test_a_figure_over_the_limit_drops_resolution_to_stay_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six panels of noisy lines under a limit they exceed at `DPI` (the limit lowered: the same rule as a figure of
    many panels under the real one)."""
    fig = new_figure(7.0, 5.0)
    rng = np.random.default_rng(0)
    for index in range(1, 7):
        fig.add_subplot(2, 3, index).plot(rng.normal(size=(200, 8)).cumsum(axis=0))
    full = len(png_bytes(fig, DPI))
    monkeypatch.setattr(axes, "MAX_PNG_BYTES", full // 2)
    png = save_figure(fig, DATA, tmp_path, "panels")[0]
    with Image.open(png) as image:
        assert png.stat().st_size <= full // 2 and MIN_DPI <= image.info["dpi"][0] < DPI


def test_a_long_table_is_written_gzipped_and_found_by_its_stem(tmp_path: Path) -> None:
    paths = save_figure(line_figure(), DATA, tmp_path, "train_loss_curves", compress=True)
    assert [p.name for p in paths] == ["train_loss_curves.png", "train_loss_curves.csv.gz"]
    assert table_path(tmp_path, "train_loss_curves") == paths[1] and table_path(tmp_path, "other").name == "other.csv"
    pd.testing.assert_frame_equal(read_csv(paths[1]), DATA)


def test_a_rare_line_colour_keeps_its_hue_beside_a_colour_map_and_text(tmp_path: Path) -> None:
    """Ten short lines of the colour cycle, few pixels each, beside a colour map and grey text that take most of the
    pixels: each line's colour stays near its own in the palette."""
    fig = new_figure(7.0, 3.0)
    left, right = fig.subplots(1, 2)
    left.imshow(np.linspace(0, 1, 40_000).reshape(200, 200), cmap="viridis")
    for index in range(10):
        right.plot([0, 0.05], [index, index], color=f"C{index}", linewidth=0.8)
    for index in range(40):
        right.text(0.1, index / 4, "anti-aliased grey text " * 3, fontsize=5, color="0.3")
    image = Image.open(save_figure(fig, DATA, tmp_path, "colours")[0])
    palette = np.array(image.getpalette()).reshape(-1, 3)
    for index in range(10):
        wanted = np.array(colors.to_rgb(f"C{index}")) * 255
        assert np.linalg.norm(palette - wanted, axis=1).min() < 30, f"C{index}"

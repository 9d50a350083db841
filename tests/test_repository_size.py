"""The repository stays light (issue 49): its tracked files total at most 12 MB, and no tracked PNG exceeds the
150 KB a page needs (`sweep.report.axes.MAX_PNG_BYTES`, what the product's figures are saved under).

A clone, a CI checkout and the tree a lent GPU machine receives (`benchmarks/gpu_kit`, 64 MiB with its kit) all
carry every tracked file. What a command regenerates in seconds from tracked files is not tracked: the figures of
`research/results/` other than those a README names (`research/results/README.md`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sweep.report.axes import MAX_PNG_BYTES

ROOT = Path(__file__).resolve().parents[1]
MAX_TRACKED_BYTES = 12_000_000  # `git ls-files -z | xargs -0 du -cb | tail -1`


def tracked_files() -> list[Path]:
    """Every tracked file present in the working tree; skips the test outside a git checkout."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout (or no git command): the tracked files cannot be listed")
    paths = [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    return [path for path in paths if path.is_file()]


def largest(paths: list[Path], count: int = 8) -> str:
    """The ``count`` largest of ``paths``, with their sizes: where to look first."""
    ranked = sorted(paths, key=lambda path: path.stat().st_size, reverse=True)[:count]
    return ", ".join(f"{path.relative_to(ROOT)} {path.stat().st_size / 1e3:,.0f} KB" for path in ranked)


def test_tracked_files_total_at_most_12_mb() -> None:
    files = tracked_files()
    total = sum(path.stat().st_size for path in files)
    assert total <= MAX_TRACKED_BYTES, f"tracked files total {total / 1e6:.2f} MB > 12 MB; largest: {largest(files)}"


def test_no_tracked_png_exceeds_what_a_page_needs() -> None:
    pngs = [path for path in tracked_files() if path.suffix == ".png"]
    over = [path for path in pngs if path.stat().st_size > MAX_PNG_BYTES]
    assert not over, f"PNGs over {MAX_PNG_BYTES / 1e3:.0f} KB (redraw them with the product): {largest(over)}"

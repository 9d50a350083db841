"""What this repository's notebooks call: redraw the figures a section shows of one folder of ``results/`` from its
shipped CSVs (``SWEEP_ALL_FIGURES=1``: every figure of the folder), or with ``SWEEP_TRACKING_URI`` a live study from
MLflow, and say what its paired comparison found (or why there is none). Each figure takes a second or more to draw,
so a notebook draws the ones its text discusses (`research/tests/test_notebooks.py`: every figure a README names
among them), which keeps each notebook to seconds.

Research code beside the notebooks, not part of the ``sweep`` package: it names this repository's
``research/results/`` and calls the package's public face (`sweep.report.redraw_results_folder`,
`sweep.report.write_live_study`).

Where figures go: ``$SWEEP_FIGURES_DIR/<name>`` when set (a relative path is taken from the repository root, so
``SWEEP_FIGURES_DIR=research/results`` regenerates the published folders), otherwise ``sweep_runs/figures/<name>``
beside the repository (ignored by git): a notebook never writes into the tracked ``research/results/`` unless asked.

Offline, the paired comparison is the folder's shipped ``paired_comparison.csv`` (read, not recomputed: seconds);
``SWEEP_RECOMPUTE=1`` recomputes it from the shipped ``predictions.npz`` as ``python -m sweep.report study
--from-csv`` does (the bootstrap: minutes). ``research/tests/test_notebooks.py`` checks that the recomputed
comparisons equal the shipped ones.

Live mode draws each section's own experiment (the section's name); ``SWEEP_EXPERIMENT=NAME`` draws that one study
instead, once, in the first section that runs, and the other sections say they were skipped.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from sweep.errors import ConfigError, SweepError
from sweep.report import redraw_results_folder

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "research" / "results"
FIGURES = ROOT / "sweep_runs" / "figures"
_skipped: dict[str, str] = {}  # section name -> why live mode drew nothing there
_drawn: set[str] = set()  # experiments live mode has drawn in this kernel


class Refusal(Exception):
    """A bad setting of the notebook's environment (a tracking URI with no database behind it, a study it does not
    hold): IPython shows its one line, naming the setting and the fix, instead of a traceback."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook for an exception's own rendering
        return [f"sweep: {self}"]


def _live() -> str | None:
    return os.environ.get("SWEEP_TRACKING_URI")


def output_dir(name: str) -> Path:
    """Where the notebook writes study ``name`` (see the module docstring)."""
    chosen = os.environ.get("SWEEP_FIGURES_DIR")
    return (ROOT / chosen if chosen else FIGURES) / name


def _switched_on(variable: str) -> bool:
    return os.environ.get(variable, "") not in ("", "0")


def regenerate(name: str, figures: Sequence[str], untrained_from: str | None = None) -> list[Path]:
    """Redraw the ``figures`` (stems) of ``results/name`` from its CSVs into ``output_dir(name)``, with the folder's
    tables and findings; in live mode draw the study from MLflow."""
    uri = _live()
    if not uri:
        sibling = RESULTS / untrained_from if untrained_from else None
        drawn = None if _switched_on("SWEEP_ALL_FIGURES") else figures
        recompute = _switched_on("SWEEP_RECOMPUTE")
        return redraw_results_folder(RESULTS / name, output_dir(name), sibling, recompute=recompute, figures=drawn)
    from sweep.report import write_live_study  # mlflow: only for a live database

    experiment = os.environ.get("SWEEP_EXPERIMENT", name)
    if experiment in _drawn:
        _skipped[name] = f"skipped: live mode draws SWEEP_EXPERIMENT={experiment} once, in its first section"
        return []
    try:
        written = write_live_study(uri, output_dir(experiment), experiment=experiment)
    except SweepError as error:  # raised before anything is written: no database or folder is created
        detail = error.allowed if isinstance(error, ConfigError) else str(error)
        raise Refusal(f"SWEEP_TRACKING_URI={uri}, SWEEP_EXPERIMENT={experiment}: {detail}") from None
    _drawn.add(experiment)
    return written


def paired_line(name: str) -> str:
    """The paired comparison's summary line(s) of the study drawn in section ``name``, or why there are none."""
    if name in _skipped:
        return _skipped[name]
    study = os.environ.get("SWEEP_EXPERIMENT", name) if _live() else name
    paired = output_dir(study) / "paired_comparison.md"
    if paired.exists():
        return paired.read_text().split("\n\n")[0]
    if _live():
        return "no paired comparison: fewer than two scales have COMPLETE trials with logged per-pair predictions"
    return "no paired comparison: this study logged no per-pair predictions"


def figures(paths: list[Path]) -> list[Path]:
    """The PNGs among written paths, to display."""
    return [path for path in paths if path.suffix == ".png"]

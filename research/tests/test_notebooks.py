"""The notebooks rebuild every figure of ``research/results/`` offline from the shipped CSVs: each runs top to bottom
(nbclient) into a temporary folder, its CSVs equal those in ``research/results/``, each figure is followed by its
interpretation, and the stored copies carry no outputs (small enough to read in a diff). The paired comparisons the
notebooks read from the folders are recomputed here from the shipped predictions (the bootstrap the notebooks skip)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbclient import NotebookClient

from sweep.report.folder_comparison import folder_comparison
from sweep.report.paired_table import write_paired_comparison
from sweep.report.results_folder import PAIRED_TEST_CSV, load_results_folder, read_csv

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "research" / "results"
NOTEBOOKS = sorted((ROOT / "research" / "notebooks").glob("*.ipynb"))
PAIRED = sorted(RESULTS.glob("*/paired_comparison.csv"))


def has_figure(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and any("image/png" in o.get("data", {}) for o in cell.outputs)


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, nbformat.NotebookNode]]:
    """Every notebook executed with ``SWEEP_FIGURES_DIR`` pointing at one temporary folder: the folder and the
    executed notebooks, by name."""
    out = tmp_path_factory.mktemp("figures")
    executed = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SWEEP_FIGURES_DIR", str(out))
        for name in ("SWEEP_TRACKING_URI", "SWEEP_EXPERIMENT", "SWEEP_RECOMPUTE"):
            patch.delenv(name, raising=False)
        for path in NOTEBOOKS:
            notebook = nbformat.read(path, as_version=4)
            NotebookClient(
                notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
            ).execute()
            executed[path.stem] = notebook
    return out, executed


def test_notebooks_rebuild_every_results_figure(rebuilt: tuple[Path, dict]) -> None:
    """Every figure a folder keeps (those its README names; all of them where redrawn in place) is rebuilt, and every
    rebuilt figure draws a table the folder ships (the untracked figures are redrawn from it)."""
    out, _ = rebuilt
    published = {p.relative_to(RESULTS) for p in RESULTS.glob("*/*.png")}
    drawn = {p.relative_to(out) for p in out.glob("*/*.png")}
    assert published and published <= drawn
    tables = {p.relative_to(RESULTS).parent / p.name.split(".")[0] for p in RESULTS.glob("*/*.csv*")}
    assert {p.with_suffix("") for p in drawn} <= tables
    assert not list(out.glob("*/*.svg")), "one image format per figure"


def test_rebuilt_csvs_equal_the_published_ones(rebuilt: tuple[Path, dict]) -> None:
    """Each table the notebooks write (``.csv``, or ``.csv.gz`` for a long one) equals the folder's of that name."""
    out, _ = rebuilt
    csvs = sorted([*out.glob("*/*.csv"), *out.glob("*/*.csv.gz")])
    assert len(csvs) >= len(list(out.glob("*/*.png")))
    for path in csvs:
        published = RESULTS / path.relative_to(out)
        pd.testing.assert_frame_equal(read_csv(path), read_csv(published), check_dtype=False, obj=str(published))


@pytest.mark.parametrize("name", [p.stem for p in NOTEBOOKS])
def test_each_figure_is_followed_by_its_interpretation(rebuilt: tuple[Path, dict], name: str) -> None:
    cells = rebuilt[1][name].cells
    assert any(has_figure(cell) for cell in cells), "no figure in the executed notebook"
    for index, cell in enumerate(cells):
        if has_figure(cell):
            following = cells[index + 1] if index + 1 < len(cells) else None
            assert following is not None and following.cell_type == "markdown", "interpret each figure below it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    """Outputs (embedded PNGs: 15 MB for scale_sweeps alone) are rebuilt by running the notebook, not stored."""
    code = [cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
    stored = [i for i, cell in enumerate(code) if cell.outputs or cell.execution_count or "execution" in cell.metadata]
    assert code and not stored, (
        f"{path.name}: code cells {stored} carry outputs; clear them before committing "
        "(Jupyter: Edit > Clear Outputs of All Cells, or `nbstripout`)"
    )


@pytest.mark.parametrize("published", PAIRED, ids=[p.parent.name for p in PAIRED])
def test_shipped_paired_comparisons_recompute_from_the_shipped_predictions(published: Path, tmp_path: Path) -> None:
    """What the notebooks read instead of recomputing: each folder's paired comparison, from its per-pair
    predictions (the bootstrap) or, for a folder without them, from the per-seed Spearman of ``trials.csv``."""
    validation, test, lines = folder_comparison(load_results_folder(published.parent))
    written = write_paired_comparison(validation, lines, tmp_path, test)
    assert written
    for path in written:
        shipped = published.parent / path.name
        if path.suffix == ".csv":
            pd.testing.assert_frame_equal(read_csv(path), read_csv(shipped), check_dtype=False, obj=str(shipped))
        else:
            assert path.read_text() == shipped.read_text(), shipped
    assert (tmp_path / PAIRED_TEST_CSV).exists() == (published.parent / PAIRED_TEST_CSV).exists()

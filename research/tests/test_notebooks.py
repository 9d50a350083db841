"""The notebooks rebuild every figure of ``research/results/`` offline from the shipped CSVs: each runs top to bottom
(nbclient) into a temporary folder, its CSVs equal those in ``research/results/``, each figure is followed by its
interpretation, an executed notebook and what it wrote stay under `MAX_WRITTEN_BYTES` with no warning saved in it,
and the stored copies carry no outputs (small enough to read in a diff) and every cell's id. The paired comparisons
the notebooks read from the folders are recomputed here from the shipped predictions (the bootstrap the notebooks
skip). Nothing here is timed (issue 53 measured them: seconds each, on this repository's 2-core machine)."""

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
# a notebook draws the figures its text discusses, at page size (`sweep.report.axes`): its executed copy (every figure
# embedded once) and the files it wrote (figures, their tables, the folders' findings) stay under this
MAX_WRITTEN_BYTES = 5_000_000


def has_figure(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and any("image/png" in o.get("data", {}) for o in cell.outputs)


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, nbformat.NotebookNode], dict[str, int]]:
    """Every notebook executed with ``SWEEP_FIGURES_DIR`` pointing at one temporary folder: the folder, the
    executed notebooks and the bytes each wrote there (no two notebooks draw the same folder), by name."""
    out = tmp_path_factory.mktemp("figures")
    executed, written = {}, {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SWEEP_FIGURES_DIR", str(out))
        for name in ("SWEEP_TRACKING_URI", "SWEEP_EXPERIMENT", "SWEEP_RECOMPUTE", "SWEEP_ALL_FIGURES"):
            patch.delenv(name, raising=False)
        for path in NOTEBOOKS:
            notebook = nbformat.read(path, as_version=4)
            before = folder_bytes(out)
            NotebookClient(
                notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
            ).execute()
            executed[path.stem] = notebook
            written[path.stem] = folder_bytes(out) - before
    return out, executed, written


def test_notebooks_rebuild_every_results_figure(rebuilt: tuple[Path, dict, dict]) -> None:
    """Every figure a folder keeps (those its README names) is rebuilt, and every rebuilt figure draws a table the
    folder ships (the untracked figures are redrawn from it)."""
    out, _, _ = rebuilt
    published = {p.relative_to(RESULTS) for p in RESULTS.glob("*/*.png")}
    drawn = {p.relative_to(out) for p in out.glob("*/*.png")}
    assert published and published <= drawn
    tables = {p.relative_to(RESULTS).parent / p.name.split(".")[0] for p in RESULTS.glob("*/*.csv*")}
    assert {p.with_suffix("") for p in drawn} <= tables
    assert not list(out.glob("*/*.svg")), "one image format per figure"


def test_rebuilt_csvs_equal_the_published_ones(rebuilt: tuple[Path, dict, dict]) -> None:
    """Each table the notebooks write (``.csv``, or ``.csv.gz`` for a long one) equals the folder's of that name."""
    out, _, _ = rebuilt
    csvs = sorted([*out.glob("*/*.csv"), *out.glob("*/*.csv.gz")])
    assert len(csvs) >= len(list(out.glob("*/*.png")))
    for path in csvs:
        published = RESULTS / path.relative_to(out)
        pd.testing.assert_frame_equal(read_csv(path), read_csv(published), check_dtype=False, obj=str(published))


@pytest.mark.parametrize("name", [p.stem for p in NOTEBOOKS])
def test_a_notebook_writes_a_few_megabytes_and_saves_no_warning(rebuilt: tuple[Path, dict, dict], name: str) -> None:
    """Before, one notebook redrew every figure of 20 folders: 142 PNGs (47 MB) and a 34 MB executed copy holding
    tqdm's "IProgress not found" warning (ipywidgets was missing from the extra)."""
    _, executed, written = rebuilt
    notebook = executed[name]
    size = len(nbformat.writes(notebook).encode())
    assert size + written[name] <= MAX_WRITTEN_BYTES, f"{name}: executed copy {size} B + files {written[name]} B"
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    saved = [output.get("text", "") for output in outputs if output.get("name") == "stderr"]
    saved += [output.get("ename", "") for output in outputs if output.output_type == "error"]
    assert not saved, f"{name}: {saved}"
    assert not any("Warning" in str(output.get("text", "")) for output in outputs)


@pytest.mark.parametrize("name", [p.stem for p in NOTEBOOKS])
def test_each_figure_is_followed_by_its_interpretation(rebuilt: tuple[Path, dict, dict], name: str) -> None:
    cells = rebuilt[1][name].cells
    assert any(has_figure(cell) for cell in cells), "no figure in the executed notebook"
    for index, cell in enumerate(cells):
        if has_figure(cell):
            following = cells[index + 1] if index + 1 < len(cells) else None
            assert following is not None and following.cell_type == "markdown", "interpret each figure below it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    """Outputs (embedded PNGs: megabytes) are rebuilt by running the notebook, not stored; every cell has its id
    (nbformat 4.5: without one, each read warns "MissingIDFieldWarning")."""
    stored = nbformat.read(path, as_version=4)
    assert (stored.nbformat, stored.nbformat_minor) >= (4, 5) and all(cell.get("id") for cell in stored.cells)
    code = [cell for cell in stored.cells if cell.cell_type == "code"]
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

"""The notebooks rebuild every figure of ``results/`` offline from the shipped CSVs: each runs top to bottom
(nbclient) into a temporary folder, its CSVs equal those in ``results/``, and the stored copies carry outputs."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbclient import NotebookClient

from sweep.report.results_folder import read_csv

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every notebook executed with ``SWEEP_FIGURES_DIR`` pointing at one temporary folder."""
    out = tmp_path_factory.mktemp("figures")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SWEEP_FIGURES_DIR", str(out))
        patch.delenv("SWEEP_TRACKING_URI", raising=False)
        for path in NOTEBOOKS:
            notebook = nbformat.read(path, as_version=4)
            NotebookClient(
                notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
            ).execute()
    return out


def test_notebooks_rebuild_every_results_figure(rebuilt: Path) -> None:
    published = {p.relative_to(RESULTS) for p in RESULTS.glob("*/*.png")}
    pngs = list(rebuilt.glob("*/*.png"))
    assert published and published == {p.relative_to(rebuilt) for p in pngs}


def test_rebuilt_csvs_equal_the_published_ones(rebuilt: Path) -> None:
    csvs = sorted(rebuilt.glob("*/*.csv"))
    assert len(csvs) >= len(list(RESULTS.glob("*/*.png")))
    for path in csvs:
        published = RESULTS / path.relative_to(rebuilt)
        pd.testing.assert_frame_equal(read_csv(path), read_csv(published), check_dtype=False, obj=str(published))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_with_outputs_and_interpretation(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "store the notebook executed"
    images = [o for cell in code for o in cell.outputs if "image/png" in o.get("data", {})]
    assert images, "no figure in the stored outputs"
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code" and any("image/png" in o.get("data", {}) for o in cell.outputs):
            following = notebook.cells[index + 1] if index + 1 < len(notebook.cells) else None
            assert following is not None and following.cell_type == "markdown", "interpret each figure below it"
    assert "/work/" not in nbformat.writes(notebook), "no machine paths in stored outputs"

"""The notebooks' helper (``notebooks/redraw.py``, research code beside them): a study drawn from MLflow goes
outside the tracked
research/results/, once, with its paired comparison, and the other sections say they were skipped instead
of redrawing the same study into their folders; offline, figures go to sweep_runs/figures unless SWEEP_FIGURES_DIR
says otherwise."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers import run_study

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def notebook(monkeypatch: pytest.MonkeyPatch):
    """``notebooks/redraw.py`` as the notebooks import it (their folder on the path), with a fresh live-mode state."""
    monkeypatch.syspath_prepend(str(ROOT / "research" / "notebooks"))
    import redraw

    monkeypatch.setattr(redraw, "_drawn", set())
    monkeypatch.setattr(redraw, "_skipped", {})
    yield redraw
    sys.modules.pop("redraw", None)


def test_live_mode_draws_the_named_study_once_outside_results_with_its_paired_line(
    notebook, compose_cfg, tmp_path, monkeypatch
):
    cfg = compose_cfg("+study.search_space.loss.scale=[1,20]", "name=live_notebook")
    run_study(cfg)
    live = tmp_path / "figures"
    monkeypatch.setattr(notebook, "FIGURES", live)
    monkeypatch.delenv("SWEEP_FIGURES_DIR", raising=False)
    monkeypatch.setenv("SWEEP_TRACKING_URI", cfg.tracking.uri)
    monkeypatch.setenv("SWEEP_EXPERIMENT", "live_notebook")

    drawn = notebook.regenerate("mnrl_scale", ["spearman_vs_scale"])
    assert drawn and all(Path(p).is_relative_to(live / "live_notebook") for p in drawn)
    assert {"spearman_vs_scale.png", "paired_comparison.md"} <= {Path(p).name for p in drawn}
    assert notebook.paired_line("mnrl_scale").startswith("- STSB validation Spearman: best scale ")

    assert notebook.regenerate("mnrl_scale_lr", ["spearman_vs_scale"]) == []  # not drawn a second time
    assert notebook.paired_line("mnrl_scale_lr").startswith("skipped: live mode draws SWEEP_EXPERIMENT=live_notebook")
    assert sorted(p.name for p in live.iterdir()) == ["live_notebook"]


def test_offline_mode_says_when_a_shipped_study_has_no_paired_comparison(notebook, tmp_path, monkeypatch):
    monkeypatch.delenv("SWEEP_TRACKING_URI", raising=False)
    monkeypatch.setenv("SWEEP_FIGURES_DIR", str(tmp_path))
    assert notebook.paired_line("no_such_study") == "no paired comparison: this study logged no per-pair predictions"
    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "paired_comparison.md").write_text("- the line\n\n| table |\n")
    assert notebook.paired_line("study") == "- the line"


def test_offline_figures_go_outside_the_tracked_results_unless_asked(notebook, monkeypatch):
    """The notebooks used to rewrite the tracked research/results/ on every run; now only
    SWEEP_FIGURES_DIR=research/results does."""
    monkeypatch.delenv("SWEEP_TRACKING_URI", raising=False)
    monkeypatch.delenv("SWEEP_FIGURES_DIR", raising=False)
    assert notebook.output_dir("mnrl_scale") == ROOT / "sweep_runs" / "figures" / "mnrl_scale"
    monkeypatch.setenv("SWEEP_FIGURES_DIR", "research/results")  # relative: from the repository root
    assert notebook.output_dir("mnrl_scale") == ROOT / "research" / "results" / "mnrl_scale"


@pytest.mark.parametrize("store", ["missing database", "unknown experiment"])
def test_a_bad_live_setting_is_one_line_in_the_notebook_and_creates_nothing(
    notebook, compose_cfg, tmp_path, monkeypatch, store
):
    """Issue 52: with SWEEP_TRACKING_URI naming a database that does not exist, the notebook showed a traceback
    (and before that created the database); IPython now shows the refusal's one line (`_render_traceback_`)."""
    monkeypatch.setattr(notebook, "FIGURES", tmp_path / "figures")
    monkeypatch.delenv("SWEEP_FIGURES_DIR", raising=False)
    if store == "missing database":
        uri = f"sqlite:///{tmp_path / 'nowhere' / 'mlflow.db'}"
    else:
        cfg = compose_cfg("+study.search_space.loss.scale=[1,20]", "name=live_notebook")
        run_study(cfg)
        uri = cfg.tracking.uri
    monkeypatch.setenv("SWEEP_TRACKING_URI", uri)
    monkeypatch.setenv("SWEEP_EXPERIMENT", "no_such_study")
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(notebook.Refusal) as refusal:
        notebook.regenerate("mnrl_scale", ["spearman_vs_scale"])
    lines = refusal.value._render_traceback_()
    assert len(lines) == 1 and lines[0].startswith(f"sweep: SWEEP_TRACKING_URI={uri}, SWEEP_EXPERIMENT=no_such_study: ")
    assert ("no such database" if store == "missing database" else "no MLflow experiment named") in lines[0]
    assert sorted(tmp_path.rglob("*")) == before, "nothing created"

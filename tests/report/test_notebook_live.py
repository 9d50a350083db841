"""The notebooks' live mode: a study drawn from MLflow goes outside the tracked results/, once, with its paired
comparison; the other sections say they were skipped instead of redrawing the same study into their folders."""

from __future__ import annotations

from pathlib import Path

from sweep.report import notebook
from tests.helpers import run_study


def test_live_mode_draws_the_named_study_once_outside_results_with_its_paired_line(compose_cfg, tmp_path, monkeypatch):
    cfg = compose_cfg("+study.search_space.loss.scale=[1,20]", "name=live_notebook")
    run_study(cfg)
    live = tmp_path / "figures"
    monkeypatch.setattr(notebook, "LIVE_FIGURES", live)
    monkeypatch.setattr(notebook, "_drawn", set())
    monkeypatch.setattr(notebook, "_skipped", {})
    monkeypatch.delenv("SWEEP_FIGURES_DIR", raising=False)
    monkeypatch.setenv("SWEEP_TRACKING_URI", cfg.tracking.uri)
    monkeypatch.setenv("SWEEP_EXPERIMENT", "live_notebook")

    drawn = notebook.regenerate("mnrl_scale")
    assert drawn and all(Path(p).is_relative_to(live / "live_notebook") for p in drawn)
    assert {"spearman_vs_scale.png", "paired_comparison.md"} <= {Path(p).name for p in drawn}
    assert notebook.paired_line("mnrl_scale").startswith("- STSB validation Spearman: best scale ")

    assert notebook.regenerate("mnrl_scale_lr") == []  # the same study is not drawn a second time
    assert notebook.paired_line("mnrl_scale_lr").startswith("skipped: live mode draws SWEEP_EXPERIMENT=live_notebook")
    assert sorted(p.name for p in live.iterdir()) == ["live_notebook"]


def test_offline_mode_says_when_a_shipped_study_has_no_paired_comparison(tmp_path, monkeypatch):
    monkeypatch.delenv("SWEEP_TRACKING_URI", raising=False)
    monkeypatch.setenv("SWEEP_FIGURES_DIR", str(tmp_path))
    monkeypatch.setattr(notebook, "_skipped", {})
    assert notebook.paired_line("no_such_study") == "no paired comparison: this study logged no per-pair predictions"
    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "paired_comparison.md").write_text("- the line\n\n| table |\n")
    assert notebook.paired_line("study") == "- the line"

"""What produced a run: the git commit recorded is that of the project the study runs from (the current
directory), not of wherever the package is installed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sweep.tracking.versions import library_versions, version_params
from tests.helpers import REPO


def _head(folder: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, check=True).stdout


def test_the_recorded_commit_is_the_current_projects_head(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(REPO)
    library_versions.cache_clear()
    assert library_versions()["git_commit"] == _head(REPO).strip()
    assert version_params()["version.git_commit"] == _head(REPO).strip()

    project = tmp_path / "my_project"  # a user's own repository, the package installed elsewhere
    project.mkdir()
    git = ["git", "-c", "user.name=u", "-c", "user.email=u@e", "-C", str(project)]
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    monkeypatch.chdir(project)
    library_versions.cache_clear()
    assert library_versions()["git_commit"] == _head(project).strip() != _head(REPO).strip()

    monkeypatch.chdir(tmp_path)  # no repository: said, not guessed from the package's location
    library_versions.cache_clear()
    assert library_versions()["git_commit"] == "unknown"
    library_versions.cache_clear()

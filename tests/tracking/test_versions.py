"""What produced a run: the git commit recorded is the checkout's own (the module finds the repository from its
own place in the package, so moving it deeper must move that lookup with it)."""

from __future__ import annotations

import subprocess

from sweep.tracking.versions import REPO_ROOT, library_versions, version_params


def test_the_recorded_commit_is_the_checkouts_head():
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert (REPO_ROOT / "sweep" / "tracking" / "versions.py").is_file(), REPO_ROOT
    assert library_versions()["git_commit"] == head.stdout.strip()
    assert version_params()["version.git_commit"] == head.stdout.strip()

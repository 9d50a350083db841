"""`python -m sweep --help` lists, per config group, only the options a user can choose."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import REPO, clean_env


def test_help_lists_no_schema_as_an_option(tmp_path):
    """Before, it listed `loss/scale_schedule: base_scale_schedule, default` and `loss/wrapper: base_wrapper, default`
    (the schemas, stored in those groups of Hydra's ConfigStore)."""
    done = subprocess.run(
        [sys.executable, "-m", "sweep", "--help"],
        cwd=REPO,
        env=clean_env(SWEEP_HOME=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "base_" not in done.stdout.split("== Config ==")[0]
    assert "loss/wrapper: default\n" in done.stdout and "loss/scale_schedule: default\n" in done.stdout

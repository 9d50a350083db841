"""A `paths.root` that cannot hold the study (a file in the way, no permission) is refused in one line naming the key
before anything is opened, whether Hydra (its output folder) or the study (its databases) meets it first. Before, it
was a traceback from Hydra's run-directory set-up."""

from __future__ import annotations

import pytest

from sweep.errors import ConfigError
from sweep.study.setup import make_root
from tests.conftest import TINY
from tests.helpers import run_sweep


def test_a_root_under_a_file_is_one_line_and_exit_code_2(tmp_path):
    (tmp_path / "a_file").write_text("not a folder")
    done = run_sweep(*TINY, "name=x", f"paths.root={tmp_path / 'a_file' / 'runs'}", home=tmp_path, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("sweep: invalid config: paths.root=") and "choose a writable folder" in line


def test_the_study_refuses_a_root_it_cannot_create(compose_cfg, tmp_path):
    (tmp_path / "a_file").write_text("not a folder")
    cfg = compose_cfg(f"paths.root={tmp_path / 'a_file' / 'runs'}")
    with pytest.raises(ConfigError, match="cannot be created") as error:
        make_root(cfg.paths.root)
    assert error.value.key == "paths.root"

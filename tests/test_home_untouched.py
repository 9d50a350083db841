"""The lines docs/configuration.md gives to keep a study's writes under paths.root: with them, a study run with an
empty home folder leaves it empty (matplotlib's font cache, Hugging Face datasets' CSV cache and MLflow's telemetry
id all go elsewhere or nowhere)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import TINY
from tests.helpers import REPO, clean_env, run_sweep_from

pytestmark = pytest.mark.e2e


def documented_exports() -> dict[str, str]:
    """The ``export NAME=VALUE`` lines of the docs' block, quotes removed."""
    text = (REPO / "docs" / "configuration.md").read_text()
    block = re.search(r"To keep everything a study writes under `sweep_runs/`.*?```bash\n(.*?)```", text, re.S)
    assert block, "docs/configuration.md shows the export lines"
    return dict(re.findall(r'^export (\w+)="?([^"\n]*)"?$', block.group(1), re.M))


def test_a_study_with_the_documented_settings_writes_nothing_in_the_home_folder(tmp_path):
    exports = documented_exports()
    assert set(exports) == {"MPLCONFIGDIR", "HF_DATASETS_CACHE", "MLFLOW_DISABLE_TELEMETRY"}
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    settings = {name: value.replace("$PWD", str(project)) for name, value in exports.items()}
    env = {k: v for k, v in clean_env().items() if not k.startswith(("XDG_", "HF_", "MPL"))}
    env |= {"HOME": str(home), "SWEEP_DATA_DIR": str(REPO.parent / "shared" / "data"), **settings}
    grid = ["study.seeds=[0]", "study.search_space.loss.scale=[5,20]", f"paths.root={project / 'sweep_runs'}"]
    done = run_sweep_from(project, "+experiment=mnrl_scale", *TINY, *grid, "stats.histogram=true", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == []
    assert (project / "sweep_runs" / "cache" / "datasets").is_dir()  # the settings were followed, not bypassed

"""The package works in each way it is installed: from a checkout (its studies in the top-level `conf/`), as an editable
install, and as a wheel in a fresh virtualenv run from another directory, which ships the product's configs and its
example experiment but none of this repository's studies; a user's own experiments live in their own folder
(`--config-dir`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from sweep.config.checks import CONFIG_DIR
from sweep.config.composition import compose_config
from sweep.errors import ConfigError
from tests.conftest import TINY
from tests.helpers import REPO, run_sweep

# A user's own experiment, in a folder of theirs: one scale, one seed.
USER_EXPERIMENT = """# @package _global_
name: my_scales
study:
  seeds: [0]
  search_space:
    loss:
      scale: [20]
"""


def _tracked_copy(dest: Path) -> Path:
    """The repository's tracked files only (a build must not see local venvs, runs or caches)."""
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


def _fresh_venv(env_dir: Path) -> Path:
    """A fresh virtualenv whose dependencies come from the test's own environment through a .pth line (appended after
    the venv's site-packages, so what is installed into it wins and no editable install of the test's environment
    leaks in); installing torch and friends again would only test pip. Its python."""
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True
    ).stdout.strip()
    (Path(site) / "test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _pip_install(python: Path, *args: str) -> None:
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-build-isolation", "-q"]
        + list(args),
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr


@pytest.fixture(scope="module")
def installed_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding the wheel built from this repository."""
    work = tmp_path_factory.mktemp("wheel")
    source = _tracked_copy(work / "src")
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    build = subprocess.run(
        [*pip_wheel, "-w", str(work / "dist"), "."],
        cwd=source,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (work / "dist").glob("sweep-*.whl")
    python = _fresh_venv(work / "venv")
    _pip_install(python, str(wheel))
    return python


@pytest.fixture(scope="module")
def editable_checkout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A fresh virtualenv with an editable install (`pip install -e`, as the README and CI install) of a copy of this
    repository: its python and the copy's root."""
    work = tmp_path_factory.mktemp("editable")
    source = _tracked_copy(work / "src")
    python = _fresh_venv(work / "venv")  # first: the build backend (setuptools) comes from the test's environment
    _pip_install(python, "-e", str(source))
    return python, source


def _run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLFLOW_TRACKING_URI")}
    return subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _refused_in_one_line(result: subprocess.CompletedProcess) -> str:
    """The one line of a config that `python -m sweep` refuses before any work (exit code 2)."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("sweep: invalid config: "), lines
    return lines[0]


def _user_folder(root: Path) -> Path:
    """A user's own config folder, outside any checkout: experiment/mine.yaml."""
    (root / "experiment").mkdir(parents=True)
    (root / "experiment" / "mine.yaml").write_text(USER_EXPERIMENT)
    return root


def test_a_project_finds_its_studies_in_its_top_level_conf(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    project = tmp_path / "project"
    _user_folder(project / "conf")
    monkeypatch.chdir(project)  # a project's conf/ is on Hydra's search path, without --config-dir
    assert compose_config(["+experiment=mine"]).name == "my_scales"
    assert compose_config(["+experiment=mnrl_scale"]).name == "mnrl_scale"

    monkeypatch.chdir(tmp_path)  # no conf/ here: only what the package ships
    assert compose_config(["+experiment=mnrl_scale"]).name == "mnrl_scale"
    with pytest.raises(ConfigError) as refused:
        compose_config(["+experiment=mine"])
    assert refused.value.key == "experiment" and "is not a config of this group: one of mnrl_scale" in str(
        refused.value
    )


def test_the_package_configs_name_none_of_the_repository_studies() -> None:
    studies = {p.stem for p in (REPO / "research" / "conf" / "experiment").glob("*.yaml")}
    shipped = {p.stem for p in (Path(CONFIG_DIR) / "experiment").glob("*.yaml")}
    assert "mnrl_scale" in shipped and not shipped & studies
    for path in Path(CONFIG_DIR).rglob("*.yaml"):
        text = path.read_text()
        assert not re.search(r"research/results/|mnrl_scale_|FINDINGS", text), f"{path} names the repository's research"


@pytest.mark.install
def test_an_editable_install_runs_the_example_anywhere_and_the_studies_from_its_root(
    editable_checkout: tuple[Path, Path], tmp_path: Path
) -> None:
    python, source = editable_checkout
    where = _run(python, "-c", "import sweep; print(sweep.__file__)", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip() == str(source / "sweep" / "__init__.py"), "the editable install imports its source"

    example = _run(python, "-m", "sweep", "+experiment=mnrl_scale", "--cfg", "job", cwd=tmp_path)
    assert example.returncode == 0, example.stderr
    assert "name: mnrl_scale" in example.stdout

    study = _run(
        python,
        "-m",
        "sweep",
        "--config-dir",
        "research/conf",
        "+experiment=mnrl_scale_batch",
        "--cfg",
        "job",
        cwd=source,
    )
    assert study.returncode == 0, study.stderr
    assert "name: mnrl_scale_batch" in study.stdout and "batch_size:" in study.stdout


@pytest.mark.install
def test_wheel_ships_the_configs_and_runs_from_any_directory(installed_python: Path, tmp_path: Path) -> None:
    where = _run(installed_python, "-c", "import sweep; print(sweep.__file__)", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert str(installed_python.parents[1]) in where.stdout, "the wheel's sweep is imported, not the checkout's"
    package = Path(where.stdout.strip()).parent
    shipped = sorted(p.stem for p in (package / "conf" / "experiment").glob("*.yaml"))
    studies = {p.stem for p in (REPO / "research" / "conf" / "experiment").glob("*.yaml")}
    assert "mnrl_scale" in shipped and not set(shipped) & studies, shipped
    assert not (package.parent / "conf").exists(), "the repository's conf/ is not installed"
    (record,) = package.parent.glob("sweep-*.dist-info/RECORD")  # every file the wheel installed
    tops = {line.split("/", 1)[0] for line in record.read_text().splitlines()}
    assert {top for top in tops if not top.startswith("sweep")} <= {"..", "bin"}, tops  # the product alone

    script = installed_python.parent / "sweep"
    helped = _run(installed_python, str(script), "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "experiment: " in helped.stdout and "mnrl_scale" in helped.stdout

    job = _run(installed_python, "-m", "sweep", "+experiment=mnrl_scale", "--cfg", "job", cwd=tmp_path)
    assert job.returncode == 0, job.stderr
    assert "name: mnrl_scale" in job.stdout and "search_space:" in job.stdout

    report = _run(installed_python, "-m", "sweep.report", "--help", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "loss-vs-scale" in report.stdout and "study" in report.stdout


@pytest.mark.install
def test_wheel_states_its_license_and_keeps_the_postgresql_driver_an_extra(installed_python: Path, tmp_path: Path):
    read = (
        "import importlib.metadata as m, json; d = m.distribution('sweep'); "
        "licenses = [f.name for f in d.files if f.name == 'LICENSE']; "
        "print(json.dumps([d.metadata['License-Expression'], d.requires, licenses]))"
    )
    found = _run(installed_python, "-c", read, cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    license_expression, requires, license_files = json.loads(found.stdout)
    assert license_expression == "Apache-2.0" and license_files == ["LICENSE"]
    psycopg = [line for line in requires if line.startswith("psycopg")]
    assert psycopg and all('extra == "postgres"' in line for line in psycopg), psycopg


@pytest.mark.install
def test_wheel_runs_a_users_experiment_from_their_own_folder(installed_python: Path, tmp_path: Path) -> None:
    mine = _user_folder(tmp_path / "my_study")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    job = _run(
        installed_python, "-m", "sweep", "--config-dir", str(mine), "+experiment=mine", "--cfg", "job", cwd=elsewhere
    )
    assert job.returncode == 0, job.stderr
    assert "name: my_scales" in job.stdout and "- 20" in job.stdout

    missing = _run(
        installed_python, "-m", "sweep", "--config-dir", str(tmp_path / "nope"), "+experiment=mine", cwd=elsewhere
    )
    assert "not found" in _refused_in_one_line(missing) and str(tmp_path / "nope") in missing.stderr


@pytest.mark.e2e
def test_a_users_experiment_in_their_own_folder_trains(tmp_path: Path) -> None:
    mine = _user_folder(tmp_path / "my_study")
    result = run_sweep("--config-dir", str(mine), "+experiment=mine", *TINY, home=tmp_path / "runs")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "study my_scales: 1 complete trials" in result.stdout

"""The package works when installed like any other: a wheel in a fresh virtualenv, run from another directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _tracked_copy(dest: Path) -> Path:
    """The repository's tracked files only (a build must not see local venvs, runs or caches)."""
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


@pytest.fixture(scope="module")
def installed_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding the wheel built from this repository. The dependencies come from the test's own
    environment through a .pth line (appended after the venv's site-packages, so the wheel's `sweep` wins and
    no editable install leaks in); installing torch and friends again would only test pip."""
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
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True
    ).stdout.strip()
    (Path(site) / "test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr
    return python


def _run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLFLOW_TRACKING_URI")}
    return subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_wheel_ships_the_configs_and_runs_from_any_directory(installed_python: Path, tmp_path: Path) -> None:
    where = _run(installed_python, "-c", "import sweep; print(sweep.__file__)", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert str(installed_python.parents[1]) in where.stdout, "the wheel's sweep is imported, not the checkout's"

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

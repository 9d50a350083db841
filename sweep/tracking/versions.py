"""What produced a run: the versions of the libraries whose behaviour changes results, Python's and the git commit
of the project the study runs from (the current directory's, not the installed package's)."""

from __future__ import annotations

import functools
import platform
import subprocess
from importlib import metadata
from pathlib import Path

PACKAGES = ("torch", "transformers", "sentence-transformers", "optuna", "mlflow", "datasets", "hydra-core", "sweep")


@functools.cache
def library_versions() -> dict[str, str]:
    """Versions of the libraries whose behaviour changes results, the Python version and the git commit.

    Read once per process, so a long sweep records the code it started with, not later commits."""
    versions = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path.cwd(), capture_output=True, text=True, timeout=5)
        versions["git_commit"] = commit.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        versions["git_commit"] = "unknown"
    return versions


def version_params() -> dict[str, str]:
    """`library_versions` as the MLflow params every run records: ``version.<name>``."""
    return {f"version.{name}": version for name, version in library_versions().items()}

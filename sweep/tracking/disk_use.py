"""What a study takes on disk: its kept models folder and its MLflow artifacts (its runs' and their logged models'),
in MB, for the summary's last lines."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from mlflow.tracking import MlflowClient

from sweep.names import TAG_STUDY_NAME
from sweep.training import Keeping, study_dir

MB = 1e6


def folder_bytes(folder: Path) -> int:
    """The size of the files under `folder` (links not followed: ``best`` is not counted twice); 0 when absent."""
    total = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            path = Path(parent) / name
            if not path.is_symlink():
                total += path.stat().st_size
    return total


def local_path(uri: str) -> Path | None:
    """The folder of a local artifact location (``file:`` or a plain path); None for a remote one."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return Path(unquote(parsed.path))
    return None


def mlflow_bytes(client: MlflowClient, experiment_id: str, study: str) -> int | None:
    """The size of the artifacts of the study's runs (parent and trials) and of the models logged on them; None when
    they are not on this machine (a tracking server's artifact store)."""
    runs = client.search_runs([experiment_id], f"tags.`{TAG_STUDY_NAME}` = '{study}'")
    ids = {run.info.run_id for run in runs}
    uris = [run.info.artifact_uri for run in runs]
    uris += [m.artifact_location for m in client.search_logged_models([experiment_id]) if m.source_run_id in ids]
    paths = [local_path(uri) for uri in uris]
    if any(path is None for path in paths):
        return None
    return sum(folder_bytes(path) for path in paths if path is not None)


def line(keeping: Keeping, client: MlflowClient, experiment_id: str) -> str:
    """``Disk use: 4.2 MB (kept models 2.1 MB, MLflow artifacts 2.1 MB)``: the study's kept models folder
    (`kept_models.study_dir`) and its MLflow artifacts (`mlflow_bytes`)."""
    models = folder_bytes(study_dir(keeping.root, keeping.study)) / MB
    in_mlflow = mlflow_bytes(client, experiment_id, keeping.study)
    if in_mlflow is None:
        return f"Disk use: kept models {models:.1f} MB, MLflow artifacts on the tracking server (not counted)"
    artifacts = in_mlflow / MB
    return f"Disk use: {models + artifacts:.1f} MB (kept models {models:.1f} MB, MLflow artifacts {artifacts:.1f} MB)"

"""Where users look: the printed MLflow runs-page address, the experiment kind, and optuna-dashboard on the storage."""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
import subprocess
import time
import urllib.request

import optuna
from mlflow.tracking import MlflowClient

from sweep.names import ARTIFACT_SPEARMAN_FIGURE, EXPERIMENT_KIND_MODELS, TAG_EXPERIMENT_KIND
from sweep.study.lifecycle import open_sweep
from sweep.tracking import ui_links
from tests.helpers import cannot_set_up


def test_runs_page_addresses_open_the_model_training_views():
    assert ui_links.runs_page("sqlite:////x/mlflow.db", "3") == (
        "http://127.0.0.1:5000/#/experiments/3/runs?workflowType=machine_learning"
    )
    lines = ui_links.open_lines("sqlite:////x/mlflow.db", "3", "abc", "sqlite:////x/optuna.db")
    assert lines[0] == (  # the addresses assume mlflow ui's default port, and say so
        "Open the runs: mlflow ui --backend-store-uri sqlite:////x/mlflow.db "
        "(serves on http://127.0.0.1:5000 by default, as below; with --port P, use port P)"
    )
    assert lines[1].endswith("http://127.0.0.1:5000/#/experiments/3/runs/abc?workflowType=machine_learning")
    assert lines[-1].endswith("optuna-dashboard sqlite:////x/optuna.db")
    # no chart-view address: it opened bar charts of the parent run titled "be...", "n_..." (issue 53); the answer
    # figure's address shows the answer
    assert not any("compareRunsMode" in line for line in lines)


def test_the_answer_figure_is_one_address_away_once_logged(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    run_id = client.create_run(client.create_experiment("e", artifact_location=str(tmp_path / "art"))).info.run_id
    assert ui_links.answer_line(client, uri, "3", run_id) is None, "no report drawn: no address"
    client.log_text(run_id, "png", "report/spearman_vs_step.png")
    assert ui_links.answer_line(client, uri, "3", run_id) is None
    client.log_text(run_id, "png", ARTIFACT_SPEARMAN_FIGURE)
    line = ui_links.answer_line(client, uri, "3", run_id)
    assert line is not None
    assert line.endswith(
        f"http://127.0.0.1:5000/#/experiments/3/runs/{run_id}/artifacts/report/spearman_vs_scale.png"
        "?workflowType=machine_learning"
    )  # the run page's Artifacts tab opened on the PNG (checked in headless Chromium against MLflow 3.17.2)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_study_experiment_opens_on_runs_and_optuna_dashboard_reads_the_storage(compose_cfg):
    cfg = compose_cfg("name=looked_at", "+study.search_space.loss.scale=[0,20]")
    sweep = open_sweep(cfg)  # creates the study, its queue and the MLflow experiment; no training needed here
    experiment = MlflowClient(cfg.tracking.uri).get_experiment(sweep.experiment_id)
    assert experiment.tags[TAG_EXPERIMENT_KIND] == EXPERIMENT_KIND_MODELS

    if importlib.util.find_spec("optuna_dashboard") is None:
        cannot_set_up("optuna-dashboard is not installed (the dashboard extra): pip install -e '.[dashboard]'")
    executable = shutil.which("optuna-dashboard")
    assert executable, "the optuna-dashboard command comes with the package"
    port = _free_port()
    server = subprocess.Popen(
        [executable, cfg.study.storage, "--host", "127.0.0.1", "--port", str(port), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline, studies = time.monotonic() + 60, None
        while studies is None and time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=5) as response:
                    studies = json.loads(response.read())
            except OSError:
                time.sleep(0.5)
        assert studies is not None, server.stderr.read().decode() if server.poll() is not None else "no answer"
        names = {study["study_name"]: study for study in studies["study_summaries"]}
        assert "looked_at" in names
        study_id = names["looked_at"]["study_id"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies/{study_id}", timeout=10) as response:
            detail = json.loads(response.read())
        queued = [t for t in detail["trials"] if t["state"] == optuna.trial.TrialState.WAITING.name.capitalize()]
        assert len(detail["trials"]) == 2 and len(queued) == 2, "the grid queue as the sweep stored it"
    finally:
        server.terminate()
        server.wait(timeout=30)

"""Workers that start together: every one gets the same MLflow experiment, whoever creates it."""

from __future__ import annotations

import threading

from mlflow.tracking import MlflowClient

from sweep.tracking.mlflow_client import TrackingClient, experiment_id


def test_workers_creating_the_experiment_at_once_all_get_it(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    MlflowClient(uri).search_experiments()  # the schema exists (open_tracking creates it under a lock)
    n = 4
    everyone_has_looked = threading.Barrier(n)

    class LateClient(TrackingClient):
        """Looks the experiment up, then waits until every worker has: they all find none and all create it."""

        looked = False

        def get_experiment_by_name(self, name):
            found = super().get_experiment_by_name(name)
            if not self.looked:
                self.looked = True
                everyone_has_looked.wait(timeout=60)
            return found

    ids: list[str] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            ids.append(experiment_id(LateClient(uri, outage_timeout_s=60), "race", str(tmp_path / "artifacts")))
        except Exception as error:  # noqa: BLE001 - collected for the assertion
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert len(ids) == n and len(set(ids)) == 1

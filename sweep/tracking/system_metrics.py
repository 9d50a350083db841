"""The system metrics of a trial run (`tracking.system_metrics`): MLflow's own monitors (CPU and memory with psutil,
disk, network, and with nvidia-ml-py each GPU's memory, utilisation and power) sampled every
`tracking.system_metrics_interval_s` seconds from the trial's start to its end, logged as ``system/<name>`` (step =
sample number) through the tracking writer, so that a tracking server outage delays them like every other write."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

from sweep.config import TrackingConfig
from sweep.tracking.mlflow_client import TrialRun

PREFIX = "system/"  # MLflow's prefix: the run page's "System metrics" tab shows these


class TrialMonitor(SystemMetricsMonitor):
    """MLflow's `SystemMetricsMonitor` for one trial run, logging through the run's tracking writer.

    Its loop is replaced (the monitors, their sampling and averaging are MLflow's): MLflow's loop reads the run from
    the tracking store after every sample and stops for good at the first failed read (a server outage), and logs
    with a client of its own, around the outage buffer. This one samples until the trial ends it (`finish`), and
    hands each sample to the writer as a deferred write (`BufferedWriter.defer`), which the trial's next write
    delivers. Relies on the parent's ``_shutdown_event``, ``_logging_step``, ``monitors`` and its ``tracking_uri``
    argument (tested with MLflow 3.17, pinned to it: tests/study/test_library_internals.py)."""

    def __init__(self, run: TrialRun, interval_s: float) -> None:
        super().__init__(run.run_id, sampling_interval=interval_s, tracking_uri=run.client.tracking_uri)
        self.run = run

    def monitor(self) -> None:
        while True:
            self.collect_metrics()
            stopped = self._shutdown_event.wait(self.sampling_interval)
            self.publish_metrics(self.aggregate_metrics())
            if stopped:
                return

    def publish_metrics(self, metrics: Mapping[str, Any]) -> None:
        self.run.log_metrics({PREFIX + key: value for key, value in metrics.items()}, self._logging_step, defer=True)
        self._logging_step += 1
        for monitor in self.monitors:
            monitor.clear_metrics()


@contextmanager
def system_metrics(run: TrialRun, tracking: TrackingConfig) -> Iterator[None]:
    """Sample the system into `run` while the block runs, as `tracking` (the ``tracking`` config) says (nothing with
    ``system_metrics=false``); the monitor stops when the block ends, also on a failure or an interrupt."""
    if not tracking.system_metrics:
        yield
        return
    monitor = TrialMonitor(run, tracking.system_metrics_interval_s)
    monitor.start()
    try:
        yield
    finally:
        monitor.finish()

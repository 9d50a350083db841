"""The Hydra application behind `python -m sweep`."""

from __future__ import annotations

import logging
import subprocess
import sys

import hydra
import optuna
import pandas as pd
from omegaconf import DictConfig

from sweep.config import CONFIG_DIR, ConfigError
from sweep.study import Sweep, finish, open_sweep, worker_threads

log = logging.getLogger("sweep")


def _quiet_libraries() -> None:
    """Keep the console to sweep's own lines and progress bars."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for name in ("transformers", "sentence_transformers", "datasets", "mlflow", "alembic", "httpx"):
        logging.getLogger(name).setLevel(logging.ERROR)
    import datasets
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    datasets.disable_progress_bars()


def summary(sweep: Sweep, table: pd.DataFrame) -> str:
    """The final report: the table, where the Optuna storage and MLflow database are, and how to open them."""
    shown = table.drop(columns=[c for c in ("temperature",) if c in table and table[c].isna().all()])
    lines = [
        f"study {sweep.study.study_name}: {sum(table.state == 'COMPLETE') if not table.empty else 0} complete trials",
        shown.to_string(index=False, float_format=lambda v: f"{v:.4f}") if not table.empty else "(no trials)",
    ]
    complete = table[table.state == "COMPLETE"] if not table.empty else table
    if not complete.empty:
        best = complete.loc[complete.stsb_val.idxmax()]
        lines.append(
            f"best by STSB validation: trial {best.trial} (scale {best.scale}), "
            f"validation {best.stsb_val:.4f}, test {best.stsb_test:.4f}"
        )
    uri = sweep.cfg.tracking.uri
    lines += [
        f"Optuna storage: {sweep.cfg.study.storage} (study {sweep.study.study_name})",
        f"MLflow tracking: {uri} (experiment {sweep.cfg.tracking.experiment_name}, parent run {sweep.parent_run_id})",
        f"Open the runs: mlflow ui --backend-store-uri {uri}"
        if uri.startswith(("sqlite:", "file:", "/"))
        else f"Open the runs: {uri}",
    ]
    return "\n".join(lines)


def paired_summary(sweep: Sweep) -> list[str]:
    """The paired-bootstrap lines (best scale and the scales not distinguishable from it), also logged on the
    parent run; nothing when scale was not swept or `stats.paired.enabled` is false."""
    from sweep.report.paired_table import log_paired_comparison

    stats = sweep.cfg.stats
    if not stats.paired.enabled:
        return []
    options = {"n_resamples": stats.paired.resamples, "level": stats.paired.level, "seed": stats.seed}
    return log_paired_comparison(sweep.client, sweep.parent_run_id, **options)


WORKER_KEYS = ("study.n_workers", "trial.torch_threads", "quiet")


def spawn_workers(n_workers: int, threads: int) -> list[subprocess.Popen]:
    """n_workers - 1 more processes running this same command on the same study (separate processes:
    torch and the trainer are not thread-safe)."""
    overrides = [arg for arg in sys.argv[1:] if arg.split("=")[0].lstrip("+~") not in WORKER_KEYS]
    command = [
        sys.executable,
        "-m",
        "sweep",
        *overrides,
        "study.n_workers=1",
        f"trial.torch_threads={threads}",
        "quiet=true",
    ]
    return [subprocess.Popen(command) for _ in range(n_workers - 1)]


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    _quiet_libraries()
    try:
        sweep = open_sweep(cfg)
    except ConfigError as error:
        print(f"sweep: invalid config: {error}", file=sys.stderr)
        sys.exit(2)
    workers: list[subprocess.Popen] = []
    if cfg.study.n_workers > 1:
        threads = cfg.trial.torch_threads or worker_threads(cfg.study.n_workers)
        cfg.trial.torch_threads = threads
        workers = spawn_workers(cfg.study.n_workers, threads)
    interrupted = False
    try:
        sweep.run()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for worker in workers:
            if interrupted:
                worker.terminate()
            worker.wait()
        table = finish(sweep, interrupted=interrupted)
    print(summary(sweep, table))
    if not interrupted:
        for line in paired_summary(sweep):
            print(line)
    if interrupted:
        print(
            "sweep: interrupted; the unfinished trial is queued again, rerun the same command to continue",
            file=sys.stderr,
        )
        sys.exit(130)
    if sweep.stopped_reason:
        print(f"sweep: stopped: {sweep.stopped_reason}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

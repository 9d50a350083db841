"""``python -m sweep.evaluate``: score saved models, MLflow runs or a study's best model on STSB and the extra sets.

Rescores a finished study on a new dataset without retraining: the models come from folders (``--model``), from
MLflow (``--run-id``, the ``model`` logged with the sentence_transformers flavor) or from a study's kept best model
(``--study NAME``, under ``<paths.root>/models/NAME/best``); the data and extra sets from the project config and
Hydra overrides (``eval=offline_extra``, ``data.test.max_samples=...``). One row per model, printed and written
as CSV.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from sentence_transformers import SentenceTransformer

from sweep.config import DataConfig, EvalConfig, compose_config, eval_batch_size
from sweep.errors import ConfigError
from sweep.evaluation import extra_sets
from sweep.inputs import data as data_module
from sweep.names import TAG_MODEL_REMOVED
from sweep.stats import EmbeddingKeepingEvaluator
from sweep.tracking import logged_models
from sweep.training import (
    kept_models,
    stsb_evaluator,  # the trial's own evaluator: identical settings
)

SCORED_SPLITS = ("validation", "test")  # the STSB splits --splits may name


def stsb_scores(data: DataConfig, splits: Sequence[str], batch_size: int) -> dict[str, EmbeddingKeepingEvaluator]:
    """The STSB evaluators of ``splits`` of the `data` section, subset exactly as a trial subsets them (so values
    match the logged)."""
    evaluators = {}
    for split in splits:
        dataset = data_module.load_split(data, split)
        dataset = data_module.subset(dataset, data_module.split_spec(data, split).max_samples, data.seed)
        evaluators[split] = stsb_evaluator(dataset, f"stsb_{split}", batch_size)
    return evaluators


def check_sources(args: argparse.Namespace, root: str) -> None:
    """Refuse a ``--model`` that is not a folder and a ``--study`` without a kept best model (ValueError), before
    any data or model is loaded (a study's kept model under ``root``, `paths.root`)."""
    for path in args.model:
        if not Path(path).is_dir():
            raise ValueError(f"--model {path}: not a folder")
    for name in args.study:
        best = kept_models.best_path(root, name)
        if kept_models.read_meta(best) is None:
            raise ValueError(f"--study {name}: no kept best model in {best} (trial.save_model=best or all)")


def load_models(
    args: argparse.Namespace, root: str, tracking_uri: str
) -> list[tuple[dict[str, object], SentenceTransformer]]:
    """(description, model) for every ``--model``, ``--run-id`` and ``--study`` given, in that order (a study's kept
    model under ``root``, `paths.root`; runs at ``--tracking-uri``, else ``tracking_uri``, `tracking.uri`)."""
    models: list[tuple[dict[str, object], SentenceTransformer]] = []
    for path in args.model:
        models.append(({"source": "folder", "model": str(Path(path).resolve())}, SentenceTransformer(path)))
    for name in args.study:
        best = kept_models.best_path(root, name)
        meta = kept_models.read_meta(best)
        if meta is None:
            raise ValueError(f"--study {name}: no kept best model in {best} (trial.save_model=best or all)")
        row = {"source": "study", "model": str(best), "trial": meta["trial_number"], "run_id": meta["mlflow_run_id"]}
        models.append((row, SentenceTransformer(str(best))))
    if args.run_id:
        import mlflow
        import mlflow.sentence_transformers

        mlflow.set_tracking_uri(args.tracking_uri or tracking_uri)
        client = mlflow.MlflowClient()
        for run_id in args.run_id:
            if removed := client.get_run(run_id).data.tags.get(TAG_MODEL_REMOVED):
                raise ValueError(
                    f"--run-id {run_id}: its model was removed from MLflow, {removed}; rescore the study's best "
                    "with --study NAME (trial.save_model=all keeps every trial's model)"
                )
            uri = logged_models.model_uri(client, run_id)
            models.append(({"source": "mlflow", "model": uri}, mlflow.sentence_transformers.load_model(uri)))
    return models


def score_table(
    args: argparse.Namespace, data: DataConfig, ev: EvalConfig, batch_size: int, root: str, tracking_uri: str
) -> pd.DataFrame:
    """One row per model: where it came from, STSB Spearman per split (of the `data` section) and every extra set's
    metrics (of the `eval` section), encoded in batches of `batch_size` (`load_models` reads `root` and
    `tracking_uri`)."""
    extra_sets.validate(ev)
    extra_sets.check_sets(ev, data)
    stsb = stsb_scores(data, args.splits, batch_size)
    extra = extra_sets.ExtraEvaluators.from_config(ev, data, batch_size)
    rows = []
    for row, model in load_models(args, root, tracking_uri):
        for split, evaluator in stsb.items():
            row[f"stsb_{split}_spearman"] = float(evaluator(model)[f"stsb_{split}_spearman_cosine"])
        rows.append({**row, **extra.score(model)})
    return pd.DataFrame(rows)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sweep.evaluate",
        description="Score saved models, MLflow runs or a study's best model on STSB and the eval.extra sets.",
    )
    parser.add_argument("--model", action="append", default=[], metavar="PATH", help="a SentenceTransformer folder")
    parser.add_argument("--run-id", action="append", default=[], metavar="ID", help="an MLflow run with a logged model")
    parser.add_argument("--study", action="append", default=[], metavar="NAME", help="a study's kept best model")
    parser.add_argument("--tracking-uri", help="MLflow tracking URI for --run-id (default: the config's tracking.uri)")
    parser.add_argument(
        "--splits", default="validation,test", help="STSB splits to score, comma-separated (default validation,test)"
    )
    parser.add_argument("--out", type=Path, help="write the table as CSV here")
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="KEY=VALUE",
        help="Hydra overrides of the project config: paths.root=..., eval=offline_extra, data.test.max_samples=...",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.splits = [s for s in args.splits.split(",") if s]
    if not (args.model or args.run_id or args.study):
        parser.error("give at least one --model, --run-id or --study")
    if any(split not in SCORED_SPLITS for split in args.splits):
        parser.error(f"--splits must name {' and/or '.join(SCORED_SPLITS)}")
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        cfg = compose_config(args.overrides)
        check_sources(args, cfg.paths.root)
    except (ConfigError, ValueError) as error:  # the command line itself: refused before any work, exit 2
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    try:
        batch_size = eval_batch_size(cfg.trial, cfg.model.kind)
        table = score_table(args, cfg.data, cfg.eval, batch_size, cfg.paths.root, cfg.tracking.uri)
    except (ConfigError, ValueError, OSError) as error:
        parser.exit(1, f"{parser.prog}: error: {error}\n")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out, index=False)
        print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Each trial's per-pair STSB predictions as MLflow artifacts, so a study's Spearman can be recomputed on resamples.

``predictions/stsb_{split}.csv`` (split ``validation`` or ``test``): one row per evaluation pair, in the
evaluator's order, with columns ``gold`` (the gold score) and ``cosine`` (the trial's final model). The cosines
come from the embeddings the STSB evaluator already computed: logging costs no encoding.
``predictions/stsb_{split}_untrained.csv``: the same for the trial's untrained base model (step 0), which the answer
compares the best scale with (`sweep.stats.untrained`); encoded once per study and base model.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sweep.loggers import TrialLogger
from sweep.names import ARTIFACT_PREDICTIONS, UNTRAINED_SUFFIX

if TYPE_CHECKING:  # a report that reads predictions back imports neither torch nor MLflow (its client is passed in)
    from mlflow.tracking import MlflowClient
    from sentence_transformers import SentenceTransformer

    from sweep.stats import EmbeddingKeepingEvaluator


def artifact_path(split: str) -> str:
    return ARTIFACT_PREDICTIONS.format(split=split)


def untrained_part(split: str) -> str:
    """The part name of the untrained model's predictions on ``split`` (``load_predictions``' ``split``)."""
    return f"{split}{UNTRAINED_SUFFIX}"


def prediction_table(evaluator: EmbeddingKeepingEvaluator) -> pd.DataFrame:
    """The gold scores and cosines of ``evaluator``'s last call (or `score_pairs`), one row per evaluation pair."""
    from sweep.stats import pair_cosines  # torch: imported where a trial scores, not by a report

    embeddings1, embeddings2 = evaluator.last_embeddings
    cosines = pair_cosines(embeddings1, embeddings2)
    return pd.DataFrame({"gold": np.asarray(evaluator.scores, dtype=np.float64), "cosine": cosines})


def score_pairs(evaluator: EmbeddingKeepingEvaluator, model: SentenceTransformer) -> pd.DataFrame:
    """`prediction_table` of ``model`` on the evaluator's pairs, encoded as its own call encodes them, without
    computing its metrics or writing them on the model's card."""
    evaluator.last_embeddings = []
    for sentences in (evaluator.sentences1, evaluator.sentences2):
        evaluator.embed_inputs(model, sentences)
    return prediction_table(evaluator)


def log_table(run: TrialLogger, table: pd.DataFrame, part: str) -> None:
    """Log a gold/cosine table as the trial's ``part`` predictions (a split, or `untrained_part` of one)."""
    run.log_text(table.to_csv(index=False, float_format="%.7g"), artifact_path(part))  # buffered through outages


def log_predictions(run: TrialLogger, evaluator: EmbeddingKeepingEvaluator, split: str) -> np.ndarray:
    """Log the cosines of ``evaluator``'s last call (on the trial's final model) with the gold scores; return the
    cosines."""
    table = prediction_table(evaluator)
    log_table(run, table, split)
    return table["cosine"].to_numpy()


def load_predictions(client: MlflowClient, run_id: str, split: str = "validation") -> pd.DataFrame | None:
    """The ``gold``/``cosine`` table a trial logged, or None when it has none (older runs, failed trials)."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one bar per trial would flood the console
    with tempfile.TemporaryDirectory() as folder:
        try:
            path = client.download_artifacts(run_id, artifact_path(split), folder)
        except Exception:  # noqa: BLE001 - missing artifact: MlflowException or OSError depending on the store
            return None
        return pd.read_csv(io.StringIO(Path(path).read_text()))

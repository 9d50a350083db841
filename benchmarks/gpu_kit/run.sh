#!/usr/bin/env bash
# The lent GPU machine's side of the kit (the device tool's `run`, see README.md beside this file): install the
# kit's packages, make the static model, run `python -m benchmarks.gpu_check` into $OUT (7 files) with its log (the 8th).
set -uo pipefail
KIT=.gpukit
# the wheels of wheels.lock, installed for this machine by build.py (pip install --target site) and packed in one archive
rm -rf /tmp/site && tar -xJf "$KIT/site.tar.xz" -C /tmp || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# fail in seconds, not minutes, when a carried wheel does not fit the machine's packages
python3 -c "import datasets, hydra, mlflow, optuna, sentence_transformers, torch, transformers as t; print('versions:', sentence_transformers.__version__, t.__version__, datasets.__version__, torch.__version__, torch.cuda.get_device_name())" || exit 1
python3 benchmarks/gpu_kit/unpack.py "$KIT" /tmp/kit_models || exit 1
python3 -m benchmarks.gpu_check --out "$OUT" --reference-trials "$KIT/reference_trials.csv" \
  --static-model /tmp/kit_models/static_minilm --transformer-model "$KIT/models/minilm" --data-dir "$KIT/data" \
  "$@" 2>&1 | tee "$OUT/log.txt"

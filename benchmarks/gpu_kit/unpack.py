"""On the lent machine: make the static model's base folder from the kit's rows (`build.py` wrote them).

    python3 benchmarks/gpu_kit/unpack.py .gpukit /tmp/kit_models    # writes /tmp/kit_models/static_minilm

A BERT of all-MiniLM-L6-v2's config with no transformer layer, whose input token embeddings are the kit's rows (half
precision, widened to fp32) for the tokens the data uses and zero for the others, with MiniLM's tokenizer: what
`model=static_minilm` reads of a base model (`get_input_embeddings()`, the tokenizer). A zero row is never read:
the data has none of its tokens, so no step and no evaluation touches it.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import torch
from transformers import BertConfig, BertModel


def unpack(kit: Path, out: Path) -> Path:
    source = kit / "models" / "minilm"
    config = BertConfig.from_pretrained(source, num_hidden_layers=0)
    stored = np.load(kit / "models" / "static_rows.npz")
    table = torch.zeros(config.vocab_size, config.hidden_size)
    table[torch.from_numpy(stored["ids"]).long()] = torch.from_numpy(stored["rows"].astype(np.float32))
    model = BertModel(config, add_pooling_layer=False)
    model.embeddings.word_embeddings.weight.data.copy_(table)
    target = out / "static_minilm"
    model.save_pretrained(target)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copyfile(source / name, target / name)
    return target


if __name__ == "__main__":
    print(unpack(Path(sys.argv[1]), Path(sys.argv[2])))

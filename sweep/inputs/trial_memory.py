"""A trial's GPU memory estimated from its model's shape and its batch before any trial has run: what
`study.n_workers=auto` sizes the workers of a GPU by when `study.pack_memory_gib` does not state it.

The estimate is an upper bound built from three published rules of thumb, read from the model's ``config.json``
alone (no weights loaded, nothing on the GPU):

- **Fixed:** `FIXED_BYTES` per process whatever the model: the CUDA context with the kernels of torch and its
  libraries loaded into it, cuBLAS's workspaces, the evaluation's encoding and the caching allocator's slack. The
  context alone holds hundreds of MB before any tensor (pytorch/pytorch#86509 measured 287 MB with CUDA's lazy
  module loading against 667 MB without it; pytorch/pytorch#34323 reports 781 MB at the start of a process) and
  grows with the kernels a run loads. 3 GiB is an assumption that takes the top of that range, not a measurement of
  the machine: `study.pack_memory_gib` states the real figure.
- **Training state:** 16 bytes per parameter, the weights, their gradients and AdamW's two moments in fp32 (ZeRO,
  Rajbhandari et al. 2020, section 3.1, counts 16 bytes per parameter for mixed-precision Adam: a 16-bit copy and
  gradient plus fp32 weights, momentum and variance; the project trains fp32 weights with fp32 gradients, the same
  16).
- **Activations** of one training step, per transformer layer ``s b h (34 + 5 a s / h)`` bytes with 16-bit
  activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", section 4.1,
  eq. 1: s tokens a sequence, b sequences, h hidden size, a attention heads), twice that in fp32. Every text counts
  as padded to `model.max_seq_length`, so the bound holds for the longest batch (short texts use less).

A static model (a token table and a mean) has no layers: its state is its table, its activations negligible."""

from __future__ import annotations

from sweep.config import GIB, ModelConfig, TrialConfig
from sweep.inputs.model_source import (
    checkpoint_config,
    model_shape,
    resolve_path,
    saved_static_module,
    saved_static_table,
)

FIXED_BYTES = 3 * GIB  # per process: CUDA context and kernels, cuBLAS workspaces, evaluation, allocator slack
STATE_BYTES_PER_PARAMETER = 16  # fp32 weights, gradients, AdamW's exp_avg and exp_avg_sq (ZeRO, section 3.1)
ACTIVATION_BYTES = {"fp32": 2.0, "bf16": 1.0, "fp16": 1.0}  # times the 16-bit count of Korthikanti et al.


def transformer_parameters(config: dict, layers: int | None = None) -> int:
    """The parameters of a BERT-like encoder of a ``config.json`` (embeddings with their layer norm; per layer the
    attention's four projections, the feed-forward pair and two layer norms; the pooler that transformers' BertModel
    adds), `layers` of them when given. Keys it lacks take BERT's defaults (the feed-forward 4 x hidden, 512
    positions, 2 token types)."""
    hidden = int(config["hidden_size"])
    inner = int(config.get("intermediate_size") or 4 * hidden)
    rows = int(config.get("vocab_size", 30522)) + int(config.get("max_position_embeddings", 512))
    rows += int(config.get("type_vocab_size", 2))
    per_layer = 4 * (hidden * hidden + hidden) + 2 * hidden * inner + inner + hidden + 4 * hidden
    count = layers if layers is not None else int(config["num_hidden_layers"])
    pooler = hidden * hidden + hidden
    return rows * hidden + 2 * hidden + count * per_layer + pooler


def estimated_trial_bytes(model: ModelConfig, trial: TrialConfig, texts_per_example: int) -> int:
    """The module docstring's upper bound on one trial's GPU memory for `model` trained at `trial.batch_size`
    examples of `texts_per_example` texts each (anchor, positive[, negative]) in `trial.precision`. Raises
    OSError or ValueError (a `ConfigError`) when the model's config cannot be read."""
    shape = model_shape(model)  # the width and layers `build_model` builds, overrides and embedding_dim applied
    path = resolve_path(model)
    saved = saved_static_module(path)
    if saved is not None:
        return FIXED_BYTES + STATE_BYTES_PER_PARAMETER * saved_static_table(saved)[0] * shape.dim
    config = {**checkpoint_config(path), **(model.config_overrides or {})}
    if shape.layers is None:  # a static model: the base model's token table at the built width
        return FIXED_BYTES + STATE_BYTES_PER_PARAMETER * int(config.get("vocab_size", 30522)) * shape.dim
    heads = int(config.get("num_attention_heads") or max(1, shape.dim // 64))
    tokens, sequences = model.max_seq_length, trial.batch_size * texts_per_example
    per_layer = tokens * sequences * shape.dim * (34 + 5 * heads * tokens / shape.dim)
    activations = ACTIVATION_BYTES.get(trial.precision, 2.0) * per_layer * shape.layers
    state = STATE_BYTES_PER_PARAMETER * transformer_parameters({**config, "hidden_size": shape.dim}, shape.layers)
    return int(FIXED_BYTES + state + activations)

"""Whether a packed trial can train as a member of a fused pack (`FusedStaticPack`), and if not, why: the one
place that names what the fused step implements (a static model, plain MNRL with cosine similarity, AdamW with
the linear schedule, fp32, one pass of the data) and so what falls back to lockstep turns."""

from __future__ import annotations

from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.modules import Normalize, StaticEmbedding
from sentence_transformers.util import cos_sim
from torch import nn

from sweep.config import TrialConfig
from sweep.losses import ScaledMultipleNegativesRankingLoss, training_callbacks

OPTIMIZERS = ("adamw_torch", "adamw_torch_fused")  # transformers `optim` names `FusedAdamW` implements


def static_table(model: SentenceTransformer) -> nn.EmbeddingBag | None:
    """The token table of a static model (a `StaticEmbedding`, then at most a `Normalize`), or None."""
    modules = list(model)
    if not modules or not isinstance(modules[0], StaticEmbedding):
        return None
    if not all(isinstance(module, Normalize) for module in modules[1:]) or len(modules) > 2:
        return None
    return modules[0].embedding


def is_normalized(model: SentenceTransformer) -> bool:
    """Whether a static model ends with `Normalize`."""
    return len(model) == 2


def why_not_fused(
    trainer: SentenceTransformerTrainer, loss: nn.Module, scheduled: bool, trial: TrialConfig, steps: int
) -> str | None:
    """None when the trial of `trainer` (its `trial` section, `steps` steps) can train fused, else the reason it
    cannot, as a log line names it. `scheduled`: the loss follows a scale schedule (a callback the fused step does not
    run; so are the loss's own training callbacks, a learned scale's clamp)."""
    if static_table(trainer.model) is None:
        return "the model is not a static embedding model (only StaticEmbedding [+ Normalize] fuses)"
    if type(loss) is not ScaledMultipleNegativesRankingLoss:
        return f"the loss {type(loss).__name__} has no fused form (plain MultipleNegativesRankingLoss has)"
    if loss.similarity_fct is not cos_sim or tuple(loss.directions) != ("query_to_doc",) or loss.hardness_mode:
        return "the loss is MultipleNegativesRankingLoss with options the fused loss lacks (cosine, query_to_doc)"
    if scheduled or training_callbacks(loss):
        return "the loss has training callbacks (a scale schedule or a learned scale)"
    if trial.precision != "fp32":
        return f"trial.precision={trial.precision} (the fused step runs in fp32)"
    if trial.lr_scheduler != "linear":
        return f"trial.lr_scheduler={trial.lr_scheduler} (the fused step has the linear schedule)"
    if trial.optimizer not in OPTIMIZERS:
        return f"trial.optimizer={trial.optimizer} (the fused step has {' and '.join(OPTIMIZERS)})"
    if trial.early_stopping_patience:
        return "trial.early_stopping_patience is set (the fused loop does not stop early)"
    one_pass = len(trainer.get_train_dataloader())
    if steps > one_pass:
        return f"{steps} steps are more than one pass over the training rows ({one_pass} batches)"
    return None

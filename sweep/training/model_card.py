"""The model card (``README.md``) of a kept model, filled through sentence-transformers' own card data
(`SentenceTransformerModelCardData`): a title naming the study, the trial and its grid point; the base model with the
language and license of its own card; the training data by name (its size, columns, examples and the loss with its
parameters, the scale among them, come from the trainer's model-card callback); the trial's STSB and extra-set
scores (from its evaluators); which model it is in words (`model_words`: a static embedding or a transformer, its
learning rate and how to switch), also the study's Description in MLflow. For the study's best model, the study's
verdict lines are added when the study ends.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard, try_to_load_from_cache
from omegaconf import OmegaConf
from sentence_transformers import SentenceTransformer, SentenceTransformerModelCardData

from sweep.config import CONFIG_DIR, ModelConfig
from sweep.inputs import resolve_path, saved_static_module
from sweep.stats import bullets

README = "README.md"
# The study's section of a kept model's card, between these markers so that a later verdict replaces it.
STUDY_START, STUDY_END = "<!-- sweep: the study -->", "<!-- /sweep: the study -->"
BEFORE = "## Model Details"  # the study's section goes above it, under the card's first paragraph


def pretrained_base(model: ModelConfig) -> str | None:
    """The hub name of the checkpoint whose trained weights the model starts from (None for random weights or a
    local folder, which the card cannot link to)."""
    random = model.reinit or (model.kind == "static" and model.static_init == "random")
    return None if random or Path(model.name_or_path).expanduser().exists() else str(model.name_or_path)


def model_words(model: ModelConfig, learning_rate: float) -> str:
    """What the model is, in a sentence a newcomer reads first (the card, the study's Description): a static
    embedding (token vectors, mean-pooled, no transformer layers) or a transformer, the learning rate it trains at,
    and, for a static model, the command-line switch to the transformer with that model's own rate."""
    name = f"`{model.name_or_path}`"
    if model.kind != "static":
        weights = f"random weights, {name}'s tokenizer" if model.reinit else f"the pretrained {name}"
        return f"The model is a transformer ({weights}), trained at learning rate {learning_rate:g}."
    transformer = OmegaConf.load(Path(CONFIG_DIR) / "model" / "minilm.yaml").learning_rate
    if model.static_init == "random":
        tokens = "random token vectors"
    elif saved_static_module(resolve_path(model)) is not None:
        tokens = f"the token vectors of the saved static model {name}"
    else:
        tokens = f"{name}'s input token embeddings"
    return (
        f"The model is a static embedding (`model.kind=static`, as the default `model=static_minilm`: {tokens}, "
        f"mean-pooled, no transformer layers), trained at learning rate {learning_rate:g}: fast on a CPU, not the "
        f"transformer. For the transformer itself, run with `model=minilm` "
        f"(its learning rate, {transformer:g}, comes with it)."
    )


def base_card(model: ModelConfig) -> ModelCard | None:
    """The base checkpoint's own card, read from its local folder or the Hugging Face cache (never downloaded)."""
    path = Path(resolve_path(model)) / README
    local = path if path.is_file() else try_to_load_from_cache(str(model.name_or_path), README)
    return ModelCard.load(local) if isinstance(local, (str, Path)) else None


class TrialCardData(SentenceTransformerModelCardData):
    """sentence-transformers' card data without the Hub's inference widget: a kept model is not published, and the
    widget's examples are drawn with Python's global random state behind a progress bar (a line of redraws in a log
    file)."""

    about: str = ""  # `model_words`, shown under the card's first paragraph

    def set_widget_examples(self, dataset: Any) -> None:
        return None

    def to_dict(self) -> dict[str, Any]:
        """The card template's values, with `about` after the first paragraph's last value (its task, which the
        template ends with a full stop)."""
        values = super().to_dict()
        if self.about:
            values["task_name"] = f"{values['task_name']}.\n\n{self.about.removesuffix('.')}"
        return values


def describe(
    model: SentenceTransformer, base_model: ModelConfig, title: str, training: dict[str, str], learning_rate: float
) -> None:
    """Give `model` the card data of its trial, before its trainer is built (whose card callback adds the training
    rows' statistics, the loss with its parameters and the hyperparameters): `title`, the training dataset
    `training` (``{"name": ..., "id": hub id}``) and, for pretrained weights, the base model with the language and
    license of its card (``base_model``: the `model` section), and the model in words at `learning_rate`."""
    base = pretrained_base(base_model)
    found = base_card(base_model) if base else None
    card = TrialCardData(
        language=(found.data.get("language") if found else None) or [],
        license=found.data.get("license") if found else None,
        model_name=title,
        train_datasets=[training],
        local_files_only=True,  # no Hub lookups while training or saving: the base model and data are named here
    )
    card.about = model_words(base_model, learning_rate)
    card.base_model = base
    card.register_model(model)
    model.model_card_data = card


def study_section(study: str, trial_number: int, value: float, lines: list[str]) -> str:
    """The study's verdict for its best model's card: which trial it is and the study's answer lines."""
    verdict = bullets(lines) or "- (no paired comparison: one scale, or stats.paired off)"
    return (
        f"## The study\n\nThe best model of the sweep study `{study}`: trial {trial_number}, objective {value:.4f}. "
        f"The study's verdict:\n\n{verdict}"
    )


def write_study_section(folder: Path, section: str) -> Path:
    """Put `section` into the card of the model in `folder`, replacing the one an earlier end of the study wrote."""
    readme = folder / README
    text = readme.read_text()
    block = f"{STUDY_START}\n{section}\n{STUDY_END}\n"
    if STUDY_START in text:
        head, _, rest = text.partition(STUDY_START)
        text = head + block + rest.partition(STUDY_END)[2].lstrip("\n")
    elif BEFORE in text:
        head, _, rest = text.partition(BEFORE)
        text = f"{head}{block}\n{BEFORE}{rest}"
    else:
        text = f"{text.rstrip()}\n\n{block}"
    replacement = readme.with_name(f".{README}.tmp")
    replacement.write_text(text)
    os.replace(replacement, readme)  # atomic: a reader sees the old card or the new one
    return readme

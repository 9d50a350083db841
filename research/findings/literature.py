"""What this repository's findings page compares with: the literature (constants with their source: the only numbers
on the page not read from a CSV), the library default the questions test, and the strength rule in the words of
these studies."""

from __future__ import annotations

from sweep.report import strength_rule

DEFAULT = 20.0  # sentence-transformers' MNRL / CoSENT scale (temperature 0.05)

# Literature, as docs and papers state it (CONTEXT.md of the project lists the same numbers)
SIMCSE_DEV = {0.001: 84.9, 0.01: 85.4, 0.05: 86.2, 0.1: 82.0, 1.0: 64.0}
SIMCSE = (
    "SimCSE (Gao et al. 2021), appendix Table D.1: the supervised model (BERT-base trained on NLI, as here), STS-B "
    "dev Spearman by temperature"
)
SIMCSE_UNSUPERVISED_DEV = 82.5  # the same paper: unsupervised SimCSE's best STS-B dev score (at temperature 0.05)
E5_TEMPERATURE = 0.01
E5 = "E5 model card: at temperature 0.01 cosine similarities distribute around 0.7 to 1.0"
BGE = "BGE (FlagEmbedding): temperature 0.01 gives cosines of about 0.6-1 (thresholds 0.8-0.9 advised), moved to 0.02"
BGE_TRAINED = (0.01, 0.02)  # the temperatures BGE's models were trained at
BGE_ADVICE = (0.01, 0.05)  # FlagEmbedding #155 (staoxiao, 2023-10-09): fine-tune at 0.01-0.05, a higher one is worse
BGE_ADVICE_SOURCE = (
    "FlagEmbedding issue #155 (a maintainer, staoxiao, 2023-10-09, answering how to set the temperature when "
    "fine-tuning; in Chinese): the higher the temperature the worse the model, keep it within 0.01-0.05"
)
BGE_V15 = (
    "FlagEmbedding #193: BGE v1.5 raised its training temperature from 0.01 to 0.02 to spread its similarity "
    "scores (v1.0's lay in about 0.6-1); #568 (staoxiao, 2024-03-18) confirms the move to 0.02 and adds that a "
    "higher temperature gives a more uniform distribution, but too high a one lowers quality"
)
FLAG_README = (0.01, 0.1, 0.02)  # FlagEmbedding's fine-tuning README: temperature 0.01-0.1, default 0.02
FLAG_README_SOURCE = "FlagEmbedding's fine-tuning README"
WANG_LIU = "Wang and Liu 2021: a lower temperature gives more uniform embeddings, a higher one more tolerance"
ST_3054 = (
    "sentence-transformers #3054 ('scale' hyperparameter in MultipleNegativesRankingLoss): the maintainers' suspicion "
    "that the differences between scales shrink with more training data is this project's brief's paraphrase, not a "
    "quote (the stored copy of the thread this page was checked against holds the first answer, tomaarsen's of "
    "2024-11-14, whose words are that scale 20 is temperature 0.05 and a higher scale focuses the loss on the "
    "positive, with a table of one anchor's loss by scale; no sentence on data size)"
)
ST_3054_TABLE = (
    "sentence-transformers #3054, first answer (tomaarsen, 2024-11-14): one anchor's MNRL loss at scales 0-29 for a "
    "positive far above its negatives and one slightly above"
)
ANGLE_PAPER = ((1.0, 1.0, 1.0), (20.0, 20.0, 1.0))  # AnglE paper: w1-w3, scales (temperatures 0.05 / 0.05 / 1.0)
ANGLE_RELEASED = ((0.0, 20.0, 1.0), (20.0, 20.0, 20.0))  # angle-emb training defaults (issue 22): w, all scales 20
# angle-emb's released training defaults (cosine_w / ibn_w / angle_w; cosine, in-batch, angle scales), by release, as
# the issue 51 review dated them from the package's history: four changes
ANGLE_DEFAULTS = (
    ("Oct 2023", (1.0, 1.0, 1.0), "scales 20 / 20 / 1"),
    ("Apr 2024", (1.0, 1.0, 1.0), "every scale 20"),
    ("Jul 2024", (0.0, 20.0, 1.0), "every scale 20"),
    ("Jan 2025", (0.0, 1.0, 0.02), "with a new cln_w term"),
)
ANGLE_SOURCE = "angle-emb's released training defaults, by release (dated by the issue 51 review)"
MINILM_SCALE = 20.0  # all-MiniLM-L6-v2 was trained with MNRL at scale 20 (its model card: sentence-transformers)
START_MODEL = (
    f"the start model all-MiniLM-L6-v2 was trained with MNRL at scale {MINILM_SCALE:g} "
    f"(temperature {1 / MINILM_SCALE:g})"
)
ST_ADAPTIVE_ONE_LAYER = 0.80  # sentence-transformers' adaptive-layer docs (not the 2DMSE paper): ~80% from one layer
ST_ADAPTIVE = (86.0, 75.0)  # sentence-transformers docs: mpnet-base on AllNLI, full vs half the layers (AdaptiveLayer)
ST_ADAPTIVE_LAYERS = 12  # mpnet-base's layers
ST_ADAPTIVE_SOURCE = (
    "sentence-transformers' AdaptiveLayerLoss docs (the loss of its adaptive-layer training example, on the 12-layer "
    "mpnet-base trained on AllNLI; not the 2DMSE paper, and not a Matryoshka2d cut of 3 layers)"
)
CLIP = (
    "CLIP (Radford et al. 2021) learns its temperature: a log-parameterised scale initialised at 1/0.07 (14.3) and "
    "clipped at 100"
)
MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
TRAIN_ROWS = {"stsb/train.csv": 5749}  # pairs in the STSB train split (sentence-transformers/stsb, shared/data)

STRENGTH_RULE = strength_rule(
    "the learning rate, a start model trained at scale 20, data size tied to steps or repetition",
    "normalize's cosine arms of mnrl_scale",
)

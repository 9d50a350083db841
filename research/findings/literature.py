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
BGE_ADVICE = (0.01, 0.05)  # the BGE discussion this project started from: fine-tune at 0.01-0.05
BGE_ADVICE_SOURCE = "the BGE discussion this project started from"
FLAG_README = (0.01, 0.1, 0.02)  # FlagEmbedding's fine-tuning README: temperature 0.01-0.1, default 0.02
FLAG_README_SOURCE = "FlagEmbedding's fine-tuning README"
WANG_LIU = "Wang and Liu 2021: a lower temperature gives more uniform embeddings, a higher one more tolerance"
ST_3054 = "sentence-transformers #3054: the maintainers suspect the differences between scales shrink with more data"
ANGLE_PAPER = ((1.0, 1.0, 1.0), (20.0, 20.0, 1.0))  # AnglE paper: w1-w3, scales (temperatures 0.05 / 0.05 / 1.0)
ANGLE_RELEASED = ((0.0, 20.0, 1.0), (20.0, 20.0, 20.0))  # angle-emb training defaults (issue 22): w, all scales 20
ANGLE_SOURCE = "angle-emb's defaults changed between releases (w 1/1/1 first, later 0/1/0.02)"
MINILM_SCALE = 20.0  # all-MiniLM-L6-v2 was trained with MNRL at scale 20 (its model card: sentence-transformers)
START_MODEL = (
    f"the start model all-MiniLM-L6-v2 was trained with MNRL at scale {MINILM_SCALE:g} "
    f"(temperature {1 / MINILM_SCALE:g})"
)
ST_ADAPTIVE_ONE_LAYER = 0.80  # sentence-transformers' adaptive-layer docs (not the 2DMSE paper): ~80% from one layer
ST_ADAPTIVE = (86.0, 75.0)  # sentence-transformers docs: mpnet-base on AllNLI, full vs half the layers (AdaptiveLayer)

STRENGTH_RULE = strength_rule(
    "the learning rate, a start model trained at scale 20, data size tied to steps or repetition",
    "normalize's cosine arms of mnrl_scale",
)

"""This repository's findings page (``results/FINDINGS.md``): its seven questions, their prose and the literature they
compare with, built on the public faces of the package (`sweep.report`, `sweep.stats`) and nothing below them, as a
user's own page would be. Regenerate it from the repository root with ``python -m research.findings``."""

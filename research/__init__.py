"""This repository's research on the scale of contrastive losses, kept apart from the ``sweep`` package: the studies'
configs (``conf/experiment``), the findings page (``findings``), the notebooks, the published ``results`` and the tests
that read them. It calls the package's public faces only, as a user's own project would; nothing here ships in the
wheel.
"""

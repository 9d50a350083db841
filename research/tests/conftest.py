"""Fixtures of the research tests: the product's test fixtures, with this repository's studies (research/conf) on
Hydra's search path, as `python -m sweep --config-dir research/conf` finds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.config.checks import CONFIG_DIR
from tests.conftest import Compose, composer, no_user_state, shared_root

__all__ = ["EXPERIMENTS", "RESEARCH_CONF", "no_user_state", "shared_root"]

RESEARCH_CONF = Path(__file__).resolve().parents[1] / "conf"
# Every experiment: the package's example (sweep/conf/experiment) and this repository's studies.
EXPERIMENTS = sorted(p.stem for root in (Path(CONFIG_DIR), RESEARCH_CONF) for p in (root / "experiment").glob("*.yaml"))


@pytest.fixture
def compose_cfg(tmp_path: Path) -> Compose:
    """compose_cfg(*overrides, tiny=True): the app's config, this repository's studies found, state under tmp_path."""
    return composer(tmp_path, f"hydra.searchpath=[file://{RESEARCH_CONF}]")

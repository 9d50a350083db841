"""Fixtures of the research tests: the product's test fixtures, with this repository's studies (research/conf) on
Hydra's search path, as `python -m sweep --config-dir research/conf` finds them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from sweep.config.checks import CONFIG_DIR
from tests.conftest import TINY, Compose, no_user_state, shared_root

__all__ = ["EXPERIMENTS", "RESEARCH_CONF", "no_user_state", "shared_root"]

RESEARCH_CONF = Path(__file__).resolve().parents[1] / "conf"
# Every experiment: the package's example (sweep/conf/experiment) and this repository's studies.
EXPERIMENTS = sorted(p.stem for root in (Path(CONFIG_DIR), RESEARCH_CONF) for p in (root / "experiment").glob("*.yaml"))


@pytest.fixture
def compose_cfg(tmp_path: Path) -> Compose:
    """compose_cfg(*overrides, tiny=True): the app's config, this repository's studies found, state under tmp_path."""

    def _compose(*overrides: str, tiny: bool = True):
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            search = f"hydra.searchpath=[file://{RESEARCH_CONF}]"
            return compose(
                "config", overrides=[search, *(TINY if tiny else []), f"paths.root={tmp_path / 'runs'}", *overrides]
            )

    return _compose

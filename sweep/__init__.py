"""sweep: experiments on the scale (= 1/temperature) of contrastive sentence-embedding losses.

Also the one piece every lazy package face shares (`lazy_face`, PEP 562): every sub-package's face but
`sweep.config` (whose import registers the schema with Hydra) imports each public name from its module on first use,
so that importing one statistic does not import torch, nor checking a config MLflow."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__version__ = "0.1.0"


def lazy_face(
    package: str, homes: Mapping[str, tuple[str, ...]]
) -> tuple[dict[str, str], Callable[[str], object], Callable[[], list[str]]]:
    """For the face of ``package`` whose public names live in its modules (``homes``: {module: names}): the map
    {name: module} and the module-level ``__getattr__`` and ``__dir__`` that import a name on first use and cache it
    in the face (PEP 562). No public name is a module's name (`tests/test_architecture.py`): importing a submodule
    binds it on its package, where it would hide a public name of the same name."""
    module_of = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> object:
        if name not in module_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module_of[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *module_of})

    return module_of, __getattr__, __dir__

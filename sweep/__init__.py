"""sweep: experiments on the scale (= 1/temperature) of contrastive sentence-embedding losses.

Also the one piece every lazy package face shares (`lazy_face`, PEP 562): `sweep.report` and `sweep.stats` import
each public name from its module on first use, so that importing one statistic does not import torch."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import cast

__version__ = "0.1.0"


class _Face(types.ModuleType):
    """A package face whose public names win over its submodules of the same name: importing
    ``sweep.stats.scale_verdicts`` (the module) does not bind it over the face's ``scale_verdicts`` (the function);
    the module stays in ``sys.modules`` for ``from sweep.stats.scale_verdicts import ...``."""

    _public: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, types.ModuleType) and name in self._public:
            return
        super().__setattr__(name, value)


def lazy_face(
    package: str, homes: Mapping[str, tuple[str, ...]]
) -> tuple[dict[str, str], Callable[[str], object], Callable[[], list[str]]]:
    """For the face of ``package`` whose public names live in its modules (``homes``: {module: names}): the map
    {name: module} and the module-level ``__getattr__`` and ``__dir__`` that import a name on first use and cache it
    in the face. A public name that is also a module's name stays the public name (`_Face`)."""
    module_of = {name: module for module, names in homes.items() for name in names}
    module = sys.modules[package]
    module.__class__ = _Face
    cast(_Face, module)._public = frozenset(module_of)

    def __getattr__(name: str) -> object:
        if name not in module_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module_of[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *module_of})

    return module_of, __getattr__, __dir__

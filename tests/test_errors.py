"""Every exception sweep defines sits under `sweep.errors.SweepError` and keeps the built-in base its callers catch."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from sweep import errors as errors_module
from sweep.errors import ConfigError, DivergenceError, MissingInput, QuestionsError, Refused, SweepError, TrackingOutage

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "sweep"


def defined_classes() -> list[tuple[str, str]]:
    """(module, class name) of every class defined at the top level of a module of the package."""
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text())
        found += [(module, node.name) for node in tree.body if isinstance(node, ast.ClassDef)]
    return found


def test_every_exception_class_of_the_package_derives_from_sweep_error():
    """Errors derive from SweepError; the interrupts (SIGINT/SIGTERM, an aborted pack) stay KeyboardInterrupts, which
    no ``except Exception`` catches, so that every clean-up path runs as for Ctrl-C."""
    classes = [getattr(importlib.import_module(module), name) for module, name in defined_classes()]
    raised = [cls for cls in classes if isinstance(cls, type) and issubclass(cls, BaseException)]
    errors = [cls for cls in raised if not issubclass(cls, KeyboardInterrupt)]
    assert {cls.__name__ for cls in errors} == {*errors_module.__all__}
    assert [cls.__qualname__ for cls in errors if not issubclass(cls, SweepError)] == []
    assert {cls.__name__ for cls in raised if issubclass(cls, KeyboardInterrupt)} == {"Interrupted", "Aborted"}


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (ConfigError("loss.scale", -1, "a positive number"), ValueError),
        (DivergenceError("training loss became NaN/inf at step 3"), RuntimeError),
        (TrackingOutage("server down"), RuntimeError),
        (Refused("a: no results folder there"), ValueError),
        (MissingInput("a: no results folder there"), ValueError),
        (QuestionsError("questions[0].compare: one of best_scale, pooled, interaction, tuned"), ValueError),
    ],
)
def test_each_error_is_a_sweep_error_and_still_the_builtin_its_callers_catch(error, builtin):
    assert isinstance(error, SweepError) and isinstance(error, builtin)


def test_a_config_error_still_says_key_value_and_what_is_allowed_in_one_line():
    error = ConfigError("loss.scale", -1, "a positive number")
    assert str(error) == "loss.scale=-1: a positive number"
    assert (error.key, error.value, error.allowed) == ("loss.scale", -1, "a positive number")

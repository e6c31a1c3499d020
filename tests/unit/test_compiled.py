"""The modules ``setup.py`` compiles with mypyc: the suite runs the compiled ones.

``make`` compiles them in place before the suite (``make compile``); CI sets
``COURTLY_REQUIRE_COMPILED=1`` so that a build that silently fell back to pure Python
fails here instead of measuring and testing something users do not run. ``make
unit-pure`` runs these modules' own tests again on a copy of their source without the
extensions, with ``COURTLY_REQUIRE_PURE=1``: then each must be imported from its ``.py``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def compiled_sources() -> list[str]:
    """``setup.py``'s ``COMPILED`` list, read without running the build."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "COMPILED" for target in node.targets
        ):
            sources = ast.literal_eval(node.value)
            assert isinstance(sources, list)
            return [str(source) for source in sources]
    raise AssertionError("setup.py has no COMPILED list")


def _module_name(source: str) -> str:
    return source.removeprefix("src/").removesuffix(".py").replace("/", ".")


SOURCES = compiled_sources()


def test_the_compiled_list_names_modules_that_exist() -> None:
    assert SOURCES, "setup.py compiles nothing"
    for source in SOURCES:
        assert (ROOT / source).is_file(), source


@pytest.mark.parametrize("source", SOURCES)
def test_a_compiled_module_is_the_one_imported(source: str) -> None:
    """(An extension older than its source never gets here: tests/conftest.py refuses to
    start the suite.)"""
    module = importlib.import_module(_module_name(source))
    path = Path(str(module.__file__))
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    if os.environ.get("COURTLY_REQUIRE_PURE") == "1":  # make unit-pure: before CI's compiled
        assert path.suffix == ".py", f"{module.__name__} runs from {path}: not pure Python"
        assert path.read_bytes() == (ROOT / source).read_bytes()
        return
    if os.environ.get("COURTLY_REQUIRE_COMPILED") == "1":
        assert path.name.endswith(suffixes), f"{module.__name__} runs from {path}: not compiled"
    if path.name.endswith(suffixes):
        assert path.parent == (ROOT / source).parent
    else:
        assert path == ROOT / source

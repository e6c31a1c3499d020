"""courtly's build: pure Python, with the modules every page runs through compiled by mypyc.

The package's metadata is in ``pyproject.toml``; this file only adds the compiled modules.
Each module in :data:`COMPILED` is ordinary typed Python (``mypy --strict`` clean) that
mypyc turns into a C extension beside it; the import system takes the extension before
the ``.py``, and the ``.py`` stays the source of truth and the fallback. The crawler's CPU
per page is about an eighth lower compiled (docs/performance.md, *Compiled hot modules*).

When it compiles: ``COURTLY_MYPYC=1`` requires it (the build fails if mypyc fails),
``COURTLY_MYPYC=0`` never compiles, unset compiles when mypyc can be imported. mypyc needs
the runtime dependencies installed to read their types, so ``make`` installs the package
first (``COURTLY_MYPYC=0``) and then compiles in place::

    COURTLY_MYPYC=1 python setup.py build_ext --inplace

A plain ``pip install .`` builds in an isolated environment without mypy: pure Python,
the same behaviour, slower.
"""

from __future__ import annotations

import os

from setuptools import setup

# The per-page hot path that mypyc compiles as it is (measured in docs/performance.md).
# Left out: modules with async generators or classes that subclass another library's
# (mypyc cannot compile them), and modules whose compiled form measured no faster.
COMPILED = [
    "src/courtly/crawl/links.py",
    "src/courtly/frontier/importance.py",
    "src/courtly/frontier/politeness.py",
    "src/courtly/frontier/prioritiser.py",
    "src/courtly/frontier/traps.py",
    "src/courtly/parse/links.py",
    "src/courtly/store/scheduler.py",
    "src/courtly/url/canonical.py",
    "src/courtly/url/host.py",
    "src/courtly/url/traps.py",
]


def _ext_modules() -> list[object]:
    wanted = os.environ.get("COURTLY_MYPYC", "")
    if wanted == "0":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        if wanted == "1":
            raise
        return []
    return list(mypycify(COMPILED, group_name="courtly", opt_level="3"))


setup(ext_modules=_ext_modules())

"""The suite's order: the longest modules first.

``make test`` runs the suite on two worker processes (pytest-xdist, ``--dist
loadscope --no-loadscope-reorder``): each module (each class, for a test class) is
one unit of work, handed out in collection order to whichever worker is free. Long
units handed out last would leave one worker running alone at the end, so the
modules below, the longest measured (tens of seconds each: audited crawls, kill -9
loops, Redis clusters, the property machine), and any module with a ``slow`` test
are moved to the front, longest first. Within a module the order is unchanged, so
a module-scoped fixture (one crawl whose output several tests check) is still set
up once. A serial run (plain ``pytest``) sees the same order.
"""

from __future__ import annotations

import importlib.machinery
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

HEAVY = (
    "integration/test_crawl.py",
    "integration/test_recrawl_crawl.py",
    "property/test_frontier_machine.py",
    "integration/test_scrapy_addon.py",
    "integration/test_parallel.py",
    "integration/test_crash_resume.py",
    "integration/test_redis_cluster_crawl.py",
    "integration/test_resume_state.py",
    "integration/test_redis_crawl.py",
    "unit/store/test_sqlite_crash.py",
    "unit/fetch/test_machine_ip_gate.py",
    "unit/url/test_joiner.py",
    "integration/test_redis_store.py",
    "integration/test_redis_reshard.py",
    "integration/test_crawl_failpaths.py",
    "integration/test_dashboard_browser.py",
    "integration/test_recrawl_sandbox.py",
)
"""Modules by measured duration on a 2-core machine, longest first."""


def _rank(item: pytest.Item, slow_modules: set[object]) -> int:
    path = item.path.as_posix()
    for rank, tail in enumerate(HEAVY):
        if path.endswith("/tests/" + tail):
            return rank
    return len(HEAVY) if item.path in slow_modules else len(HEAVY) + 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow_modules: set[object] = {item.path for item in items if item.get_closest_marker("slow")}
    ranks = {item.path: _rank(item, slow_modules) for item in items}
    # sorted() is stable: modules keep their collection order within a rank
    items[:] = sorted(items, key=lambda item: ranks[item.path])


# Hypothesis: the examples are the point, not how long one takes on a loaded machine.
# Its deadline (200 ms an example) and its too-slow health check time the machine, not
# the code: off for the whole suite. Example counts and every property stay as written.
settings.register_profile("courtly", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("courtly")


def _stale_extensions() -> list[str]:
    """Compiled modules (``make compile``) older than the source beside them: the import
    system would run the old code in place of the edited source."""
    stale = []
    src = Path(__file__).resolve().parents[1] / "src" / "courtly"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        for extension in src.rglob("*" + suffix):
            source = extension.with_name(extension.name.removesuffix(suffix) + ".py")
            if source.is_file() and source.stat().st_mtime > extension.stat().st_mtime:
                stale.append(str(source.relative_to(src.parents[1])))
    return sorted(stale)


def pytest_configure(config: pytest.Config) -> None:
    stale = _stale_extensions()
    if stale:
        raise pytest.UsageError(
            "edited since they were compiled (run `make compile`): " + ", ".join(stale)
        )

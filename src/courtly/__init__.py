"""courtly: a polite, prioritised, resumable web crawler built around a Mercator-style frontier.

The curated surface: the crawl (``Crawler``, ``CrawlConfig``, ``Page``), the frontier
(``Frontier`` and its records), the stores, and the clock and error seams. Each
subpackage (``courtly.url``, ``courtly.robots``, ``courtly.fetch``, ``courtly.parse``,
``courtly.archive``, ``courtly.sandbox``) has its own public surface too. The names are
imported when first used, so importing the package costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from courtly.clock import Clock, FakeClock, SystemClock
    from courtly.config import CrawlConfig
    from courtly.crawl import Crawler, CrawlSnapshot, CrawlStats, Page, build_crawler
    from courtly.errors import (
        BlockedAddress,
        ConfigError,
        CourtlyError,
        CrawlFailed,
        FetchError,
        InvalidURL,
        StateError,
    )
    from courtly.frontier import (
        AddStatus,
        Candidate,
        Frontier,
        FrontierConfig,
        Lease,
        Outcome,
        OutcomeKind,
    )
    from courtly.store.base import FrontierStore
    from courtly.store.memory import MemoryStore
    from courtly.store.sqlite import SqliteStore

_EXPORTS: Final[dict[str, str]] = {
    "AddStatus": "courtly.frontier",
    "BlockedAddress": "courtly.errors",
    "Candidate": "courtly.frontier",
    "Clock": "courtly.clock",
    "ConfigError": "courtly.errors",
    "CourtlyError": "courtly.errors",
    "CrawlConfig": "courtly.config",
    "CrawlFailed": "courtly.errors",
    "CrawlSnapshot": "courtly.crawl",
    "CrawlStats": "courtly.crawl",
    "Crawler": "courtly.crawl",
    "FakeClock": "courtly.clock",
    "FetchError": "courtly.errors",
    "Frontier": "courtly.frontier",
    "FrontierConfig": "courtly.frontier",
    "FrontierStore": "courtly.store.base",
    "InvalidURL": "courtly.errors",
    "Lease": "courtly.frontier",
    "MemoryStore": "courtly.store.memory",
    "Outcome": "courtly.frontier",
    "OutcomeKind": "courtly.frontier",
    "Page": "courtly.crawl",
    "SqliteStore": "courtly.store.sqlite",
    "StateError": "courtly.errors",
    "SystemClock": "courtly.clock",
    "build_crawler": "courtly.crawl",
}
"""Public name -> the module it lives in, imported on first use."""

__version__ = "0.1.0"

__all__ = [
    "AddStatus",
    "BlockedAddress",
    "Candidate",
    "Clock",
    "ConfigError",
    "CourtlyError",
    "CrawlConfig",
    "CrawlFailed",
    "CrawlSnapshot",
    "CrawlStats",
    "Crawler",
    "FakeClock",
    "FetchError",
    "Frontier",
    "FrontierConfig",
    "FrontierStore",
    "InvalidURL",
    "Lease",
    "MemoryStore",
    "Outcome",
    "OutcomeKind",
    "Page",
    "SqliteStore",
    "StateError",
    "SystemClock",
    "__version__",
    "build_crawler",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562), so that ``import courtly``
    (and so the ``courtly`` command's start, see :mod:`courtly.start`) loads nothing."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'courtly' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

"""courtly: a polite, prioritised, resumable web crawler built around a Mercator-style frontier.

The curated surface: the crawl (``Crawler``, ``CrawlConfig``, ``Page``), the frontier
(``Frontier`` and its records), the stores, and the clock and error seams. Each
subpackage (``courtly.url``, ``courtly.robots``, ``courtly.fetch``, ``courtly.parse``,
``courtly.archive``, ``courtly.sandbox``) has its own public surface too.
"""

from __future__ import annotations

from courtly.clock import Clock, FakeClock, SystemClock
from courtly.config import CrawlConfig
from courtly.crawl import Crawler, CrawlSnapshot, CrawlStats, Page, build_crawler
from courtly.errors import (
    BlockedAddress,
    ConfigError,
    CourtlyError,
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

__version__ = "0.1.0"

__all__ = [
    "AddStatus",
    "BlockedAddress",
    "Candidate",
    "Clock",
    "ConfigError",
    "CourtlyError",
    "CrawlConfig",
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

"""courtly: a polite, prioritised, resumable web crawler built around a Mercator-style frontier."""

from __future__ import annotations

from courtly.clock import Clock, FakeClock, SystemClock
from courtly.errors import (
    BlockedAddress,
    ConfigError,
    CourtlyError,
    FetchError,
    InvalidURL,
    StateError,
)

__version__ = "0.1.0"

__all__ = [
    "BlockedAddress",
    "Clock",
    "ConfigError",
    "CourtlyError",
    "FakeClock",
    "FetchError",
    "InvalidURL",
    "StateError",
    "SystemClock",
    "__version__",
]

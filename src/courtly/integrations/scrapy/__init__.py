"""courtly inside Scrapy: ``ADDONS = {"courtly.integrations.scrapy.CourtlyAddon": 0}``.

The add-on makes courtly's frontier the spider's scheduler (one request in flight
per host, the gap after the end of each response, robots.txt by courtly's RFC 9309
code, Retry-After and back-off, a per-IP cap, state that survives a kill) and
turns Scrapy's own throttles off so nothing throttles twice. See docs/scrapy.md.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from scrapy.settings import BaseSettings

from courtly.integrations.scrapy.middleware import (
    CourtlyDownloaderMiddleware,
    CourtlySpiderMiddleware,
)
from courtly.integrations.scrapy.scheduler import KEY_META, CourtlyScheduler
from courtly.integrations.scrapy.settings import CourtlySettings

__all__ = [
    "FORCED_SETTINGS",
    "KEY_META",
    "CourtlyAddon",
    "CourtlyDownloaderMiddleware",
    "CourtlyScheduler",
    "CourtlySettings",
    "CourtlySpiderMiddleware",
]

log = logging.getLogger(__name__)

_PRIORITY: Final = 50
"""Above ``cmdline`` (40): courtly's politeness is not something a setting turns back on."""
_SCHEDULER: Final = "courtly.integrations.scrapy.scheduler.CourtlyScheduler"
_MIDDLEWARE: Final = "courtly.integrations.scrapy.middleware.CourtlyDownloaderMiddleware"
_SPIDER_MIDDLEWARE: Final = "courtly.integrations.scrapy.middleware.CourtlySpiderMiddleware"

FORCED_SETTINGS: Final[dict[str, Any]] = {
    "DOWNLOAD_DELAY": 0,
    "RANDOMIZE_DOWNLOAD_DELAY": False,
    "AUTOTHROTTLE_ENABLED": False,
    "DOWNLOAD_SLOTS": {},
    "CONCURRENT_REQUESTS_PER_IP": 0,
    "ROBOTSTXT_OBEY": False,
}
"""What the add-on overrides: Scrapy's own throttles and robots.txt middleware."""


class CourtlyAddon:
    """Installs :class:`CourtlyScheduler` and its middleware; disables Scrapy's throttles.

    ``CONCURRENT_REQUESTS_PER_DOMAIN`` is raised to ``CONCURRENT_REQUESTS``: courtly's
    lease already keeps one request per host, and Scrapy's slot must not queue a
    second behind it. Raises :class:`ValueError` for unusable ``COURTLY_*`` settings.
    """

    def update_settings(self, settings: BaseSettings) -> None:
        CourtlySettings.from_settings(settings)  # fail at start, not at the first request
        overridden = [
            name
            for name, value in FORCED_SETTINGS.items()
            if name in settings
            and settings.getpriority(name) not in (None, 0)
            and settings[name] != value
        ]
        if overridden:
            names = ", ".join(overridden)
            log.warning("courtly add-on: ignoring %s (courtly does the pacing)", names)
        settings.set("SCHEDULER", _SCHEDULER, priority=_PRIORITY)
        for name, value in FORCED_SETTINGS.items():
            settings.set(name, value, priority=_PRIORITY)
        concurrency = max(1, settings.getint("CONCURRENT_REQUESTS", 16))
        settings.set("CONCURRENT_REQUESTS_PER_DOMAIN", concurrency, priority=_PRIORITY)
        settings["DOWNLOADER_MIDDLEWARES"][_MIDDLEWARE] = 0
        settings["SPIDER_MIDDLEWARES"][_SPIDER_MIDDLEWARE] = 0

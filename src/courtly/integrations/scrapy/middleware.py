"""The downloader middleware that tells the scheduler about requests it never saw end.

Installed outermost (order 0), so its ``process_response`` and
``process_exception`` run after every other middleware's. A request answered
before the downloader (an HTTP cache hit) or refused by a middleware
(``IgnoreRequest`` from the offsite filter, say) fires no downloader signal; its
lease would otherwise stay open until it expires. Here such a lease ends with no
request made, so the host is free again at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.http import Response

from courtly.integrations.scrapy.scheduler import KEY_META, CourtlyScheduler

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["CourtlyDownloaderMiddleware"]


class CourtlyDownloaderMiddleware:
    """Ends the lease of a request that did not reach the downloader."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CourtlyDownloaderMiddleware:
        return cls(crawler)

    def _scheduler(self) -> CourtlyScheduler | None:
        engine: Any = self.crawler.engine
        scheduler = getattr(engine, "scheduler", None)  # public since Scrapy 2.19
        if scheduler is None:
            scheduler = getattr(getattr(engine, "_slot", None), "scheduler", None)
        return scheduler if isinstance(scheduler, CourtlyScheduler) else None

    def _settle(self, request: Request) -> None:
        if KEY_META in request.meta and (scheduler := self._scheduler()) is not None:
            scheduler.never_downloaded(request)

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        self._settle(request)
        return response

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> None:
        self._settle(request)

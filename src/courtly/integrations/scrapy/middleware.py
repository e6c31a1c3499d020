"""Two middlewares that tell the scheduler what the downloader signals do not.

:class:`CourtlySpiderMiddleware` (outermost, order 0) tags each request a callback
yields with the lease of its response and says when the callback is done: the
lease completes only once those requests are enqueued (durable), so a kill
between the end of a response and its links cannot lose them.

:class:`CourtlyDownloaderMiddleware`:

Installed outermost (order 0), so its ``process_response`` and
``process_exception`` run after every other middleware's. A request answered
before the downloader (an HTTP cache hit) or refused by a middleware
(``IgnoreRequest`` from the offsite filter, say) fires no downloader signal; its
lease would otherwise stay open until it expires. Here such a lease ends with no
request made, so the host is free again at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.http import Response

from courtly.integrations.scrapy.scheduler import KEY_META, CourtlyScheduler

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["CourtlyDownloaderMiddleware", "CourtlySpiderMiddleware"]


def _scheduler_of(crawler: Crawler) -> CourtlyScheduler | None:
    engine: Any = crawler.engine
    scheduler = getattr(engine, "scheduler", None)  # public since Scrapy 2.19
    if scheduler is None:
        scheduler = getattr(getattr(engine, "_slot", None), "scheduler", None)
    return scheduler if isinstance(scheduler, CourtlyScheduler) else None


class CourtlyDownloaderMiddleware:
    """Ends the lease of a request that did not reach the downloader; says which
    responses went on to the spider (the others were dropped by a middleware)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CourtlyDownloaderMiddleware:
        return cls(crawler)

    def _scheduler(self, request: Request) -> CourtlyScheduler | None:
        return _scheduler_of(self.crawler) if KEY_META in request.meta else None

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        if (scheduler := self._scheduler(request)) is not None:
            scheduler.never_downloaded(request)  # answered before the downloader (a cache)
            scheduler.delivered(request)
        return response

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> None:
        if (scheduler := self._scheduler(request)) is not None:
            scheduler.never_downloaded(request)


class CourtlySpiderMiddleware:
    """Reports each request a callback yields, and the end of the callback's output."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CourtlySpiderMiddleware:
        return cls(crawler)

    def _parent(self, response: Response | None) -> tuple[CourtlyScheduler, Request] | None:
        request = getattr(response, "request", None)
        if request is None or KEY_META not in request.meta:
            return None
        scheduler = _scheduler_of(self.crawler)
        return None if scheduler is None else (scheduler, request)

    def process_spider_output(
        self, response: Response | None, result: Iterable[Any], spider: Spider | None = None
    ) -> Iterable[Any]:
        parent = self._parent(response)
        try:
            for item in result:
                if parent is not None and isinstance(item, Request):
                    parent[0].child_yielded(item, parent[1])
                yield item
        finally:
            if parent is not None:
                parent[0].output_done(parent[1])

    async def process_spider_output_async(
        self,
        response: Response | None,
        result: AsyncIterator[Any],
        spider: Spider | None = None,
    ) -> AsyncIterator[Any]:
        parent = self._parent(response)
        try:
            async for item in result:
                if parent is not None and isinstance(item, Request):
                    parent[0].child_yielded(item, parent[1])
                yield item
        finally:
            if parent is not None:
                parent[0].output_done(parent[1])

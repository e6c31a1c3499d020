"""robots.txt for the Scrapy scheduler: courtly's RFC 9309 code, Scrapy's transport.

The scheduler fetches a host's robots.txt under that host's lease, through
:func:`courtly.robots.fetch_robots` (redirects, status classes, size limit) over
:class:`EngineFetcher`, which sends each exchange down Scrapy's downloader (its
middlewares, DNS resolver, proxy and TLS settings apply) with redirects, retries
and status filtering off. Consecutive hops of one robots.txt fetch keep the
politeness gap between them. :func:`robots_outcome` turns the fetch into the
frontier outcome that advances the host's politeness state.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request
from twisted.internet.error import DNSLookupError, TCPTimedOutError, TimeoutError

from courtly.clock import Clock
from courtly.errors import FetchError
from courtly.fetch.records import FetchResult
from courtly.frontier import Outcome, OutcomeKind, PolitenessConfig, politeness_delay_s
from courtly.integrations.scrapy.engine import download
from courtly.robots import RobotsDecision, RobotsFetchOutcome

__all__ = ["ROBOTS_META", "EngineFetcher", "robots_outcome"]

ROBOTS_META = "courtly_robots"
"""Set on the scheduler's own robots.txt requests (the feedback signals skip them)."""


def _error_kind(error: BaseException) -> str:
    if isinstance(error, DNSLookupError):
        return "dns"
    if isinstance(error, TimeoutError | TCPTimedOutError):
        return "timeout"
    return "connect"


class EngineFetcher:
    """A :class:`~courtly.fetch.records.Fetcher` over Scrapy's engine, for one host's lease.

    Each fetch after the first waits out the politeness gap the previous one earned.
    """

    def __init__(
        self, engine: Any, clock: Clock, politeness: PolitenessConfig, download_slot: str
    ) -> None:
        self._engine = engine
        self._clock = clock
        self._politeness = politeness
        self._slot = download_slot
        self._next_at: float | None = None

    async def fetch(self, url: str) -> FetchResult:
        if self._next_at is not None:
            await self._clock.sleep(self._next_at - self._clock.now())
        request = Request(
            url,
            dont_filter=True,
            meta={
                ROBOTS_META: True,
                "download_slot": self._slot,
                "dont_redirect": True,
                "dont_retry": True,
                "handle_httpstatus_all": True,
                "dont_obey_robotstxt": True,
                "dont_merge_cookies": True,
            },
        )
        started = self._clock.now()
        try:
            response = await download(self._engine, request)
        except Exception as error:  # any failure of the exchange: no response came
            self._next_at = self._clock.now() + self._politeness.min_delay_s
            raise FetchError(_error_kind(error), f"{type(error).__name__}: {error}") from error
        ended = self._clock.now()
        headers = tuple(
            (key.decode("latin-1"), value.decode("latin-1"))
            for key, values in response.headers.items()
            for value in values
        )
        gap = politeness_delay_s(ended - started, None, 0.0, self._politeness)
        self._next_at = ended + gap
        return FetchResult(
            url=url,
            status=response.status,
            headers=headers,
            body=response.body,
            started_at=started,
            ended_at=ended,
            ip=str(response.ip_address) if response.ip_address is not None else None,
        )


def robots_outcome(
    fetched: RobotsFetchOutcome, decision: RobotsDecision, user_agent: str, now_at: float
) -> Outcome:
    """The politeness outcome of a robots.txt fetch (its last exchange decides)."""
    if not fetched.results:
        return Outcome(OutcomeKind.NETWORK_ERROR, now_at, now_at)
    last = fetched.results[-1]
    started, ended = fetched.results[0].started_at, last.ended_at
    retry = fetched.retry_after_s(ended)
    crawl_delay = decision.crawl_delay_s(user_agent)
    if fetched.kind == "unreachable" and last.status < 500 and last.status != 429:
        return Outcome(OutcomeKind.SERVER_ERROR, started, ended, last.status, retry, crawl_delay)
    return Outcome.from_status(
        last.status, started, ended, retry_after_s=retry, crawl_delay_s=crawl_delay
    )

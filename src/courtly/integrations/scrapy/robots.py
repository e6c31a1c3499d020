"""robots.txt for the Scrapy scheduler: courtly's RFC 9309 code, Scrapy's transport.

The scheduler fetches a host's robots.txt under that host's lease, through
:func:`courtly.robots.fetch_robots` (redirects, status classes, size limit) over
:class:`EngineFetcher`, which sends each exchange down Scrapy's downloader (its
middlewares, DNS resolver, proxy and TLS settings apply) with redirects, retries
and status filtering off. Consecutive hops of one robots.txt fetch keep the
politeness gap between them (:class:`~courtly.robots_lease.PacedFetcher`), and
:func:`~courtly.robots_lease.robots_outcome` turns the fetch into the frontier outcome
that advances the host's politeness state. :class:`RobotsBook` keeps the decisions:
this process's cache, and the copies in the store (saved by an earlier run, or by another
process of a shared crawl), read once per authority.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request
from twisted.internet.error import DNSLookupError, TCPTimedOutError, TimeoutError

from courtly.clock import Clock
from courtly.errors import FetchError
from courtly.fetch.records import FetchResult
from courtly.frontier import Outcome, PolitenessConfig
from courtly.integrations.scrapy.engine import download
from courtly.robots import Authority, RobotsCache, RobotsDecision, fetch_robots, robots_url_for
from courtly.robots_lease import PacedFetcher, StoredRobots, robots_outcome
from courtly.store.base import FrontierStore

__all__ = ["ROBOTS_META", "EngineFetcher", "RobotsBook", "robots_outcome"]


ROBOTS_META = "courtly_robots"
"""Set on the scheduler's own robots.txt requests (the feedback signals skip them)."""


def _error_kind(error: BaseException) -> str:
    if isinstance(error, DNSLookupError):
        return "dns"
    if isinstance(error, TimeoutError | TCPTimedOutError):
        return "timeout"
    return "connect"


class EngineFetcher:
    """A :class:`~courtly.fetch.records.Fetcher` over Scrapy's engine, for one host's lease
    (one exchange per call: :class:`~courtly.robots_lease.PacedFetcher` keeps the gaps)."""

    def __init__(self, engine: Any, clock: Clock, download_slot: str) -> None:
        self._engine = engine
        self._clock = clock
        self._slot = download_slot

    async def fetch(self, url: str) -> FetchResult:
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
            raise FetchError(_error_kind(error), f"{type(error).__name__}: {error}") from error
        ended = self._clock.now()
        headers = tuple(
            (key.decode("latin-1"), value.decode("latin-1"))
            for key, values in response.headers.items()
            for value in values
        )
        return FetchResult(
            url=url,
            status=response.status,
            headers=headers,
            body=response.body,
            started_at=started,
            ended_at=ended,
            ip=str(response.ip_address) if response.ip_address is not None else None,
        )


class RobotsBook:
    """robots.txt decisions per authority (see the module doc)."""

    def __init__(
        self, clock: Clock, politeness: PolitenessConfig, user_agent: str, *, shared: bool = False
    ) -> None:
        self._clock = clock
        self._shared = shared
        self._politeness = politeness
        self._user_agent = user_agent
        self._stored = StoredRobots(RobotsCache(), clock, shared=shared)

    async def decision(self, store: FrontierStore, authority: Authority) -> RobotsDecision | None:
        """The fresh decision for ``authority``, from the cache or the store; ``None``
        if robots.txt is to be fetched (see :class:`~courtly.robots_lease.StoredRobots`)."""
        return await self._stored.known(store, authority)

    async def fetch(
        self, engine: Any, store: FrontierStore, authority: Authority, download_slot: str
    ) -> Outcome:
        """Fetch ``authority``'s robots.txt through the engine (under its host's lease),
        keep and store the copy; the outcome that advances the host's politeness state."""
        engine_fetcher = EngineFetcher(engine, self._clock, download_slot)
        paced = PacedFetcher(engine_fetcher, self._clock, self._politeness)
        fetched = await fetch_robots(paced, robots_url_for(authority))
        now = self._clock.now()
        decision = await self._stored.keep(store, authority, fetched, now)
        return robots_outcome(
            fetched,
            decision,
            self._user_agent,
            now,
            started_at=paced.started_at,
            ended_at=paced.ended_at,
        )

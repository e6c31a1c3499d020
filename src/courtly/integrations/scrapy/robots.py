"""robots.txt for the Scrapy scheduler: courtly's RFC 9309 code, Scrapy's transport.

The scheduler fetches a host's robots.txt under that host's lease, through
:func:`courtly.robots.fetch_robots` (redirects, status classes, size limit) over
:class:`EngineFetcher`, which sends each exchange down Scrapy's downloader (its
middlewares, DNS resolver, proxy and TLS settings apply) with redirects, retries
and status filtering off. Consecutive hops of one robots.txt fetch keep the
politeness gap between them. :func:`robots_outcome` turns the fetch into the
frontier outcome that advances the host's politeness state. :class:`RobotsBook`
keeps the decisions: this process's cache, and the copies in the store (saved by an
earlier run, or by another process of a shared crawl), read once per authority.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from scrapy import Request
from twisted.internet.error import DNSLookupError, TCPTimedOutError, TimeoutError

from courtly.clock import Clock
from courtly.errors import FetchError, StateError
from courtly.fetch.records import FetchResult
from courtly.frontier import Outcome, OutcomeKind, PolitenessConfig, politeness_delay_s
from courtly.integrations.scrapy.engine import download
from courtly.robots import (
    Authority,
    RobotsCache,
    RobotsDecision,
    RobotsFetchOutcome,
    fetch_robots,
    robots_url_for,
)
from courtly.robots.persist import outcome_from_bytes, outcome_to_bytes
from courtly.store.base import FrontierStore

__all__ = ["ROBOTS_META", "EngineFetcher", "RobotsBook", "robots_outcome"]

log = logging.getLogger(__name__)

_NAMESPACE: Final = "robots"
"""The blob namespace of stored robots.txt copies, keyed by robots.txt URL."""

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


class RobotsBook:
    """robots.txt decisions per authority (see the module doc)."""

    def __init__(
        self, clock: Clock, politeness: PolitenessConfig, user_agent: str, *, shared: bool = False
    ) -> None:
        self._clock = clock
        self._shared = shared
        self._politeness = politeness
        self._user_agent = user_agent
        self._cache = RobotsCache()
        self._restored: set[Authority] = set()

    async def decision(self, store: FrontierStore, authority: Authority) -> RobotsDecision | None:
        """The fresh decision for ``authority``, from the cache or the store; ``None``
        if robots.txt is to be fetched. The store is read once per authority, or, in a
        ``shared`` crawl, whenever the cache has no fresh decision (another process may
        have fetched a newer copy)."""
        decision = self._cache.lookup(authority, self._clock.now())
        if decision is None and (self._shared or authority not in self._restored):
            decision = await self._restore(store, authority)
        return decision

    async def _restore(self, store: FrontierStore, authority: Authority) -> RobotsDecision | None:
        self._restored.add(authority)
        data = await store.get_blob(_NAMESPACE, robots_url_for(authority))
        if not data:
            return None
        try:
            fetched, fetched_at = outcome_from_bytes(data)
        except StateError as error:
            log.warning("%s", error)
            return None
        self._cache.store(authority, fetched, fetched_at)
        return self._cache.lookup(authority, self._clock.now())

    async def fetch(
        self, engine: Any, store: FrontierStore, authority: Authority, download_slot: str
    ) -> Outcome:
        """Fetch ``authority``'s robots.txt through the engine (under its host's lease),
        keep and store the copy; the outcome that advances the host's politeness state."""
        fetcher = EngineFetcher(engine, self._clock, self._politeness, download_slot)
        url = robots_url_for(authority)
        fetched = await fetch_robots(fetcher, url)
        now = self._clock.now()
        decision = self._cache.store(authority, fetched, now)
        saved = outcome_to_bytes(fetched, now)
        if saved is not None:
            await store.put_blob(_NAMESPACE, url, saved)
        return robots_outcome(fetched, decision, self._user_agent, now)

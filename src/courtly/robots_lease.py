"""robots.txt under a host's lease: what the crawl and the Scrapy scheduler share.

:mod:`courtly.robots` knows RFC 9309 and nothing of the frontier; this module is the
bridge, used by :mod:`courtly.crawl.robots_gate` and
:mod:`courtly.integrations.scrapy.robots` alike:

* :class:`PacedFetcher` keeps the politeness gap between the hops of one robots.txt
  fetch (redirects are followed inside one lease);
* :func:`robots_outcome` is the frontier outcome of a robots.txt fetch, which advances the
  host's politeness state when its lease is released;
* :class:`StoredRobots` is one process's decisions: its cache, and the copies in the store
  (saved by an earlier run, or by another process of a shared crawl).
"""

from __future__ import annotations

import logging
import math
from typing import Final

from courtly.clock import Clock
from courtly.errors import FetchError, StateError
from courtly.fetch.records import Fetcher, FetchResult
from courtly.frontier.politeness import PolitenessConfig, politeness_delay_s
from courtly.frontier.records import Outcome, OutcomeKind
from courtly.robots import Authority, RobotsCache, RobotsDecision, robots_url_for
from courtly.robots.fetch import RobotsFetchOutcome
from courtly.robots.persist import (
    FailureRecord,
    failure_from_bytes,
    failure_to_bytes,
    outcome_from_bytes,
    outcome_to_bytes,
)
from courtly.store.base import FrontierStore

__all__ = ["ROBOTS_NAMESPACE", "PacedFetcher", "StoredRobots", "robots_outcome"]

log = logging.getLogger("courtly.robots")

ROBOTS_NAMESPACE: Final = "robots"
"""The blob namespace of stored robots.txt copies, keyed by robots.txt URL."""
_FAILED: Final = " failed"
"""Appended to a robots.txt URL: the blob of its failed fetches (a URL has no space)."""


class PacedFetcher:
    """A fetcher that leaves the politeness gap between its own consecutive requests.

    Each hop is a request like any other, so the next one waits out the delay the previous
    one earned (k x its fetch time, at least the minimum delay; the minimum delay after a
    failure). ``started_at`` and ``ended_at`` are the start and end of the last request
    made, a failed one included (when the failure was seen), so the lease's outcome
    measures the host's gap from the end of the last request, not of the last response,
    and its fetch time is that request's own, not the whole chain's with the gaps
    between its hops.
    """

    def __init__(self, inner: Fetcher, clock: Clock, politeness: PolitenessConfig) -> None:
        self._inner = inner
        self._clock = clock
        self._politeness = politeness
        self._next_at: float | None = None
        self.started_at: float | None = None
        self.ended_at: float | None = None

    async def fetch(self, url: str) -> FetchResult:
        if self._next_at is not None:
            await self._clock.sleep(self._next_at - self._clock.now())
        self.started_at = self._clock.now()
        try:
            result = await self._inner.fetch(url)
        except FetchError:
            self.ended_at = self._clock.now()
            self._next_at = self.ended_at + self._politeness.min_delay_s
            raise
        self.started_at = result.started_at
        self.ended_at = result.ended_at
        gap = politeness_delay_s(result.elapsed_s, None, 0.0, self._politeness)
        self._next_at = result.ended_at + gap
        return result


def robots_outcome(
    fetched: RobotsFetchOutcome,
    decision: RobotsDecision,
    user_agent: str,
    now_at: float,
    *,
    started_at: float | None = None,
    ended_at: float | None = None,
) -> Outcome:
    """The politeness outcome of a robots.txt fetch: its last exchange decides.

    ``started_at`` and ``ended_at`` are the start and end of the last request made (a
    failed hop after the last response included; :attr:`PacedFetcher.started_at` and
    ``ended_at``), by default the last response's: the outcome's fetch time is that one
    request's, as for a page (a redirect chain's earlier hops and the politeness gaps
    between them are no part of it: counted in, they made the gap after a three-hop
    chain about 4 s where the rule asks for 1). A body
    cut short (``unreachable`` below 500, not 429) counts as a server error. With no
    response at all: ``BLOCKED`` when no request to the host may ever be made, else a
    network error.
    """
    if not fetched.results:
        kind = OutcomeKind.BLOCKED if fetched.error_kind == "blocked" else OutcomeKind.NETWORK_ERROR
        return Outcome(kind, now_at, now_at)
    last = fetched.results[-1]
    ended = ended_at if ended_at is not None else last.ended_at
    started = started_at if started_at is not None else last.started_at
    started = min(started, ended)
    retry = fetched.retry_after_s(ended)
    crawl_delay = decision.crawl_delay_s(user_agent)
    if fetched.kind == "unreachable" and last.status < 500 and last.status != 429:
        return Outcome(OutcomeKind.SERVER_ERROR, started, ended, last.status, retry, crawl_delay)
    return Outcome.from_status(
        last.status, started, ended, retry_after_s=retry, crawl_delay_s=crawl_delay
    )


class StoredRobots:
    """robots.txt decisions per authority: this process's cache, backed by the store.

    The store is read once per authority, or, in a ``shared`` crawl, whenever the cache
    has no fresh decision (another process may have fetched a newer copy).
    """

    def __init__(self, cache: RobotsCache, clock: Clock, *, shared: bool) -> None:
        self.cache = cache
        self._clock = clock
        self._shared = shared
        self._restored: set[Authority] = set()

    async def known(self, store: FrontierStore, authority: Authority) -> RobotsDecision | None:
        """The fresh decision for ``authority`` (cached, or restored from the store), if any;
        ``None`` if robots.txt is to be fetched."""
        decision = self.cache.lookup(authority, self._clock.now())
        if decision is None and (self._shared or authority not in self._restored):
            decision = await self._restore(store, authority)
        return decision

    async def keep(
        self,
        store: FrontierStore,
        authority: Authority,
        fetched: RobotsFetchOutcome,
        now_at: float,
    ) -> RobotsDecision:
        """Cache the outcome of a fetch of ``authority``'s robots.txt and store the copy
        (for a resume, and for the other processes of a shared crawl)."""
        decision = self.cache.store(authority, fetched, now_at)
        url = robots_url_for(authority)
        saved = outcome_to_bytes(fetched, now_at)
        if saved is not None:
            await store.put_blob(ROBOTS_NAMESPACE, url, saved)
        elif (failing := self.cache.failure(authority)) is not None:
            failures, since = failing
            record = FailureRecord(failures, since, decision.valid_until_at, now_at)
            await store.put_blob(ROBOTS_NAMESPACE, url + _FAILED, failure_to_bytes(record))
        return decision

    async def _restore(self, store: FrontierStore, authority: Authority) -> RobotsDecision | None:
        """The stored copy and the stored failures (another process's, or an earlier
        run's) into the cache; a failure record older than the copy is out of date."""
        self._restored.add(authority)
        url = robots_url_for(authority)
        data, failed = await store.get_blobs(ROBOTS_NAMESPACE, [url, url + _FAILED])
        fetched_at = -math.inf
        try:
            if data:
                fetched, fetched_at = outcome_from_bytes(data)
                self.cache.store(authority, fetched, fetched_at)
            if failed:
                record = failure_from_bytes(failed)
                if record.decided_at > fetched_at:
                    self.cache.restore_failure(
                        authority,
                        failures=record.failures,
                        outage_since_at=record.outage_since_at,
                        retry_at=record.retry_at,
                        decided_at=record.decided_at,
                    )
        except StateError as error:
            log.warning("%s", error)
        return self.cache.lookup(authority, self._clock.now())

"""robots.txt in the crawl: the decision for a lease's host, fetched under that lease.

A lease whose host's robots.txt is unknown or stale fetches it (the request counts against
the host's politeness like any other), archives every exchange, caches and stores the
decision, and releases the lease with the outcome of its last request: the URL goes back
to the head of its queue. A decision a previous run stored is restored from the store
once per authority (on every miss for a shared store, which other processes fill).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from courtly.clock import Clock
from courtly.errors import FetchError, StateError
from courtly.events import AttemptFailed, EventBus, RobotsResult
from courtly.fetch.records import Fetcher, FetchResult
from courtly.frontier.frontier import Frontier
from courtly.frontier.politeness import PolitenessConfig, parse_retry_after, politeness_delay_s
from courtly.frontier.records import Lease, Outcome, OutcomeKind
from courtly.robots import RobotsCache, RobotsDecision, fetch_robots, robots_url_for
from courtly.robots.persist import outcome_from_bytes, outcome_to_bytes
from courtly.store.base import FrontierStore

__all__ = ["PacedFetcher", "RobotsGate"]

log = logging.getLogger("courtly.crawl")

Authority = tuple[str, str, int]


class RobotsGate:
    """The robots.txt decisions of one crawl process (see the module doc).

    ``archive`` writes an exchange to the crawl's WARC; ``fetcher`` is the robots.txt
    fetcher (shorter timeout), set once the crawl has one.
    """

    def __init__(
        self,
        *,
        cache: RobotsCache,
        store: FrontierStore,
        frontier: Frontier,
        events: EventBus,
        clock: Clock,
        user_agent: str,
        shared: bool,
        archive: Callable[[FetchResult], object],
    ) -> None:
        self.cache = cache
        self.fetcher: Fetcher | None = None
        self._store = store
        self._frontier = frontier
        self._events = events
        self._clock = clock
        self._ua = user_agent
        self._shared = shared
        self._archive = archive
        self._restored: set[Authority] = set()

    async def known(self, authority: Authority) -> RobotsDecision | None:
        """The fresh decision for ``authority`` (cached, or restored from the store), if any."""
        decision = self.cache.lookup(authority, self._clock.now())
        if decision is None and (self._shared or authority not in self._restored):
            decision = await self._restore(authority)
        return decision

    async def _restore(self, authority: Authority) -> RobotsDecision | None:
        """The robots.txt decision a previous run stored for ``authority``, if still fresh."""
        self._restored.add(authority)
        data = await self._store.get_blob("robots", robots_url_for(authority))
        if data is None:
            return None
        try:
            outcome, fetched_at = outcome_from_bytes(data)
        except StateError as error:
            log.warning("%s", error)
            return None
        self.cache.store(authority, outcome, fetched_at)
        return self.cache.lookup(authority, self._clock.now())

    async def fetch(self, lease: Lease, authority: Authority) -> RobotsDecision | None:
        """Fetch ``authority``'s robots.txt under ``lease`` and release the lease with the
        outcome; returns the decision when robots.txt was read (``ok``), else ``None``."""
        assert self.fetcher is not None
        politeness = self._frontier.config.politeness
        paced = PacedFetcher(self.fetcher, self._clock, politeness)
        outcome = await fetch_robots(paced, robots_url_for(lease.url))
        for result in outcome.results:
            self._archive(result)
        now = self._clock.now()
        decision = self.cache.store(authority, outcome, now)
        answer = "blocked" if outcome.error_kind == "blocked" else decision.kind
        self._events.publish(RobotsResult(now, lease.host_key, answer, True))
        saved = outcome_to_bytes(outcome, now)
        if saved is not None:
            await self._store.put_blob("robots", robots_url_for(lease.url), saved)
        if outcome.results:
            last = outcome.results[-1]
            started = outcome.results[0].started_at
            # The end of the last request, a failed hop after the last response included.
            ended = paced.ended_at if paced.ended_at is not None else last.ended_at
            retry = parse_retry_after(last.header("Retry-After"), ended)
            crawl_delay = decision.crawl_delay_s(self._ua)
            if outcome.kind == "unreachable" and last.status < 500 and last.status != 429:
                kind = OutcomeKind.SERVER_ERROR  # e.g. a truncated body
                result_outcome = Outcome(kind, started, ended, last.status, retry, crawl_delay)
            else:
                result_outcome = Outcome.from_status(
                    last.status, started, ended, retry_after_s=retry, crawl_delay_s=crawl_delay
                )
        elif outcome.error_kind == "blocked":  # no request to this host can ever be made
            self._events.publish(AttemptFailed(now, lease.host_key, "robots_blocked"))
            result_outcome = Outcome(OutcomeKind.BLOCKED, now, now)
        else:
            self._events.publish(AttemptFailed(now, lease.host_key, "robots_unreachable"))
            result_outcome = Outcome(OutcomeKind.NETWORK_ERROR, now, now)
        await self._frontier.release(lease, result_outcome)
        if result_outcome.kind is OutcomeKind.THROTTLED:
            await self._store.flush()  # keep the back-off across a crash (see the page's retry)
        return decision if outcome.kind == "ok" else None


class PacedFetcher:
    """A fetcher that leaves the politeness gap between its own consecutive requests.

    robots.txt redirects are followed inside one lease; each hop is a request
    like any other, so the next one waits out the delay the previous one earned.
    ``ended_at`` is the end of the last request made, a failed one included (when
    the failure was seen), so the lease's outcome measures the host's gap from the
    end of the last request, not of the last response.
    """

    def __init__(self, inner: Fetcher, clock: Clock, politeness: PolitenessConfig) -> None:
        self._inner = inner
        self._clock = clock
        self._politeness = politeness
        self._next_at: float | None = None
        self.ended_at: float | None = None

    async def fetch(self, url: str) -> FetchResult:
        if self._next_at is not None:
            await self._clock.sleep(self._next_at - self._clock.now())
        try:
            result = await self._inner.fetch(url)
        except FetchError:
            self.ended_at = self._clock.now()
            self._next_at = self.ended_at + self._politeness.min_delay_s
            raise
        self.ended_at = result.ended_at
        gap = politeness_delay_s(result.elapsed_s, None, 0.0, self._politeness)
        self._next_at = result.ended_at + gap
        return result

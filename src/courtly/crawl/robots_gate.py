"""robots.txt in the crawl: the decision for a lease's host, fetched under that lease.

A lease whose host's robots.txt is unknown or stale fetches it (the request counts against
the host's politeness like any other), archives every exchange, caches and stores the
decision, and releases the lease with the outcome of its last request: the URL goes back
to the head of its queue. A decision a previous run stored is restored from the store
once per authority (on every miss for a shared store, which other processes fill). The
pacing of the hops, the outcome and the stored copies are :mod:`courtly.robots_lease`'s,
shared with the Scrapy scheduler.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from courtly.clock import Clock
from courtly.events import AttemptFailed, EventBus, RobotsResult
from courtly.fetch.records import Fetcher, FetchResult
from courtly.frontier.frontier import Frontier
from courtly.frontier.records import Lease, Outcome, OutcomeKind
from courtly.robots import Authority, RobotsCache, RobotsDecision, fetch_robots, robots_url_for
from courtly.robots_lease import PacedFetcher, StoredRobots, robots_outcome
from courtly.store.base import FrontierStore

log = logging.getLogger("courtly.crawl")

__all__ = ["PacedFetcher", "RobotsGate"]


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
        self._stored = StoredRobots(cache, clock, shared=shared)
        self.cache = cache
        self.fetcher: Fetcher | None = None
        self._store = store
        self._frontier = frontier
        self._events = events
        self._clock = clock
        self._ua = user_agent
        self._archive = archive

    async def known(self, authority: Authority) -> RobotsDecision | None:
        """The fresh decision for ``authority`` (cached, or restored from the store), if any."""
        return await self._stored.known(self._store, authority)

    async def fetch(self, lease: Lease, authority: Authority) -> RobotsDecision | None:
        """Fetch ``authority``'s robots.txt under ``lease`` and release the lease with the
        outcome; returns the decision when robots.txt was read (``ok``), else ``None``."""
        assert self.fetcher is not None
        politeness = self._frontier.config.politeness
        paced = PacedFetcher(self.fetcher, self._clock, politeness)
        outcome = await fetch_robots(paced, robots_url_for(lease.url))
        for result in outcome.results:
            self._archive(result)
        if outcome.error_kind == "lease_expired":
            # the lease ran out before a request could start (courtly.fetch.deadline): no
            # verdict on robots.txt; the lease goes back as the hops made left the host
            last = outcome.results[-1] if outcome.results else None
            made = (
                None
                if last is None
                else Outcome.from_status(last.status, last.started_at, last.ended_at)
            )
            await self._frontier.release(lease, made)
            return None
        now = self._clock.now()
        decision = await self._stored.keep(self._store, authority, outcome, now)
        answer = "blocked" if outcome.error_kind == "blocked" else decision.kind
        self._events.publish(RobotsResult(now, lease.host_key, answer, True))
        result_outcome = robots_outcome(
            outcome, decision, self._ua, now, started_at=paced.started_at, ended_at=paced.ended_at
        )
        if not outcome.results:  # no request to this host was answered
            reason = "robots_blocked" if outcome.error_kind == "blocked" else "robots_unreachable"
            detail = outcome.error
            if detail and outcome.final_url not in detail:
                detail = f"{outcome.final_url}: {detail}"
            log.info("%s: %s", reason, detail or outcome.final_url)
            self._events.publish(AttemptFailed(now, lease.host_key, reason, detail))
        await self._frontier.release(lease, result_outcome)
        if result_outcome.kind is OutcomeKind.THROTTLED:
            await self._store.flush()  # keep the back-off across a crash (see the page's retry)
        return decision if outcome.kind == "ok" else None

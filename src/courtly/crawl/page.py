"""One page under its lease: fetch, archive, read, complete (or retry).

The page pipeline, after robots.txt allowed the URL (:mod:`courtly.crawl.robots_gate`):
one GET (no redirects followed); a network error or a 5xx/429 is retried while attempts
are left (:mod:`courtly.frontier.retry`), with its back-off committed at once; otherwise
the exchange is archived to WARC, its links are read (:mod:`courtly.crawl.links`), URLs
other partitions own are forwarded, and ``complete`` stores, atomically, the host's new
politeness state, the discovered URLs and the catalogue entries. What happened is
published on the events bus (the crawl's counters are a subscriber, :mod:`courtly.crawl.stats`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import xxhash

from courtly.archive.catalogue import CatalogueEntry, fail_reason_for_status
from courtly.archive.warc import WarcWriter
from courtly.clock import Clock
from courtly.crawl.links import LinkAdmission
from courtly.crawl.records import OnPage, Page
from courtly.errors import FetchError
from courtly.events import (
    AttemptFailed,
    AttemptRetried,
    EventBus,
    FetchDone,
    PageDone,
    UrlsSkipped,
)
from courtly.fetch.records import Fetcher, FetchResult
from courtly.frontier.frontier import Frontier
from courtly.frontier.politeness import parse_retry_after
from courtly.frontier.records import AddStatus, Lease, Outcome, OutcomeKind, QueuedUrl
from courtly.page_budget import FetchClaims
from courtly.robots import RobotsDecision
from courtly.store.base import FrontierStore

if TYPE_CHECKING:
    from courtly.crawl.seeds import SeedScope
    from courtly.recrawl import Recrawl  # loads numpy: imported only by a recrawl

__all__ = ["PagePipeline", "drop_reasons"]

log = logging.getLogger("courtly.crawl")

Forward = Callable[
    [Sequence[QueuedUrl], str | None, Sequence[QueuedUrl], Sequence[float]],
    Awaitable[list[QueuedUrl]],
]
"""Hand the entries another partition owns to it (durably), and a page's links to other
partitions' hosts with their cash (``PageFacts.forwarded``); return the ones owned here."""


class PagePipeline:
    """Fetches and completes the pages of one crawl process (see the module doc).

    ``fetcher`` and ``warc`` are set when the crawl runs; ``forward`` is ``None`` for a
    crawl that is not partitioned. ``seeds`` (:class:`courtly.crawl.seeds.SeedScope`)
    is asked about a page before its links are read, and told of a seed's redirect
    target; ``None`` for an ``any`` scope.
    """

    def __init__(
        self,
        *,
        frontier: Frontier,
        store: FrontierStore,
        events: EventBus,
        clock: Clock,
        claims: FetchClaims,
        links: LinkAdmission,
        user_agent: str,
        recrawl: Recrawl | None,
        on_page: OnPage | None,
        forward: Forward | None,
        seeds: SeedScope | None = None,
    ) -> None:
        self.fetcher: Fetcher | None = None
        self.warc: WarcWriter | None = None
        self._frontier = frontier
        self._store = store
        self._events = events
        self._clock = clock
        self._claims = claims
        self._links = links
        self._ua = user_agent
        self._recrawl = recrawl
        self._on_page = on_page
        self._forward = forward
        self._seeds = seeds

    async def run(self, lease: Lease, decision: RobotsDecision) -> None:
        """Fetch ``lease.url`` (robots.txt allowed it) and complete or retry the lease."""
        assert self.fetcher is not None
        crawl_delay = decision.crawl_delay_s(self._ua)
        recrawl = self._recrawl
        try:
            if recrawl is not None:
                result = await recrawl.fetch(self.fetcher, lease.url)
            else:
                result = await self.fetcher.fetch(lease.url)
        except FetchError as error:
            await self._failed(lease, error, crawl_delay)
            return
        raw_size = len(result.raw_body or result.body)
        publish = self._events.publish
        host_key = lease.host_key
        status = result.status
        publish(FetchDone(result.ended_at, host_key, status, None, result.elapsed_s, raw_size))
        visit = None
        if recrawl is not None:
            visit, position = await recrawl.visited(lease, result, self.warc)
            await recrawl.save()
        else:
            position = self.archive(result)
        retry_after = parse_retry_after(result.header("Retry-After"), result.ended_at)
        outcome = Outcome.from_status(
            status,
            result.started_at,
            result.ended_at,
            retry_after_s=retry_after,
            crawl_delay_s=crawl_delay,
        )
        if result.interrupted:
            # The connection broke mid-body: an answer, but not whole (a server fault
            # for politeness, as a truncated robots.txt is); retried like a 5xx.
            publish(AttemptFailed(result.ended_at, host_key, "interrupted"))
            outcome = dataclasses.replace(outcome, kind=OutcomeKind.SERVER_ERROR)
        elif outcome.kind is not OutcomeKind.SUCCESS:
            publish(AttemptFailed(result.ended_at, host_key, f"http_{status}"))
        if log.isEnabledFor(logging.INFO):
            log.info(
                "%s %d in %.3f s, %d bytes", lease.url, status, result.elapsed_s, len(result.body)
            )
        fail_reason = "interrupted" if result.interrupted else fail_reason_for_status(status)
        if self._frontier.retries(lease, outcome):
            # 5xx/429: the URL returns to the head of its queue with one more attempt
            # counted, and the host waits out the back-off (Retry-After); the last
            # attempt is kept as any response (see courtly.frontier.retry).
            await self._retry(lease, outcome, fail_reason)
            return
        self._claims.made_page(asyncio.current_task())  # its unit of --max-pages is spent
        if status == 304 and visit is not None:  # not modified: the stored copy stands
            publish(PageDone(result.ended_at, host_key, status, False))
            await self.complete(lease, outcome, (), ())
            return
        # an exact duplicate (same main text as another URL read first): its links were taken
        follow = visit is None or visit.state.duplicate_of is None
        seeds = self._seeds
        if seeds is not None:
            await seeds.check_page(lease.url, lease.depth)
        facts = self._links.read(lease.url, lease.depth, result, follow=follow)
        if seeds is not None and facts.seed is not None:
            await seeds.add(facts.seed)  # a seed's redirect target (its site is in scope)
        publish(PageDone(result.ended_at, host_key, status, facts.redirect_to is not None))
        discovered = facts.queued
        if self._forward is not None and (discovered or facts.forwarded):
            discovered = await self._forward(
                discovered, lease.url, facts.forwarded, facts.forwarded_cash
            )
        page_entry = CatalogueEntry(
            lease.url,
            status=status,
            fetched_at=result.ended_at,
            depth=lease.depth,
            content_type=result.header("Content-Type"),
            content_hash=xxhash.xxh3_64_intdigest(result.body),
            content_bytes=len(result.body),
            raw_bytes=raw_size,
            elapsed_s=result.elapsed_s,
            warc_file=position[0] if position else None,
            warc_offset=position[1] if position else None,
            warc_length=position[2] if position else None,
            redirect_to=facts.redirect_to,
            canonical=facts.canonical,
            title=facts.title,
            noindex=facts.noindex,
            etag=result.header("ETag"),
            last_modified=result.header("Last-Modified"),
            change_count=visit.state.changes if visit is not None else 0,
            fail_reason=fail_reason,
        )
        statuses = await self.complete(lease, outcome, discovered, (page_entry, *facts.skipped))
        reasons = facts.skip_reasons
        if statuses is not None and discovered:
            self._links.note(discovered, statuses)
            reasons.extend(drop_reasons(statuses))  # the store catalogued the newly queued ones
        if reasons:
            publish(UrlsSkipped(result.ended_at, tuple(reasons)))
        if facts.chains:
            self._links.settle_walks(lease.url, facts.chains, discovered, statuses)
        if self._on_page is not None:
            page = Page(
                lease.url,
                status,
                lease.depth,
                result.headers,
                result.body,
                facts.links,
                result.ended_at,
                result.elapsed_s,
                result.truncated,
            )
            maybe = self._on_page(page)
            if inspect.isawaitable(maybe):
                await maybe

    async def _failed(self, lease: Lease, error: FetchError, crawl_delay: float | None) -> None:
        """No response: retried while attempts are left, else catalogued as failed. A
        request not sent because its lease ran out (``lease_expired``) is no attempt: the
        lease is given back as it is (fenced if it was reclaimed meanwhile)."""
        if error.kind == "lease_expired":
            log.info("%s not fetched: %s", lease.url, error)
            self._events.publish(AttemptFailed(self._clock.now(), lease.host_key, error.kind))
            await self._frontier.release(lease)
            return
        if self._recrawl is not None:
            await self._recrawl.visited(lease, None, None)
        now = self._clock.now()
        self._events.publish(
            FetchDone(now, lease.host_key, None, error.kind, now - lease.leased_at, 0, str(error))
        )
        kind = OutcomeKind.NETWORK_ERROR
        if error.kind in ("blocked", "too_long_url"):
            kind = OutcomeKind.NO_REQUEST
        outcome = Outcome(kind, lease.leased_at, now, crawl_delay_s=crawl_delay)
        log.info("%s failed: %s (%s)", lease.url, error.kind, error)
        if self._frontier.retries(lease, outcome):
            await self._retry(lease, outcome, error.kind)
            return
        entry = CatalogueEntry(
            lease.url,
            depth=lease.depth,
            fetched_at=now,
            skip_reason=f"error:{error.kind}",
            fail_reason=error.kind,
        )
        await self.complete(lease, outcome, (), (entry,))

    async def _retry(self, lease: Lease, outcome: Outcome, fail_reason: str | None) -> None:
        """A failed attempt to be made again later (see :mod:`courtly.frontier.retry`)."""
        self._events.publish(
            AttemptRetried(self._clock.now(), lease.host_key, fail_reason, lease.url)
        )
        # Catalogued as not fetched (no status) but why; replaced once it is fetched.
        entry = CatalogueEntry(lease.url, depth=lease.depth, fail_reason=fail_reason)
        await self._store.record([entry])
        if self._recrawl is not None:
            # its recrawl row is out while the retry waits: never queued a second time
            until = self._frontier.next_host_state(lease, outcome).next_allowed_at
            await self._recrawl.retrying(lease, until)
        await self._frontier.retry(lease, outcome)
        # Commit the back-off and the attempt now: a crash in the commit window would
        # otherwise forget them, and the resumed crawl would ask again inside the gap.
        await self._store.flush()

    async def complete(
        self,
        lease: Lease,
        outcome: Outcome,
        discovered: Sequence[QueuedUrl],
        records: Sequence[CatalogueEntry],
    ) -> list[AddStatus] | None:
        """Complete ``lease`` (the frontier's ``complete``); ``None`` if it was fenced."""
        statuses = await self._frontier.complete(lease, outcome, discovered, records)
        if statuses is None:
            log.info("lease on %s expired before completion; result discarded", lease.host_key)
        return statuses

    def archive(self, result: FetchResult) -> tuple[str, int, int] | None:
        """Write the exchange to the WARC; its ``(file, offset, length)``, if archived."""
        if self.warc is None:
            return None
        # write_exchange returns once the records are with the OS, so the catalogue never
        # commits a pointer past the end of a WARC that a killed process leaves behind.
        position = self.warc.write_exchange(result)
        return (position.filename, position.offset, position.length)


def drop_reasons(statuses: Sequence[AddStatus]) -> list[str]:
    """The skip reason of each URL the store dropped (budget, retired host)."""
    reasons: list[str] = []
    for status in statuses:
        if status is AddStatus.OVER_HOST_BUDGET or status is AddStatus.OVER_CRAWL_BUDGET:
            reasons.append("budget")
        elif status is AddStatus.HOST_RETIRED:
            reasons.append("host_retired")
    return reasons

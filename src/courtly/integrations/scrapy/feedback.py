"""Completion and feedback: what the downloader's signals and the middlewares report.

Synchronous handlers, on the engine's loop. ``request_reached_downloader`` is the
start of the request (the start-lag sample); ``response_downloaded`` gives the
status and ``Retry-After``; ``request_left_downloader`` (success or failure) is
the end of the response: the status, ``Retry-After``, Crawl-delay and the time
from start to end become the :class:`~courtly.frontier.Outcome` that fixes the
host's next time, and the address place is freed. The lease itself completes once
the spider is done with the response: its callback has yielded everything
(:meth:`Feedback.output_done`) and each request it yielded is enqueued
(``request_scheduled``), or after :data:`SCRAPE_GRACE_S`. A request that never
reached the downloader (:meth:`Feedback.never_downloaded`) completes with no
request made. A response a downloader middleware turns into an exception in its
``process_response`` (``IgnoreRequest`` at the end of a too long redirect chain, or
for a body too large once decompressed; a redirect to ``javascript:``), downloaded or
answered from a cache, reaches neither the spider nor any signal: only the request's
errback sees it. So a request is handed to the engine with :class:`ErrbackEndsLease`
as its errback, which ends the lease then (its host was held for the grace before,
or, for an answer from a cache, until the lease expired). Anything else lost is
covered by the lease's expiry.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from scrapy import Request
from scrapy.http import Response
from twisted.python.failure import Failure

from courtly.clock import Clock
from courtly.frontier import Outcome, OutcomeKind, parse_retry_after
from courtly.integrations.scrapy.held import KEY_META, PARENT_META, Held
from courtly.integrations.scrapy.pipeline import Pipeline
from courtly.integrations.scrapy.stats import SchedulerStats

__all__ = ["SCRAPE_GRACE_S", "ErrbackEndsLease", "Feedback", "own_errback"]

SCRAPE_GRACE_S: Final = 30.0
"""A lease whose response the spider has not finished with after this long completes anyway."""


class ErrbackEndsLease:
    """The errback of a leased request handed to the engine (see the module doc): a
    failure ends the lease of a request whose answer did not reach the spider, then goes
    to the request's own errback (``original``), or back to Scrapy when it has none,
    which then does what it does without an errback."""

    __slots__ = ("_feedback", "_key", "original")

    def __init__(self, feedback: Feedback, key: str, original: Any) -> None:
        self._feedback = feedback
        self._key = key
        self.original = original

    def __call__(self, failure: Failure) -> Any:
        self._feedback.failed(self._key)
        return failure if self.original is None else self.original(failure)


def own_errback(request: Request) -> None:
    """Give ``request`` back its own errback if it carries an :class:`ErrbackEndsLease`
    (a redirect or retry copies it from the request it replaces)."""
    errback = request.errback
    if isinstance(errback, ErrbackEndsLease):
        request.errback = errback.original


class Feedback:
    """The signal handlers and middleware hooks of one scheduler (see the module doc)."""

    def __init__(
        self, pipeline: Pipeline, stats: SchedulerStats, user_agent: str, clock: Clock
    ) -> None:
        self._pipe = pipeline
        self._stats = stats
        self._user_agent = user_agent
        self._clock = clock

    def _held_for(self, request: Request) -> Held | None:
        key = request.meta.get(KEY_META)
        return self._pipe.held.get(key) if isinstance(key, str) else None

    def reached(self, request: Request, **_: Any) -> None:
        """``request_reached_downloader``."""
        held = self._held_for(request)
        if held is None:
            return
        now = self._clock.now()
        held.started_at = now
        self._stats.started(held, now)

    def downloaded(self, response: Response, request: Request, **_: Any) -> None:
        """``response_downloaded``: the raw status and ``Retry-After``."""
        held = self._held_for(request)
        if held is None:
            return
        held.status = response.status
        header = response.headers.get(b"Retry-After")
        if header is not None:
            held.retry_after_s = parse_retry_after(header.decode("latin-1"), self._clock.now())

    def left(self, request: Request, **_: Any) -> None:
        """``request_left_downloader``: the end of the response (or of the failure)."""
        held = self._held_for(request)
        if held is None or held.started_at is None:
            return
        now = self._clock.now()
        crawl_delay = held.decision.crawl_delay_s(self._user_agent) if held.decision else None
        if held.status is None:
            outcome = Outcome(
                OutcomeKind.NETWORK_ERROR, held.started_at, now, crawl_delay_s=crawl_delay
            )
            self._stats.inc("network_errors")
        else:
            outcome = Outcome.from_status(
                held.status,
                held.started_at,
                now,
                retry_after_s=held.retry_after_s,
                crawl_delay_s=crawl_delay,
            )
            if outcome.kind is OutcomeKind.THROTTLED:
                self._stats.inc("throttled")
        self._stats.inc("completed")
        pipe = self._pipe
        pipe.release_ip(held)
        if held.status is None:
            pipe.finish(held, outcome)  # no response: nothing goes to the spider
            return
        # The host's next time is fixed now (from this end); the lease itself completes
        # once the callback's requests are enqueued, so a kill cannot lose them, and the
        # host keeps its place (its back queue holds those links before it is released).
        held.outcome = outcome
        pipe.held.pop(held.lease.url, None)
        pipe.scraping[held.lease.url] = held
        asyncio.get_running_loop().call_later(SCRAPE_GRACE_S, self._settle, held, True)

    def child_yielded(self, request: Request, parent: Request) -> None:
        """The callback of ``parent``'s response yielded ``request`` (spider middleware)."""
        key = parent.meta.get(KEY_META)
        held = self._pipe.scraping.get(key) if isinstance(key, str) else None
        if held is not None:
            request.meta[PARENT_META] = key
            held.children += 1

    def output_done(self, parent: Request) -> None:
        """The callback of ``parent``'s response has yielded everything (spider middleware)."""
        key = parent.meta.get(KEY_META)
        held = self._pipe.scraping.get(key) if isinstance(key, str) else None
        if held is not None:
            held.output_done = True
            self._settle(held)

    def scheduled(self, request: Request, **_: Any) -> None:
        """A request reached the engine's scheduling step (``request_scheduled``: sent
        before a handler such as the offsite filter may drop it, and just before
        ``enqueue_request``)."""
        parent = request.meta.pop(PARENT_META, None)
        held = self._pipe.scraping.get(parent) if isinstance(parent, str) else None
        if held is not None:
            held.children -= 1
            self._settle(held)

    def _settle(self, held: Held, late: bool = False, *, done: bool = False) -> None:
        """The spider is done with ``held``'s response once its callback has yielded
        everything and each request it yielded is enqueued (or after the grace)."""
        if held.outcome is None or self._pipe.scraping.get(held.lease.url) is not held:
            return
        if late:
            self._stats.inc("completed_late")
        elif not done and (not held.output_done or held.children > 0):
            return
        self._stats.scraped(self._clock.now() - held.outcome.ended_at)
        self._pipe.settle(held)

    def delivered(self, request: Request) -> None:
        """``request``'s response left the downloader middlewares for the engine (called
        by the outermost downloader middleware): the spider gets it."""
        key = request.meta.get(KEY_META)
        held = self._pipe.scraping.get(key) if isinstance(key, str) else None
        if held is not None:
            held.delivered = True

    def handing(self, request: Request, key: str) -> None:
        """``request``, leased under ``key``, goes to the engine: its errback ends the lease
        if its answer fails on the way to the spider (:class:`ErrbackEndsLease`)."""
        own_errback(request)
        request.errback = ErrbackEndsLease(self, key, request.errback)

    def failed(self, key: str) -> None:
        """The errback of ``key``'s request got a failure (:class:`ErrbackEndsLease`). A
        response that never reached the spider: the spider will not be done with it. An
        answer from before the downloader (a cache): no request was made. A failure of
        the download itself ended the lease already (``request_left_downloader``)."""
        held = self._pipe.scraping.get(key)
        if held is None:
            self._never_downloaded(key)
        elif not held.delivered:
            self._stats.inc("responses_dropped")
            self._settle(held, done=True)

    def copy_enqueued(self, key: str) -> None:
        """A copy of the request leased under ``key`` was enqueued (redirect, retry)."""
        scraping = self._pipe.scraping.get(key)
        if scraping is not None:
            self._settle(scraping, done=True)  # redirected or retried: no callback
        elif key in self._pipe.held:
            self._never_downloaded(key)

    def never_downloaded(self, request: Request) -> None:
        """A middleware answered, dropped or replaced ``request`` before the downloader:
        its lease ends with no request made (called by the downloader middleware)."""
        key = request.meta.get(KEY_META)
        if isinstance(key, str):
            self._never_downloaded(key)

    def _never_downloaded(self, key: str) -> None:
        held = self._pipe.held.get(key)
        if held is None or held.handed_at is None or held.started_at is not None:
            return
        self._stats.inc("not_downloaded")
        self._pipe.release_ip(held)
        self._pipe.finish(held, Outcome.no_request(self._clock.now()))

"""The crawl's counters, kept by a subscriber of its events bus (:mod:`courtly.events`).

Nothing in the crawl bumps a counter: it publishes what happened (a fetch done, a page
made, URLs skipped, an attempt failed or retried, a robots.txt result, a lease that
expired) and :class:`CrawlStats` counts it, as the dashboard's tally does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from courtly.events import (
    AttemptFailed,
    AttemptRetried,
    Event,
    FetchDone,
    LeaseExpired,
    PageDone,
    RobotsResult,
    UrlsSkipped,
)

__all__ = ["STATS_EVENTS", "CrawlStats"]

STATS_EVENTS: tuple[type[Event], ...] = (
    FetchDone,
    PageDone,
    UrlsSkipped,
    AttemptFailed,
    AttemptRetried,
    RobotsResult,
    LeaseExpired,
)
"""The kinds of event :class:`CrawlStats` reads (subscribe it to these only)."""


@dataclass(slots=True)
class CrawlStats:
    """Live counters of one run (mutable; read a :class:`~courtly.crawl.CrawlSnapshot` for a
    stable view), fed by :meth:`notify`."""

    started_at: float = 0.0
    pages: int = 0
    """Pages fetched and completed (a 429/503 that is retried is counted in ``retries``)."""
    robots_fetches: int = 0
    bytes_received: int = 0
    """Bytes of page responses as they came over the wire (robots.txt not included)."""
    redirects: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    fenced: int = 0
    """Results discarded because their lease had expired (a completion or a release)."""
    retries: int = 0
    error_examples: dict[str, str] = field(default_factory=dict)
    """The first message of each kind of error in ``errors`` that has one (a TLS
    certificate refused, a name that does not resolve...): what a count cannot say."""

    def notify(self, event: Event) -> None:
        kind = type(event)
        if kind is FetchDone:
            assert isinstance(event, FetchDone)
            if event.status is not None:
                self.statuses[event.status] += 1
                self.bytes_received += event.size_bytes
            elif event.error is not None:
                self.errors[event.error] += 1
                if event.detail is not None:
                    self.error_examples.setdefault(event.error, event.detail)
        elif kind is PageDone:
            assert isinstance(event, PageDone)
            self.pages += 1
            if event.redirect:
                self.redirects += 1
        elif kind is UrlsSkipped:
            assert isinstance(event, UrlsSkipped)
            self.skipped.update(event.reasons)
        elif kind is AttemptFailed:
            assert isinstance(event, AttemptFailed)
            self.errors[event.reason] += 1
            if event.detail is not None:
                self.error_examples.setdefault(event.reason, event.detail)
        elif kind is RobotsResult:
            assert isinstance(event, RobotsResult)
            if event.fetched:
                self.robots_fetches += 1
        elif kind is AttemptRetried:
            self.retries += 1
        elif kind is LeaseExpired:
            self.fenced += 1

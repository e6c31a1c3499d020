"""Crawl events: what happens, published once, read by every subscriber.

The crawl and the frontier publish frozen events on an :class:`EventBus`; stats for the
dashboard and the metrics (:mod:`courtly.observe.tally`), the per-host table
(:mod:`courtly.observe.hosts`), ``status.json`` (:mod:`courtly.observe.status_file`) and
the terminal progress each subscribe. Publishing is a loop over a short list of
subscribers in the crawl's own event loop: no queue, no thread, no copy. A subscriber
must be quick and must not block; one that raises is logged and kept (an observer never
stops a crawl).

Times named ``at`` are epoch seconds from the crawl's clock.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from courtly.frontier.records import HostState

if TYPE_CHECKING:
    from courtly.crawl import CrawlSnapshot

__all__ = [
    "Event",
    "EventBus",
    "FetchDone",
    "HostLeased",
    "HostStateChanged",
    "LeaseExpired",
    "RobotsResult",
    "Subscriber",
    "Tick",
]

log = logging.getLogger("courtly.events")


@dataclass(frozen=True, slots=True)
class FetchDone:
    """A page request ended: with a response (``status``) or without (``error``, a
    :class:`~courtly.errors.FetchError` kind). ``size_bytes`` is what came over the wire."""

    at: float
    host_key: str
    status: int | None
    error: str | None
    elapsed_s: float
    size_bytes: int


@dataclass(frozen=True, slots=True)
class HostLeased:
    """A host was leased: one request to it is now in flight."""

    at: float
    host_key: str


@dataclass(frozen=True, slots=True)
class HostStateChanged:
    """A completion or release took effect: ``state`` is the host's new politeness state
    (its ``delay_source`` says why it waits until ``next_allowed_at``)."""

    at: float
    state: HostState


@dataclass(frozen=True, slots=True)
class LeaseExpired:
    """A completion came after its lease expired: its result was discarded (fenced)."""

    at: float
    host_key: str


@dataclass(frozen=True, slots=True)
class RobotsResult:
    """A robots.txt lookup for a host: ``result`` is the decision kind (``ok``,
    ``unavailable``: 4xx, allow all; ``outage``: 5xx, disallow all; ``unreachable``;
    ``stale``) or ``blocked`` (the address guard refused it); ``fetched`` is false for an
    answer from the cache (in memory or restored from the store)."""

    at: float
    host_key: str
    result: str
    fetched: bool


@dataclass(frozen=True, slots=True)
class Tick:
    """The periodic snapshot (every ``progress_interval_s``, and once at the end)."""

    snapshot: CrawlSnapshot


Event = FetchDone | HostLeased | HostStateChanged | LeaseExpired | RobotsResult | Tick


class Subscriber(Protocol):
    """Receives every event published on the bus it subscribed to."""

    def notify(self, event: Event) -> None: ...


class EventBus:
    """Subscribers, in order of subscription; :meth:`publish` calls each one."""

    __slots__ = ("_subscribers",)

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def publish(self, event: Event) -> None:
        for subscriber in self._subscribers:
            try:
                subscriber.notify(event)
            except Exception:  # an observer never stops the crawl
                log.exception("event subscriber %r failed", subscriber)


class MemoryBus(EventBus):
    """An :class:`EventBus` that also keeps every event (the in-memory twin for tests)."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        super().__init__()
        self.events: list[Event] = []

    def publish(self, event: Event) -> None:
        self.events.append(event)
        super().publish(event)

"""Crawl events: what happens, published once, read by every subscriber.

The crawl and the frontier publish frozen events on an :class:`EventBus`; stats for the
dashboard and the metrics (:mod:`courtly.observe.tally`), the per-host table
(:mod:`courtly.observe.hosts`), ``status.json`` (:mod:`courtly.observe.status_file`) and
the terminal progress and the crawl's own counters (:mod:`courtly.crawl.stats`) each
subscribe, to every kind of event or to the kinds they read. Publishing is a loop over the
short list of subscribers to that kind, in the crawl's own event loop: no queue, no thread,
no copy. A subscriber
must be quick and must not block; one that raises is logged and kept (an observer never
stops a crawl).

Times named ``at`` are epoch seconds from the crawl's clock.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # (the frontier imports this module: no import of it at run time)
    from courtly.crawl import CrawlSnapshot
    from courtly.frontier.records import HostState

__all__ = [
    "EVENT_KINDS",
    "AttemptFailed",
    "AttemptRetried",
    "Event",
    "EventBus",
    "FetchDone",
    "HostLeased",
    "HostStateChanged",
    "LeaseExpired",
    "PageDone",
    "RobotsResult",
    "Subscriber",
    "Tick",
    "UrlsSkipped",
]

log = logging.getLogger("courtly.events")


@dataclass(frozen=True, slots=True)
class FetchDone:
    """A page request ended: with a response (``status``) or without (``error``, a
    :class:`~courtly.errors.FetchError` kind, and ``detail``, its message with the URL).
    ``size_bytes`` is what came over the wire."""

    at: float
    host_key: str
    status: int | None
    error: str | None
    elapsed_s: float
    size_bytes: int
    detail: str | None = None


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
class PageDone:
    """A lease made its page: a response that is kept (not to be tried again). ``redirect``
    is true when it was a redirect naming a valid target (queued like a link)."""

    at: float
    host_key: str
    status: int
    redirect: bool


@dataclass(frozen=True, slots=True)
class AttemptFailed:
    """A request did not succeed beyond what :class:`FetchDone` says: ``reason`` is
    ``http_<status>`` (a response that is no success), ``interrupted`` (the body broke off),
    ``robots_blocked`` or ``robots_unreachable`` (no robots.txt response at all);
    ``detail``, where there is more to say, is why in words, with the URL."""

    at: float
    host_key: str
    reason: str
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class AttemptRetried:
    """A failed attempt goes back to its queue to be made again (``reason``: its catalogue
    fail reason, if any: ``timeout``, ``interrupted``, ``http_503``...; ``url``: the URL
    that will be asked for again)."""

    at: float
    host_key: str
    reason: str | None
    url: str = ""


@dataclass(frozen=True, slots=True)
class UrlsSkipped:
    """URLs not queued, one reason each (``robots``, ``out_of_scope``, ``too_deep``, a trap,
    ``budget``, ``host_retired``, ``invalid``, ``invalid_seed``, ``page_nofollow``,
    ``page_duplicate``...)."""

    at: float
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Tick:
    """The periodic snapshot (every ``progress_interval_s``, and once at the end)."""

    snapshot: CrawlSnapshot


Event = (
    FetchDone
    | HostLeased
    | HostStateChanged
    | LeaseExpired
    | RobotsResult
    | PageDone
    | AttemptFailed
    | AttemptRetried
    | UrlsSkipped
    | Tick
)

EVENT_KINDS: tuple[type[Event], ...] = (
    FetchDone,
    HostLeased,
    HostStateChanged,
    LeaseExpired,
    RobotsResult,
    PageDone,
    AttemptFailed,
    AttemptRetried,
    UrlsSkipped,
    Tick,
)
"""Every kind of event, in the order of the union above."""


class Subscriber(Protocol):
    """Receives every event published on the bus it subscribed to."""

    def notify(self, event: Event) -> None: ...


class EventBus:
    """Subscribers, in order of subscription; :meth:`publish` calls each one that
    subscribed to the event's kind."""

    __slots__ = ("_by_kind",)

    def __init__(self) -> None:
        self._by_kind: dict[type, list[Subscriber]] = {kind: [] for kind in EVENT_KINDS}

    def subscribe(self, subscriber: Subscriber, kinds: Iterable[type[Event]] | None = None) -> None:
        """Call ``subscriber`` for every event of ``kinds`` from now on (default: every kind)."""
        for kind in EVENT_KINDS if kinds is None else kinds:
            self._by_kind[kind].append(subscriber)

    def publish(self, event: Event) -> None:
        for subscriber in self._by_kind[type(event)]:
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

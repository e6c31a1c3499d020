"""Frontier records: what goes in, what comes out, and per-host politeness state.

All records are frozen and slotted. Times named ``*_at`` are epoch seconds from
the frontier's clock; durations named ``*_s`` are seconds.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "AddStatus",
    "DelaySource",
    "FrontierCounts",
    "HostState",
    "Lease",
    "Outcome",
    "OutcomeKind",
    "QueuedUrl",
]


@dataclass(frozen=True, slots=True)
class QueuedUrl:
    """A canonical URL on its way into the front tier.

    ``level`` is the front-queue level chosen by the prioritiser (0 is the most
    urgent); ``host_key`` is the politeness unit the URL belongs to. ``lift``: the
    URL's level improved since it was first offered (it gained in-links): if it is
    already queued at a worse level, the store promotes it
    (:meth:`~courtly.store.base.FrontierStore.promote`) instead of answering ``SEEN``
    only.
    """

    url: str
    host_key: str
    level: int
    depth: int = 0
    lift: bool = False


class AddStatus(enum.IntEnum):
    """What happened to one URL offered to the frontier."""

    QUEUED = 0
    """New: it is in a front or back queue now."""
    SEEN = 1
    """Already seen (queued, fetched, or skipped before): dropped."""
    OVER_HOST_BUDGET = 2
    """The host already has its cap of queued URLs; dropped, not marked seen."""
    OVER_CRAWL_BUDGET = 3
    """The crawl already has its cap of queued URLs; dropped, not marked seen."""
    HOST_RETIRED = 4
    """The host was retired (dead, or its request budget is spent); dropped."""
    INVALID = 5
    """Not a crawlable URL."""


class DelaySource(enum.StrEnum):
    """Which term set a host's ``next_allowed_at`` (see
    :func:`~courtly.frontier.politeness.apply_outcome`).

    The value is the name shown on the dashboard, in ``/api/hosts`` and as the
    ``delay_source`` label of ``courtly_host_delay_seconds``.
    """

    MIN_DELAY = "min_delay"
    """The floor, ``min_delay_s``."""
    FETCH_TIME = "fetch_time"
    """``delay_factor`` × the last fetch's duration (capped by ``max_delay_s``)."""
    CRAWL_DELAY = "crawl_delay"
    """The host's robots.txt Crawl-delay."""
    RETRY_AFTER = "retry_after"
    """The server's ``Retry-After`` on a 429/503."""
    BACKOFF = "backoff"
    """Back-off from an error streak, a 429/503 without Retry-After, or slow responses."""
    PARKED = "parked"
    """A parking interval after ``park_after_errors`` failures in a row."""
    ROBOTS_UNREACHABLE = "robots_unreachable"
    """robots.txt could not be fetched: the host waits for the next robots.txt retry."""
    ADDRESS_BUSY = "address_busy"
    """A process leased the host while it held as many leases at the host's address as
    it can start soon (:mod:`courtly.fetch.address_holds`): it gave the lease back
    untouched, and the host waits a moment for any process to lease it."""
    RESUMED = "resumed"
    """The host had a request in flight when the crawl stopped without a clean close:
    that answer, and any pause it asked for, may be lost, so after the resume the host
    waits as after a failed fetch
    (:func:`~courtly.frontier.politeness.lost_answer_hold_s`)."""


@dataclass(frozen=True, slots=True)
class HostState:
    """Politeness state of one host key.

    ``next_allowed_at`` is the earliest time the next request may start.
    ``last_fetch_s`` is the duration of the last exchange; ``latency_baseline_s``
    an exponentially weighted mean of past durations (0 until the first one).
    ``backoff_s`` is the current back-off floor on the delay; ``error_streak``
    counts consecutive failures; ``parks`` counts how often the host was parked;
    ``crawl_delay_s`` is the robots.txt Crawl-delay last reported for it.
    ``retired`` is a reason string once the host is given up, else ``None``
    (``"blocked"``, ``"dead"``, ``"failing"``, ``"budget"``). ``unanswered`` counts
    consecutive requests that got no response at all (DNS, connect, timeout, reset);
    any response resets it. The SQLite store does not persist ``unanswered``: a resumed
    crawl counts it afresh (a retirement it led to is persisted); a shared (Redis) store
    keeps it, as its fetchers read the state afresh with every lease.
    """

    host_key: str
    next_allowed_at: float = 0.0
    last_fetch_s: float = 0.0
    latency_baseline_s: float = 0.0
    backoff_s: float = 0.0
    error_streak: int = 0
    parks: int = 0
    requests_made: int = 0
    crawl_delay_s: float | None = None
    retired: str | None = None
    unanswered: int = 0
    delay_source: DelaySource = DelaySource.MIN_DELAY
    last_status: int | None = None


@dataclass(frozen=True, slots=True)
class Lease:
    """The exclusive right to make one request to ``host_key`` for ``url``.

    ``token`` is a fencing token, unique and increasing per frontier: a
    completion whose token is not the host's current one is rejected. The lease
    is void after ``expires_at``: the URL then returns to the head of its back
    queue and the host to the ready heap. ``attempts`` counts the earlier attempts
    at this URL that failed and were retried (0 on the first; see
    :mod:`courtly.frontier.retry`); it is stored with the URL in its back queue.
    """

    token: int
    host_key: str
    url: str
    depth: int
    leased_at: float
    expires_at: float
    host: HostState
    attempts: int = 0


class OutcomeKind(enum.Enum):
    """How a leased fetch ended, as far as politeness is concerned."""

    SUCCESS = "success"
    """A response that is not a server struggle (2xx, 3xx, 4xx except 429)."""
    THROTTLED = "throttled"
    """429 or 503: the server asks us to slow down (``retry_after_s`` if given)."""
    SERVER_ERROR = "server_error"
    """Another 5xx."""
    NETWORK_ERROR = "network_error"
    """No response: DNS, connect, timeout, reset."""
    NO_REQUEST = "no_request"
    """Nothing was sent (e.g. robots.txt disallows the URL): politeness state unchanged."""
    BLOCKED = "blocked"
    """Nothing was sent and nothing ever can be: the address guard refuses the host's
    address (private/loopback without ``allow_private_networks``). The host is retired."""
    DEFERRED = "deferred"
    """Nothing was sent, and the host must wait ``retry_after_s`` (e.g. its robots.txt is
    unreachable until a retry): only ``next_allowed_at`` moves, no counter does."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the fetcher reports to ``complete``.

    ``started_at``/``ended_at`` bound the exchange (epoch seconds);
    ``retry_after_s`` is a parsed ``Retry-After`` (seconds from ``ended_at``);
    ``crawl_delay_s`` the robots.txt Crawl-delay in force for the host, if any;
    ``delay_source`` (``DEFERRED`` only) what the host's wait is recorded as.
    """

    kind: OutcomeKind
    started_at: float
    ended_at: float
    status: int | None = None
    retry_after_s: float | None = None
    crawl_delay_s: float | None = None
    delay_source: DelaySource = DelaySource.ROBOTS_UNREACHABLE

    @property
    def elapsed_s(self) -> float:
        return max(0.0, self.ended_at - self.started_at)

    @classmethod
    def no_request(cls, at: float) -> Outcome:
        return cls(OutcomeKind.NO_REQUEST, at, at)

    @classmethod
    def deferred(
        cls, at: float, wait_s: float, source: DelaySource = DelaySource.ROBOTS_UNREACHABLE
    ) -> Outcome:
        """Hold the host ``wait_s`` seconds from ``at`` without a request (never less
        than its politeness state already asks); the wait is recorded as ``source``."""
        return cls(OutcomeKind.DEFERRED, at, at, retry_after_s=wait_s, delay_source=source)

    @classmethod
    def from_status(
        cls,
        status: int,
        started_at: float,
        ended_at: float,
        *,
        retry_after_s: float | None = None,
        crawl_delay_s: float | None = None,
    ) -> Outcome:
        """Classify an HTTP status: 429/503 throttle, other 5xx are errors, the rest success."""
        if status in (429, 503):
            kind = OutcomeKind.THROTTLED
        elif status >= 500:
            kind = OutcomeKind.SERVER_ERROR
        else:
            kind = OutcomeKind.SUCCESS
        return cls(kind, started_at, ended_at, status, retry_after_s, crawl_delay_s)


@dataclass(frozen=True, slots=True)
class FrontierCounts:
    """A snapshot of the frontier's size, for progress and status."""

    queued: int
    """URLs waiting in front and back queues (leased URLs excluded)."""
    front_queued: int
    back_queued: int
    hosts_active: int
    """Hosts holding a back-queue slot: ready, snoozed or leased."""
    hosts_ready: int
    """Active hosts whose next allowed time has come (not leased)."""
    hosts_snoozed: int
    """Active hosts waiting out a short delay (they keep their slot)."""
    hosts_parked: int
    """Waiting hosts, snoozed or inactive, whose wait comes from failures (back-off, parking)."""
    hosts_retired: int
    leased: int
    seen: int
    requests_made: int
    """Requests made in the whole crawl (sum over hosts)."""
    hosts_inactive: int = 0
    """Hosts with queued URLs in a back queue but no slot: their next allowed time was
    too far away (parked, back-off, Retry-After, robots.txt retry, long Crawl-delay)."""
    hosts_inactive_due: int = 0
    """Inactive hosts already due: the next lease gives them a slot if one is free (a
    count that stays up means the ``max_back_queues`` cap is reached)."""
    hosts_held: int = 0
    """Hosts with a back queue: active plus inactive."""

"""Counters and histograms of a crawl, kept from events (a subscriber).

Plain ints and lists, bumped in the loop that publishes: no lock, no metric object per
event. The Prometheus collector (:mod:`courtly.observe.metrics`) and the snapshot
(:mod:`courtly.observe.snapshot`) read them. Every label is bounded: a status class, a
delay source, a robots.txt result, a violation kind; never a host or a URL.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field

from courtly.events import (
    Event,
    FetchDone,
    HostStateChanged,
    LeaseExpired,
    RobotsResult,
)

__all__ = ["DELAY_BUCKETS_S", "FETCH_BUCKETS_S", "Histogram", "Tally", "status_class"]

FETCH_BUCKETS_S: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Fetch durations, seconds: loopback tens of ms up to the 30 s default timeout."""
DELAY_BUCKETS_S: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)
"""Host delays, seconds: the 1 s default floor up to parking and long Retry-After."""


def status_class(status: int | None) -> str:
    """``2xx`` ... ``5xx`` with ``429`` and ``503`` apart; ``error`` for no response."""
    if status is None:
        return "error"
    if status in (429, 503):
        return str(status)
    return f"{min(max(status // 100, 1), 5)}xx"


@dataclass(slots=True)
class Histogram:
    """Cumulative-free bucket counts (``counts[i]``: values <= ``buckets[i]``, the last
    one above every bucket), their sum and count."""

    buckets: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.buckets) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.buckets, value)] += 1
        self.total += value
        self.count += 1

    def as_json(self) -> dict[str, object]:
        return {
            "buckets": list(self.buckets),
            "counts": list(self.counts),
            "sum": self.total,
            "count": self.count,
        }


class Tally:
    """What the crawl did, counted from events."""

    def __init__(self) -> None:
        self.fetches: Counter[str] = Counter()
        """Page requests by status class."""
        self.response_bytes = 0
        self.fetch_duration = Histogram(FETCH_BUCKETS_S)
        self.host_delay: dict[str, Histogram] = {}
        """Gaps hosts were given, by delay source."""
        self.robots: Counter[str] = Counter()
        """robots.txt fetches by result."""
        self.robots_cache: Counter[str] = Counter()
        """robots.txt lookups answered from the cache (``hit``) or by a fetch (``miss``)."""
        self.leases_expired = 0

    def notify(self, event: Event) -> None:
        if isinstance(event, FetchDone):
            self.fetches[status_class(event.status)] += 1
            self.response_bytes += event.size_bytes
            self.fetch_duration.observe(event.elapsed_s)
        elif isinstance(event, HostStateChanged):
            gap = event.state.next_allowed_at - event.at
            if gap > 0 and event.state.retired is None:
                source = event.state.delay_source.value
                histogram = self.host_delay.get(source)
                if histogram is None:
                    histogram = self.host_delay[source] = Histogram(DELAY_BUCKETS_S)
                histogram.observe(gap)
        elif isinstance(event, RobotsResult):
            if event.fetched:
                self.robots[event.result] += 1
                self.robots_cache["miss"] += 1
            else:
                self.robots_cache["hit"] += 1
        elif isinstance(event, LeaseExpired):
            self.leases_expired += 1

"""Prometheus metrics from the snapshot (prometheus_client, a custom collector).

The collector reads the latest snapshot (:mod:`courtly.observe.snapshot`) at scrape
time: no metric object is touched on the crawl's hot path, a partitioned crawl's merged
snapshot and a finished crawl's ``status.json`` are exported alike, and the scrape runs
inside the event loop without reading the store. Conventions: ``courtly_`` prefix, base
units (seconds, bytes), counters end in ``_total``, bounded labels only (``status_class``,
``state``, ``delay_source``, ``result``, ``kind``, ``tier``, ``level``: the front tier's
priority levels, a handful); never a host or a URL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from courtly.observe.snapshot import DELAY_SOURCES

__all__ = ["CONTENT_TYPE", "SnapshotCollector", "metrics_text"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_HOST_STATES = ("ready", "snoozed", "leased", "parked", "inactive", "retired")


def _histogram(name: str, doc: str, data: Mapping[str, Any] | None, labels: dict[str, str]) -> Any:
    family = HistogramMetricFamily(name, doc, labels=list(labels))
    if data is None:
        return family
    cumulative = 0
    buckets: list[tuple[str, float]] = []
    for bound, count in zip([*data["buckets"], float("inf")], data["counts"], strict=True):
        cumulative += count
        buckets.append(("+Inf" if bound == float("inf") else repr(float(bound)), cumulative))
    family.add_metric(list(labels.values()), buckets, data["sum"])
    return family


class SnapshotCollector:
    """Yields courtly's metric families from ``source()`` (``None``: no snapshot yet)."""

    def __init__(self, source: Callable[[], Mapping[str, Any] | None]) -> None:
        self._source = source

    def describe(self) -> list[Metric]:
        return []  # the families depend on the snapshot: no describe-time registration

    def collect(self) -> Iterator[Metric]:
        snap = self._source()
        if snap is None:
            return
        yield GaugeMetricFamily(
            "courtly_running", "1 while the crawl runs, 0 once it ended", value=snap["running"]
        )
        yield GaugeMetricFamily(
            "courtly_elapsed_seconds", "Seconds since the run started", value=snap["elapsed_s"]
        )
        yield CounterMetricFamily(
            "courtly_pages", "Pages fetched and completed", value=snap["pages"]
        )
        fetches = CounterMetricFamily(
            "courtly_fetches",
            "Page requests by status class (2xx..5xx, 429 and 503 apart, error: no response)",
            labels=["status_class"],
        )
        for cls, n in sorted(snap["fetches"].items()):
            fetches.add_metric([cls], n)
        yield fetches
        yield CounterMetricFamily(
            "courtly_response_bytes", "Bytes received in responses", value=snap["bytes_received"]
        )
        yield _histogram(
            "courtly_fetch_duration_seconds",
            "Duration of page requests",
            snap["fetch_duration"],
            {},
        )
        yield GaugeMetricFamily(
            "courtly_in_flight_requests", "Requests in flight now", value=snap["in_flight"]
        )
        yield GaugeMetricFamily(
            "courtly_fetchers", "Fetchers allowed in flight (the limit)", value=snap["fetchers"]
        )
        frontier = snap["frontier"]
        queue = GaugeMetricFamily("courtly_queue_urls", "URLs queued, by tier", labels=["tier"])
        queue.add_metric(["front"], frontier["front_queued"])
        queue.add_metric(["back"], frontier["back_queued"])
        yield queue
        levels = GaugeMetricFamily(
            "courtly_front_queue_urls",
            "URLs waiting in the front tier, by priority level (0: the most urgent)",
            labels=["level"],
        )
        for level, n in enumerate(snap.get("front_queued_by_level", [])):
            levels.add_metric([str(level)], n)
        yield levels
        hosts = GaugeMetricFamily("courtly_hosts", "Hosts by frontier state", labels=["state"])
        for state in _HOST_STATES:
            hosts.add_metric([state], frontier.get(f"hosts_{state}", frontier.get(state, 0)))
        yield hosts
        waiting = GaugeMetricFamily(
            "courtly_hosts_waiting",
            "Hosts waiting for their next allowed time, by the term that set it",
            labels=["delay_source"],
        )
        for source in DELAY_SOURCES:
            waiting.add_metric([source], snap["waiting_by_source"].get(source, 0))
        yield waiting
        for source in DELAY_SOURCES:
            data = snap["host_delay"].get(source)
            if data is not None:
                yield _histogram(
                    "courtly_host_delay_seconds",
                    "Gaps given to hosts after a request, by delay source",
                    data,
                    {"delay_source": source},
                )
        robots = CounterMetricFamily(
            "courtly_robots_fetches", "robots.txt fetches by result", labels=["result"]
        )
        for result, n in sorted(snap["robots"]["fetches"].items()):
            robots.add_metric([result], n)
        yield robots
        cache = snap["robots"]["cache"]
        yield CounterMetricFamily(
            "courtly_robots_cache_hits", "robots.txt lookups from cache", value=cache.get("hit", 0)
        )
        yield CounterMetricFamily(
            "courtly_robots_cache_misses",
            "robots.txt lookups that fetched",
            value=cache.get("miss", 0),
        )
        yield CounterMetricFamily(
            "courtly_leases_expired",
            "Completions discarded because their lease had expired",
            value=snap["leases_expired"],
        )
        violations = CounterMetricFamily(
            "courtly_politeness_violations",
            "Leases of a host in flight (overlap) or before its next allowed time (early)",
            labels=["kind"],
        )
        for kind in ("overlap", "early"):
            violations.add_metric([kind], snap["violations"].get(kind, 0))
        yield violations


def _merge_histograms(metrics: list[Metric]) -> Iterator[Metric]:
    """One family per name (the per-source delay histograms share one)."""
    merged: dict[str, Metric] = {}
    for metric in metrics:
        if metric.name in merged:
            merged[metric.name].samples.extend(metric.samples)
        else:
            merged[metric.name] = metric
    return iter(merged.values())


class _Merged:
    def __init__(self, inner: SnapshotCollector) -> None:
        self._inner = inner

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        return _merge_histograms(list(self._inner.collect()))


def metrics_text(source: Callable[[], Mapping[str, Any] | None]) -> bytes:
    """The exposition text of one scrape (a fresh registry, so nothing is global)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Merged(SnapshotCollector(source)))
    return generate_latest(registry)

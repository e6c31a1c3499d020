"""A crawl's observation: the tally and the host table, subscribed together, summarised
once per tick into the ``observed`` part of the snapshot (plain JSON values, so it
pickles to a parent process and merges: :func:`merge_observed`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from courtly.events import Event
from courtly.frontier.records import FrontierCounts
from courtly.observe.hosts import HostTable, QueuedOf
from courtly.observe.tally import Tally
from courtly.observe.verdict import verdict

__all__ = ["TOP_N", "Observation", "merge_observed"]

TOP_N = 50
"""Hosts per sort key carried in each snapshot (queued, next allowed, errors)."""
_SNAPSHOT_SORTS = ("queued", "next_allowed", "errors")


FrontOf = Callable[[], Sequence[int]]
"""A store's URLs waiting in each front-queue level (see ``store.base.FrontDepths``)."""


class Observation:
    """Subscribe it to a crawl's bus; :meth:`summary` once per tick.

    ``queued_of`` and ``front_of`` are the store's, when it has them: a host's queue
    length, and the front tier's depth per priority level."""

    def __init__(self, queued_of: QueuedOf | None = None, front_of: FrontOf | None = None) -> None:
        self.tally = Tally()
        self.hosts = HostTable(queued_of)
        self._front_of = front_of

    def notify(self, event: Event) -> None:
        self.tally.notify(event)
        self.hosts.notify(event)

    def summary(self, now: float, counts: FrontierCounts) -> dict[str, Any]:
        tally, table = self.tally, self.hosts
        census = table.census(now)
        rows: dict[str, dict[str, Any]] = {}
        for sort in _SNAPSHOT_SORTS:
            for row in table.top(sort, TOP_N, now):
                rows.setdefault(row["host"], row)
        return {
            "verdict": verdict(
                queued=counts.queued, hosts_ready=counts.hosts_ready + counts.hosts_inactive_due
            ).value,
            "next_due_in_s": None if census.next_due_at is None else census.next_due_at - now,
            "waiting_by_source": dict(census.waiting_by_source),
            "hosts_by_state": dict(census.by_state),
            "queue_length_bins": census.queue_bins,
            "front_queued_by_level": list(self._front_of()) if self._front_of else [],
            "fetches": dict(tally.fetches),
            "response_bytes": tally.response_bytes,
            "fetch_duration": tally.fetch_duration.as_json(),
            "host_delay": {k: h.as_json() for k, h in tally.host_delay.items()},
            "robots": {"fetches": dict(tally.robots), "cache": dict(tally.robots_cache)},
            "violations": dict(table.violations),
            "leases_expired": tally.leases_expired,
            "hosts": list(rows.values()),
        }


def _sum(dicts: Sequence[Mapping[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for d in dicts:
        total.update(d)
    return dict(total)


def _sum_lists(lists: Sequence[Sequence[int]]) -> list[int]:
    """Element-wise sums (the partitions share one number of levels; a missing list is
    one from an older snapshot)."""
    total: list[int] = []
    for values in lists:
        if len(values) > len(total):
            total += [0] * (len(values) - len(total))
        for i, n in enumerate(values):
            total[i] += n
    return total


def _sum_histograms(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    first = items[0]
    counts = [sum(h["counts"][i] for h in items) for i in range(len(first["counts"]))]
    return {
        "buckets": first["buckets"],
        "counts": counts,
        "sum": sum(h["sum"] for h in items),
        "count": sum(h["count"] for h in items),
    }


def merge_observed(parts: Sequence[Mapping[str, Any]], counts: FrontierCounts) -> dict[str, Any]:
    """One ``observed`` for a partitioned crawl: sums, the soonest due host, every
    partition's top hosts (a host belongs to one partition), the verdict from ``counts``
    (the merged frontier sizes)."""
    parts = [p for p in parts if p]
    if not parts:
        return {}
    dues = [p["next_due_in_s"] for p in parts if p.get("next_due_in_s") is not None]
    delay_sources = sorted({k for p in parts for k in p["host_delay"]})
    return {
        "verdict": verdict(
            queued=counts.queued, hosts_ready=counts.hosts_ready + counts.hosts_inactive_due
        ).value,
        "next_due_in_s": min(dues) if dues else None,
        "waiting_by_source": _sum([p["waiting_by_source"] for p in parts]),
        "hosts_by_state": _sum([p["hosts_by_state"] for p in parts]),
        "queue_length_bins": _sum([p["queue_length_bins"] for p in parts]),
        "front_queued_by_level": _sum_lists([p.get("front_queued_by_level", []) for p in parts]),
        "fetches": _sum([p["fetches"] for p in parts]),
        "response_bytes": sum(p.get("response_bytes", 0) for p in parts),
        "fetch_duration": _sum_histograms(
            [p["fetch_duration"] for p in parts if p["fetch_duration"]]
        )
        if any(p["fetch_duration"] for p in parts)
        else None,
        "host_delay": {
            k: _sum_histograms([p["host_delay"][k] for p in parts if k in p["host_delay"]])
            for k in delay_sources
        },
        "robots": {
            "fetches": _sum([p["robots"]["fetches"] for p in parts]),
            "cache": _sum([p["robots"]["cache"] for p in parts]),
        },
        "violations": _sum([p["violations"] for p in parts]),
        "leases_expired": sum(p["leases_expired"] for p in parts),
        "hosts": [row for p in parts for row in p["hosts"]],
    }

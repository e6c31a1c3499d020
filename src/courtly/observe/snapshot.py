"""The one schema every observer reports: ``/api/snapshot``, ``/events``, ``status.json``.

:func:`snapshot_json` turns a :class:`~courtly.crawl.CrawlSnapshot` (with its
``observed`` part) into plain JSON values; :data:`SNAPSHOT_KEYS` is the schema (key ->
JSON type), checked by :func:`schema_errors`. Units: seconds, bytes, epoch seconds.
Adding a key is compatible; renaming one is not (``schema`` would change).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from courtly.frontier.records import DelaySource

if TYPE_CHECKING:
    from courtly.crawl import CrawlSnapshot

__all__ = [
    "DELAY_SOURCES",
    "SCHEMA_VERSION",
    "SNAPSHOT_KEYS",
    "merge_snapshot_json",
    "schema_errors",
    "snapshot_json",
]

SCHEMA_VERSION: Final = 1
DELAY_SOURCES: Final = tuple(s.value for s in DelaySource)

_NUM = (int, float)
_OPT_NUM = (int, float, type(None))
SNAPSHOT_KEYS: Final[Mapping[str, tuple[type, ...]]] = {
    "schema": (int,),
    "at": _NUM,
    "elapsed_s": _NUM,
    "running": (bool,),
    "resumed": (bool,),
    "stop_reason": (str, type(None)),
    "pages": (int,),
    "pages_per_s": _NUM,
    "bytes_received": (int,),
    "robots_fetches": (int,),
    "in_flight": (int,),
    "fetchers": (int,),
    "frontier": (dict,),
    "statuses": (dict,),
    "errors": (dict,),
    "skipped": (dict,),
    "hosts_retired": (dict,),
    "verdict": (str, type(None)),
    "next_due_in_s": _OPT_NUM,
    "waiting_by_source": (dict,),
    "hosts_by_state": (dict,),
    "queue_length_bins": (dict,),
    "front_queued_by_level": (list,),
    "fetches": (dict,),
    "fetch_duration": (dict, type(None)),
    "host_delay": (dict,),
    "robots": (dict,),
    "violations": (dict,),
    "leases_expired": (int,),
    "hosts": (list,),
}
"""Every key of a snapshot and the JSON types its value may have."""

HOST_KEYS: Final[Mapping[str, tuple[type, ...]]] = {
    "host": (str,),
    "state": (str,),
    "queued": (int, type(None)),
    "in_flight": (int,),
    "last_status": (int, type(None)),
    "last_fetch_s": _NUM,
    "delay_s": _OPT_NUM,
    "delay_source": (str,),
    "next_allowed_at": _NUM,
    "next_allowed_in_s": _NUM,
    "error_streak": (int,),
    "requests": (int,),
    "crawl_delay_s": _OPT_NUM,
    "robots_age_s": _OPT_NUM,
    "robots": (str, type(None)),
    "retired": (str, type(None)),
}
"""Every key of a host row (``hosts`` here, and ``/api/hosts``)."""


def snapshot_json(snapshot: CrawlSnapshot, now: float) -> dict[str, Any]:
    """The snapshot as plain JSON values (the dashboard's and ``status.json``'s)."""
    observed = snapshot.observed
    waiting = {source: 0 for source in DELAY_SOURCES}
    waiting.update(observed.get("waiting_by_source", {}))
    return {
        "schema": SCHEMA_VERSION,
        "at": now,
        "elapsed_s": snapshot.elapsed_s,
        "running": not snapshot.finished,
        "resumed": snapshot.resumed,
        "stop_reason": snapshot.stop_reason,
        "pages": snapshot.pages,
        "pages_per_s": snapshot.pages_per_s,
        "bytes_received": snapshot.bytes_received,
        "robots_fetches": snapshot.robots_fetches,
        "in_flight": snapshot.in_flight,
        "fetchers": snapshot.fetchers,
        "frontier": dataclasses.asdict(snapshot.counts),
        "statuses": {str(k): v for k, v in snapshot.statuses.items()},
        "errors": dict(snapshot.errors),
        "skipped": dict(snapshot.skipped),
        "hosts_retired": dict(snapshot.hosts_retired),
        "verdict": observed.get("verdict"),
        "next_due_in_s": observed.get("next_due_in_s"),
        "waiting_by_source": waiting,
        "hosts_by_state": observed.get("hosts_by_state", {}),
        "queue_length_bins": observed.get("queue_length_bins", {}),
        "front_queued_by_level": observed.get("front_queued_by_level", []),
        "fetches": observed.get("fetches", {}),
        "fetch_duration": observed.get("fetch_duration"),
        "host_delay": observed.get("host_delay", {}),
        "robots": observed.get("robots", {"fetches": {}, "cache": {}}),
        "violations": observed.get("violations", {"overlap": 0, "early": 0}),
        "leases_expired": observed.get("leases_expired", 0),
        "hosts": observed.get("hosts", []),
    }


def _type_errors(
    obj: Mapping[str, Any], keys: Mapping[str, tuple[type, ...]], where: str
) -> list[str]:
    errors = [f"{where}: missing {k}" for k in keys if k not in obj]
    errors += [f"{where}: unknown {k}" for k in obj if k not in keys]
    for key, types in keys.items():
        if key in obj and not isinstance(obj[key], types):
            errors.append(f"{where}: {key} is {type(obj[key]).__name__}")
        if key in obj and isinstance(obj[key], bool) and bool not in types:
            errors.append(f"{where}: {key} is bool")
    return errors


def schema_errors(snapshot: Mapping[str, Any]) -> list[str]:
    """What in ``snapshot`` breaks the schema (empty: it conforms)."""
    errors = _type_errors(snapshot, SNAPSHOT_KEYS, "snapshot")
    for i, row in enumerate(snapshot.get("hosts", [])):
        errors += _type_errors(row, HOST_KEYS, f"hosts[{i}]")
    for source in snapshot.get("waiting_by_source", {}):
        if source not in DELAY_SOURCES:
            errors.append(f"waiting_by_source: unknown source {source}")
    for i, row in enumerate(snapshot.get("hosts", [])):
        if isinstance(row, Mapping) and row.get("delay_source") not in DELAY_SOURCES:
            errors.append(f"hosts[{i}]: unknown delay_source {row.get('delay_source')}")
    levels = snapshot.get("front_queued_by_level", [])
    if isinstance(levels, list) and not all(type(n) is int and n >= 0 for n in levels):
        errors.append("front_queued_by_level: not a list of counts")
    return errors


_SUMMED: Final = (
    "pages",
    "bytes_received",
    "robots_fetches",
    "in_flight",
    "fetchers",
)
_SUMMED_DICTS: Final = ("statuses", "errors", "skipped", "hosts_retired")


def merge_snapshot_json(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One snapshot from the partitions' (``courtly dashboard`` on a partitioned state
    directory): sums, the longest elapsed time, running while any runs, the observation
    merged by :func:`~courtly.observe.observation.merge_observed`."""
    from courtly.frontier.records import FrontierCounts
    from courtly.observe.observation import merge_observed

    counts = FrontierCounts(
        **{k: sum(p["frontier"][k] for p in parts) for k in parts[0]["frontier"]}
    )
    merged: dict[str, Any] = dict(parts[0])
    observed = merge_observed(parts, counts)
    observed.pop("response_bytes", None)  # the snapshot says bytes_received
    merged.update(observed)
    elapsed = max(p["elapsed_s"] for p in parts)
    merged.update(
        at=max(p["at"] for p in parts),
        elapsed_s=elapsed,
        running=any(p["running"] for p in parts),
        resumed=any(p["resumed"] for p in parts),
        stop_reason=next((p["stop_reason"] for p in parts if p["stop_reason"]), None),
        frontier=dataclasses.asdict(counts),
        **{k: sum(p[k] for p in parts) for k in _SUMMED},
    )
    for key in _SUMMED_DICTS:
        total: dict[str, int] = {}
        for p in parts:
            for k, v in p[key].items():
                total[k] = total.get(k, 0) + v
        merged[key] = total
    merged["pages_per_s"] = merged["pages"] / max(elapsed, 1e-9)
    waiting = {source: 0 for source in DELAY_SOURCES}
    waiting.update(merged["waiting_by_source"])
    merged["waiting_by_source"] = waiting
    return merged

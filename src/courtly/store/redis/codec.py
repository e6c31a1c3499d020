"""How the Redis store spells its values: queue entries, host states, catalogue rows.

Pure functions, shared by the store and its tests. Times never appear here in
absolute form: the store converts them between the caller's clock and the
server's (see :mod:`courtly.store.redis.store`).
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Final

from xxhash import xxh3_64_intdigest

from courtly.archive.catalogue import CatalogueEntry
from courtly.frontier.records import DelaySource, HostState

__all__ = [
    "bloom_hashes",
    "decode_attempts",
    "decode_catalogue",
    "decode_entry",
    "decode_rank",
    "decode_state",
    "encode_catalogue",
    "encode_entry",
    "encode_state",
    "shard_of",
    "url_authority",
]

_STATE_FIELDS: Final = (
    "last_fetch_s",
    "latency_baseline_s",
    "backoff_s",
    "error_streak",
    "parks",
    "requests_made",
    "crawl_delay_s",
    "retired",
    "delay_source",
    "last_status",
    "unanswered",
)
"""The stored fields of a host's state, in order; a field added later goes at the end
(a payload written before it has fewer values, and the missing ones default).
``unanswered`` is kept so that a host whose requests go unanswered is retired as
``"dead"`` when its tries are spread over several fetchers or leases."""
_CATALOGUE_DEFAULTS: Final = {
    spec.name: spec.default for spec in fields(CatalogueEntry) if spec.name not in ("url",)
}


def url_authority(url: str) -> str:
    """The ``host[:port]`` part of an absolute URL, as written."""
    start = url.find("://") + 3
    end = url.find("/", start)
    return url[start : end if end >= 0 else len(url)]


def shard_of(key: str, shards: int) -> int:
    """The shard of a host key (or a URL's authority): xxh3-64 of its UTF-8 bytes mod ``shards``.

    Stable across processes, machines and versions, so every fetcher agrees.
    """
    return xxh3_64_intdigest(key.encode()) % shards


def bloom_hashes(url: str) -> tuple[int, int]:
    """Two 32-bit halves of xxh3-64 of the URL; the second is odd (double hashing).

    The Lua side derives bit ``i`` of a layer of ``m`` bits as ``(h1 + i*h2) mod m``,
    exactly, in doubles (every term stays below 2**53).
    """
    value = xxh3_64_intdigest(url.encode())
    return value >> 32, (value & 0xFFFF_FFFF) | 1


def encode_entry(host_key: str, depth: int, url: str) -> str:
    """A queue entry: ``"<depth> <url>"``, with ``@<host_key>`` after the depth only when
    the host key is not the URL's authority (the Lua side reads it back the same way)."""
    if url_authority(url) == host_key:
        return f"{depth} {url}"
    return f"{depth}@{host_key} {url}"


def decode_entry(entry: str) -> tuple[int, str]:
    """``(depth, url)`` of a queue entry (the scripts add ``!<attempts>`` and ``^<rank>``
    after the depth: ``"<depth>[!<attempts>][^<rank>][@<host_key>] <url>"``)."""
    head, _, url = entry.partition(" ")
    return int(_counts(head).partition("!")[0]), url


def decode_attempts(entry: str) -> int:
    """The failed attempts a back-queue entry counts: ``"<depth>!<attempts>[^…][@…] <url>"``
    once one failed (``release.lua`` writes it), 0 for a plain entry."""
    return int(_counts(entry.partition(" ")[0]).partition("!")[2] or 0)


def decode_rank(entry: str) -> int | None:
    """The back-queue rank an entry carries (``^<rank>``, written by the scripts: 0 the
    news lane, ``1 + level`` otherwise), ``None`` for an entry without one."""
    rank = entry.partition(" ")[0].partition("@")[0].partition("^")[2]
    return int(rank) if rank else None


def _counts(head: str) -> str:
    """``"<depth>[!<attempts>]"`` of an entry's head (before its rank and host key)."""
    return head.partition("@")[0].partition("^")[0]


def encode_state(state: HostState) -> str:
    """Everything of a host's state but its key and next allowed time (kept apart)."""
    return json.dumps([getattr(state, name) for name in _STATE_FIELDS], separators=(",", ":"))


def decode_state(host_key: str, next_allowed_at: float, payload: str) -> HostState:
    """The state :func:`encode_state` wrote (a fresh one for an empty payload)."""
    if not payload:
        return HostState(host_key, next_allowed_at)
    values = json.loads(payload)
    # a payload written before delay_source/last_status/unanswered has fewer fields
    state = dict(zip(_STATE_FIELDS, values, strict=False))
    if "delay_source" in state:
        state["delay_source"] = DelaySource(state["delay_source"])
    return HostState(host_key, next_allowed_at, **state)


def encode_catalogue(entry: CatalogueEntry) -> tuple[str, str]:
    """``(payload, referrer)``: the fields that differ from their defaults as JSON (the
    URL is the hash field, the referrer kept apart: the first one stays); ``""`` for
    no referrer."""
    payload = {
        name: value
        for name, default in _CATALOGUE_DEFAULTS.items()
        if name != "referrer" and (value := getattr(entry, name)) != default
    }
    return json.dumps(payload, separators=(",", ":")), entry.referrer or ""


def decode_catalogue(url: str, payload: str, referrer: str | None) -> CatalogueEntry:
    """The entry of ``url``. A payload ``"D<depth>[ <skip_reason>]"`` is a row the Lua
    scripts wrote (a discovery, or a URL dropped with its retired host)."""
    if payload.startswith("D"):
        depth, _, reason = payload[1:].partition(" ")
        return CatalogueEntry(url, depth=int(depth), referrer=referrer, skip_reason=reason or None)
    return CatalogueEntry(url, referrer=referrer, **json.loads(payload))

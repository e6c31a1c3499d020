"""What changed: one event per revisit that found a page changed (``courtly changes``).

A :class:`ChangeEvent` is written by the recrawl lane when a visit's main text (or its
status class) differs from the last copy. The export is JSON Lines, one object per
event in the order seen, keys in field order: ``url``, ``at`` (epoch seconds of the
visit), ``status_before``/``status``, ``bytes_before``/``bytes`` (decoded body
lengths), ``simhash_distance`` (Hamming distance of the main texts' 64-bit SimHashes,
``null`` when either is unknown) and ``title`` (of the new copy, HTML only).

The crawl keeps the last :data:`MAX_EVENTS` events in the store (one blob).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TextIO

__all__ = [
    "MAX_EVENTS",
    "ChangeEvent",
    "events_from_bytes",
    "events_to_bytes",
    "export_jsonl",
    "parse_since",
]

MAX_EVENTS = 10_000


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One change seen (see the module docstring for the fields)."""

    url: str
    at: float
    status_before: int | None
    status: int
    bytes_before: int | None
    bytes: int | None
    simhash_distance: int | None
    title: str | None = None


def events_to_bytes(events: Iterable[ChangeEvent]) -> bytes:
    return "\n".join(json.dumps(asdict(e), ensure_ascii=False) for e in events).encode()


def events_from_bytes(data: bytes | None) -> list[ChangeEvent]:
    if not data:
        return []
    return [ChangeEvent(**json.loads(line)) for line in data.decode().split("\n") if line]


def export_jsonl(events: Iterable[ChangeEvent], out: TextIO, *, since: float | None) -> int:
    """Write the events at or after ``since`` (all when ``None``); return the count."""
    count = 0
    for event in events:
        if since is None or event.at >= since:
            out.write(json.dumps(asdict(event), ensure_ascii=False, separators=(",", ":")))
            out.write("\n")
            count += 1
    return count


_AGO_UNITS_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_SINCE_FORMS = "epoch seconds, an ISO 8601 time, or a time ago such as 90s, 15m, 2h, 7d"


def parse_since(text: str, now_at: float) -> float:
    """``--since``, as epoch seconds: epoch seconds, an ISO 8601 date/time (UTC when it
    names no zone), or a duration back from ``now_at`` (epoch seconds): a number and a
    unit, ``s``, ``m``, ``h`` or ``d`` (``90s``, ``1.5h``, ``7d``). Raises ``ValueError``
    naming the forms taken."""
    refused = ValueError(f"--since must be {_SINCE_FORMS}; not {text!r}")
    stripped = text.strip()
    unit = _AGO_UNITS_S.get(stripped[-1:].lower())
    number = stripped[:-1] if unit is not None else stripped
    try:
        value = float(number)
    except ValueError:
        value = None
    if value is not None:
        if not math.isfinite(value) or (unit is not None and value < 0):
            raise refused
        return value if unit is None else now_at - value * unit
    try:
        moment = datetime.fromisoformat(stripped.replace("Z", "+00:00"))
    except ValueError:
        raise refused from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()

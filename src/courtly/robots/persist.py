"""robots.txt outcomes as bytes, so a resumed crawl keeps its robots cache.

Only ``ok`` and ``unavailable`` outcomes are kept as outcomes; an unreachable
server's failures are kept apart, as a :class:`FailureRecord` (how many, since when,
when to try again), so that every process of a shared crawl and a resumed run keep to
one retry schedule without losing the last good copy. The body is stored as fetched
(at most the parse limit) and parsed again on load: rules are cheap to compile and the
stored form stays independent of the matcher's internals.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from courtly.errors import StateError
from courtly.robots.fetch import RobotsFetchOutcome
from courtly.robots.parse import PARSE_LIMIT_BYTES, parse

__all__ = [
    "FailureRecord",
    "failure_from_bytes",
    "failure_to_bytes",
    "outcome_from_bytes",
    "outcome_to_bytes",
]

_VERSION = 1


def outcome_to_bytes(outcome: RobotsFetchOutcome, fetched_at: float) -> bytes | None:
    """The outcome as JSON bytes, or ``None`` if it is not worth keeping (unreachable)."""
    if outcome.kind not in ("ok", "unavailable"):
        return None
    body = outcome.results[-1].body[:PARSE_LIMIT_BYTES] if outcome.results else b""
    record = {
        "v": _VERSION,
        "kind": outcome.kind,
        "status": outcome.status,
        "final_url": outcome.final_url,
        "hops": outcome.hops,
        "fetched_at": fetched_at,
        "body": base64.b64encode(body if outcome.kind == "ok" else b"").decode("ascii"),
    }
    return json.dumps(record, separators=(",", ":")).encode()


def outcome_from_bytes(data: bytes) -> tuple[RobotsFetchOutcome, float]:
    """Rebuild ``(outcome, fetched_at)``; :class:`StateError` on anything unreadable."""
    try:
        record = json.loads(data)
        if record.get("v") != _VERSION or record["kind"] not in ("ok", "unavailable"):
            raise ValueError("unknown version or kind")
        body = base64.b64decode(record["body"], validate=True)
        kind = record["kind"]
        outcome = RobotsFetchOutcome(
            kind,
            parse(body) if kind == "ok" else None,
            record["status"],
            str(record["final_url"]),
            int(record["hops"]),
            None,
        )
        return outcome, float(record["fetched_at"])
    except (ValueError, KeyError, TypeError) as error:
        raise StateError(f"a stored robots.txt entry is unreadable: {error}") from None


@dataclass(frozen=True, slots=True)
class FailureRecord:
    """Consecutive failed fetches of one robots.txt: ``failures`` of them, the outage
    begun at ``outage_since_at``, the next try due at ``retry_at``, decided at
    ``decided_at`` (epoch seconds)."""

    failures: int
    outage_since_at: float
    retry_at: float
    decided_at: float


def failure_to_bytes(record: FailureRecord) -> bytes:
    """``record`` as JSON bytes."""
    return json.dumps(
        {
            "v": _VERSION,
            "failures": record.failures,
            "outage_since_at": record.outage_since_at,
            "retry_at": record.retry_at,
            "decided_at": record.decided_at,
        },
        separators=(",", ":"),
    ).encode()


def failure_from_bytes(data: bytes) -> FailureRecord:
    """Rebuild a :class:`FailureRecord`; :class:`StateError` on anything unreadable."""
    try:
        raw = json.loads(data)
        if raw.get("v") != _VERSION:
            raise ValueError("unknown version")
        return FailureRecord(
            int(raw["failures"]),
            float(raw["outage_since_at"]),
            float(raw["retry_at"]),
            float(raw["decided_at"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise StateError(f"a stored robots.txt failure record is unreadable: {error}") from None

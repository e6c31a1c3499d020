"""robots.txt outcomes as bytes, so a resumed crawl keeps its robots cache.

Only ``ok`` and ``unavailable`` outcomes are worth keeping (an unreachable
server is retried anyway). The body is stored as fetched (at most the parse
limit) and parsed again on load: rules are cheap to compile and the stored form
stays independent of the matcher's internals.
"""

from __future__ import annotations

import base64
import json

from courtly.errors import StateError
from courtly.robots.fetch import RobotsFetchOutcome
from courtly.robots.parse import PARSE_LIMIT_BYTES, parse

__all__ = ["outcome_from_bytes", "outcome_to_bytes"]

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

"""Change events: round trip through the store's bytes, --since filtering and parsing."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtly.changes import (
    ChangeEvent,
    events_from_bytes,
    events_to_bytes,
    export_jsonl,
    parse_since,
)

events = st.builds(
    ChangeEvent,
    url=st.text(min_size=1, max_size=30),
    at=st.floats(0, 4e9),
    status_before=st.none() | st.integers(100, 599),
    status=st.integers(100, 599),
    bytes_before=st.none() | st.integers(0, 10**9),
    bytes=st.none() | st.integers(0, 10**9),
    simhash_distance=st.none() | st.integers(0, 64),
    title=st.none() | st.text(max_size=30),
)


@given(st.lists(events, max_size=20))
def test_events_round_trip(items: list[ChangeEvent]) -> None:
    assert events_from_bytes(events_to_bytes(items)) == items


@given(st.lists(events, max_size=20), st.floats(0, 4e9))
def test_since_keeps_exactly_the_later_events(items: list[ChangeEvent], since: float) -> None:
    out = io.StringIO()
    count = export_jsonl(items, out, since=since)
    lines = [json.loads(line) for line in out.getvalue().split("\n") if line]
    assert count == len(lines) == sum(e.at >= since for e in items)
    assert all(line["at"] >= since for line in lines)


def test_since_accepts_epoch_seconds_iso_8601_and_a_time_ago() -> None:
    now = 1_800_000_000.0
    assert parse_since("1700000000", now) == 1_700_000_000.0
    assert parse_since("2023-11-14T22:13:20Z", now) == 1_700_000_000.0
    assert parse_since("2023-11-14T22:13:20", now) == 1_700_000_000.0  # UTC when no zone
    # a time back from now, as `docker logs --since 15m` takes it
    assert parse_since("90s", now) == now - 90
    assert parse_since("15m", now) == now - 900
    assert parse_since("1.5h", now) == now - 5400
    assert parse_since(" 7D ", now) == now - 7 * 86400
    for bad in ("yesterday", "1e400", "nan", "-5m", "h", "15x", "2026-13-01"):
        with pytest.raises(ValueError, match="--since must be epoch seconds, an ISO 8601"):
            parse_since(bad, now)

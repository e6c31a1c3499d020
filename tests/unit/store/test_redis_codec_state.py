"""The Redis codec: host states round-trip every field they keep (and older payloads read);
queue entries say their depth, attempts and rank."""

from __future__ import annotations

import json

import pytest

from courtly.frontier.records import DelaySource, HostState
from courtly.store.redis.codec import (
    decode_attempts,
    decode_entry,
    decode_rank,
    decode_state,
    encode_state,
)


@pytest.mark.parametrize("source", list(DelaySource))
def test_state_round_trips(source: DelaySource) -> None:
    state = HostState(
        "h.test", 12.5, 0.3, 0.2, 4.0, 2, 1, 9, 3.0, None, 0, delay_source=source, last_status=429
    )
    assert decode_state("h.test", 12.5, encode_state(state)) == state


def test_a_payload_without_the_new_fields_reads_with_defaults() -> None:
    old = json.dumps([0.3, 0.2, 4.0, 2, 1, 9, 3.0, None])
    state = decode_state("h.test", 1.0, old)
    assert state == HostState("h.test", 1.0, 0.3, 0.2, 4.0, 2, 1, 9, 3.0, None)


@pytest.mark.parametrize(
    ("entry", "depth", "attempts", "rank"),
    [
        ("3 http://h.test/a", 3, 0, None),
        ("3^2 http://h.test/a", 3, 0, 2),
        ("3!4^0 http://h.test/a", 3, 4, 0),
        ("12!1^3@k.test http://h.test/a", 12, 1, 3),
        ("7!2@k.test http://h.test/a", 7, 2, None),
    ],
)
def test_queue_entries_say_depth_attempts_and_rank(
    entry: str, depth: int, attempts: int, rank: int | None
) -> None:
    assert decode_entry(entry) == (depth, "http://h.test/a")
    assert decode_attempts(entry) == attempts
    assert decode_rank(entry) == rank

"""The Redis host-state codec round-trips every field it keeps, and reads older payloads."""

from __future__ import annotations

import json

import pytest

from courtly.frontier.records import DelaySource, HostState
from courtly.store.redis.codec import decode_state, encode_state


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

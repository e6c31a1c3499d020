"""``courtly.store.redis.outage.OutageLog``: an outage told once, then every few seconds."""

from __future__ import annotations

import logging

import pytest

from courtly.store.redis.outage import OutageLog


def test_an_outage_is_told_once_then_every_few_seconds_then_its_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    outage = OutageLog(logging.getLogger("t.outage"), every_s=5.0, clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger="t.outage")
    outage.answered()  # no outage: nothing to say
    error = ConnectionError("Connection refused")
    for _ in range(100):  # 20 calls retrying every 0.25 s, for 12.5 s
        for _call in range(20):
            outage.failed(error, 0.25)
        now[0] += 0.125
    outage.answered()
    outage.answered()
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "redis unavailable, retrying in 0.25 s: Connection refused",
        "redis unavailable for 5 s, still retrying: Connection refused",
        "redis unavailable for 10 s, still retrying: Connection refused",
        "redis answers again after 12.5 s",
    ]
    outage.failed(error, 0.05)  # the next outage is told from its start
    assert caplog.records[-1].getMessage().startswith("redis unavailable, retrying in 0.05 s")

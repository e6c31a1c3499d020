"""``courtly.store.redis.outage.OutageLog``: an outage told once, then every few seconds."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest

from courtly.fetch.ip_gate import GateClosed
from courtly.store.redis.address import connect
from courtly.store.redis.ip_gate import RedisIpGate
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


async def test_the_ip_gate_tells_an_outage_once_too(caplog: pytest.LogCaptureFixture) -> None:
    """A request waiting for a slot of an address while the server is down asks again
    every poll; each try was a warning ("no slot while redis is unavailable"), a dozen a
    second per address. They now go through the store's OutageLog."""
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = connect(f"redis://127.0.0.1:{port}/0")
    gate = RedisIpGate(client, "t", 2, 30.0)
    caplog.set_level(logging.WARNING)

    async def wait_for_a_slot() -> None:
        async with gate.hold("127.0.0.9"):
            raise AssertionError("a slot on a server that is down")

    waiter = asyncio.create_task(wait_for_a_slot())
    await asyncio.sleep(0.6)  # several polls (every 0.08 s at most)
    gate.close()
    with pytest.raises(GateClosed):
        await waiter
    await client.aclose()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith("redis unavailable"), warnings

"""A process of a shared crawl stays open while another process holds a lease, even when
the next host it knows of is further off than ``COURTLY_MAX_WAIT``: the other process may
give a host back or find new links at any moment."""

from __future__ import annotations

from dataclasses import replace

from courtly.clock import FakeClock
from courtly.frontier import QueueConfig, QueuedUrl
from courtly.integrations.scrapy import CourtlySettings
from courtly.integrations.scrapy.refill import MAX_IDLE_S
from courtly.store.memory import MemoryStore
from tests.unit.integrations.refills import make_refill

TTL_S = 30.0


async def test_a_far_next_host_does_not_close_a_process_while_another_holds_a_lease() -> None:
    clock = FakeClock()
    store = MemoryStore(QueueConfig())
    config = CourtlySettings(
        state_dir=None,
        store="redis://127.0.0.1:6379/0",
        crawl_name="t",
        max_wait_s=5.0,
        min_delay_s=0.5,
    )
    assert config.shared
    refill, frontier, pipe = make_refill(store, clock, config)
    await frontier.add_queued(
        [QueuedUrl("http://a.test/1", "a.test", 0, 0), QueuedUrl("http://b.test/1", "b.test", 0, 0)]
    )
    # Another process leases both; it gives b back for a minute (address busy, say)
    # and keeps a.
    now = clock.now()
    leases = {le.host_key: le for le in (await store.lease(now, TTL_S, 2)).leases}
    b = leases["b.test"]
    assert await store.release(b, replace(b.host, next_allowed_at=now + 60.0), now)

    await refill._fill()
    assert pipe.frontier_busy, "closed while another process held a lease"

    a = leases["a.test"]
    assert await store.complete(a, a.host, (), clock.now(), frontier.config.budget) is not None
    clock.advance(MAX_IDLE_S + 0.1)  # past the time a "yes" is trusted
    await refill._fill()
    assert not pipe.frontier_busy  # no lease anywhere, the next host a minute off: idle

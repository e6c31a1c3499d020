"""On a shared crawl a process leases a host ahead of its time by at most half the min
delay: a host just completed (due one min delay after its response) is seen due by every
process before any of them leases it again. With the full look-ahead (0.25 s) and a 0.2 s
min delay, the process that completed a host took it again in the same step, so it kept
every host it once had and another process of a small crawl could get none."""

from __future__ import annotations

from courtly.clock import FakeClock
from courtly.frontier import QueueConfig, QueuedUrl
from courtly.frontier.records import HostState
from courtly.integrations.scrapy import CourtlySettings
from courtly.integrations.scrapy.keys import key_for
from courtly.integrations.scrapy.refill import LEASE_AHEAD_S, Refill
from courtly.store.base import lease_ahead_s
from courtly.store.memory import MemoryStore
from tests.unit.integrations.refills import make_refill

TTL_S = 30.0
MIN_DELAY_S = 0.2


def _key(page: int) -> str:
    """A request key of a page of a.test (its payload is not stored: loaded as lost)."""
    return key_for(f"http://a.test/{page}", bytes([page]) * 20, dont_filter=False)


async def _refill_after_a_fetch(url: str) -> tuple[Refill, MemoryStore, FakeClock]:
    """A refill of a process whose store is ``url`` (a Redis URL: a shared crawl), on a
    store where a.test/1 was just fetched: a.test is due one min delay from now."""
    clock = FakeClock()
    store = MemoryStore(QueueConfig())
    shared = url.startswith("redis")
    config = CourtlySettings(
        state_dir=None, store=url, min_delay_s=MIN_DELAY_S, crawl_name="t" if shared else None
    )
    refill, frontier, _ = make_refill(store, clock, config)
    # A lease's admission (robots.txt, the address) is not under test: dropped unrun.
    refill.spawn = lambda coro: coro.close()  # type: ignore[method-assign]
    await frontier.add_queued(
        [QueuedUrl(_key(1), "a.test", 0, 0), QueuedUrl(_key(2), "a.test", 0, 0)]
    )
    now = clock.now()
    (lease,) = (await store.lease(now, TTL_S, 1)).leases
    state = HostState(lease.host_key, next_allowed_at=now + MIN_DELAY_S)
    assert await store.complete(lease, state, (), now, frontier.config.budget) is not None
    return refill, store, clock


def test_the_shared_look_ahead_is_at_most_half_the_min_delay() -> None:
    assert lease_ahead_s(0.25, 1.0, shared=True) == 0.25  # the defaults: unchanged
    assert lease_ahead_s(0.25, 0.2, shared=True) == 0.1
    assert lease_ahead_s(0.25, 0.0, shared=True) == 0.0
    assert lease_ahead_s(0.25, 0.2, shared=False) == 0.25  # a store of its own


async def test_a_host_one_min_delay_off_is_not_leased_yet_on_a_shared_crawl() -> None:
    refill, store, clock = await _refill_after_a_fetch("redis://127.0.0.1:6379/0")
    wait_s = await refill._fill()
    assert (await store.counts(clock.now())).leased == 0  # not taken before others see it
    assert abs(wait_s - MIN_DELAY_S / 2) < 1e-6  # looks again half a min delay before
    clock.advance(wait_s)
    await refill._fill()
    assert (await store.counts(clock.now())).leased == 1


async def test_a_local_crawl_keeps_the_full_look_ahead() -> None:
    assert MIN_DELAY_S < LEASE_AHEAD_S
    refill, store, clock = await _refill_after_a_fetch("memory")
    await refill._fill()  # one process alone: nobody to share with, lease as far ahead
    assert (await store.counts(clock.now())).leased == 1

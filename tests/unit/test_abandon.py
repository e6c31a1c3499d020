"""A fetch abandoned at the stop gives its lease back with the gap, named for its term."""

from __future__ import annotations

import asyncio
import random

from courtly.clock import FakeClock
from courtly.crawl.dispatch import Fetches
from courtly.events import Event, HostStateChanged
from courtly.frontier.config import FrontierConfig, QueueConfig
from courtly.frontier.frontier import Candidate, Frontier
from courtly.frontier.politeness import PolitenessConfig
from courtly.frontier.records import DelaySource, Lease
from courtly.page_budget import FetchClaims
from courtly.store.memory import MemoryStore


class _States:
    def __init__(self) -> None:
        self.seen: list[HostStateChanged] = []

    def notify(self, event: Event) -> None:
        if isinstance(event, HostStateChanged):
            self.seen.append(event)


async def test_an_abandoned_fetch_waits_its_gap_under_the_term_that_set_it() -> None:
    clock = FakeClock()
    queues = QueueConfig()
    config = FrontierConfig(queues=queues, politeness=PolitenessConfig(min_delay_s=1.0))
    frontier = Frontier(MemoryStore(queues, rng=random.Random(1)), config, clock=clock)
    states = _States()
    frontier.events.subscribe(states, [HostStateChanged])
    await frontier.add_many([Candidate("http://a.test/", is_seed=True)])
    lease = (await frontier.lease()).leases[0]
    fetches = Fetches(FetchClaims(None))

    async def hang(_: Lease) -> None:
        await asyncio.Event().wait()  # a request that never ends

    async with asyncio.TaskGroup() as group:
        fetches.start(group, lease, hang)
        await asyncio.sleep(0)
        await fetches.abandon(list(fetches.tasks), frontier, clock)
    [changed] = states.seen
    assert changed.state.next_allowed_at == clock.now() + 1.0  # the minimum delay
    assert changed.state.delay_source is DelaySource.MIN_DELAY  # not "robots_unreachable"

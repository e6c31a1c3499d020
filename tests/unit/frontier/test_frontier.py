from __future__ import annotations

import random
from collections import Counter

from courtly.clock import FakeClock
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import FrontierConfig, QueueConfig
from courtly.frontier.frontier import Candidate, Frontier
from courtly.frontier.politeness import PolitenessConfig
from courtly.frontier.records import AddStatus, Outcome, OutcomeKind, QueuedUrl
from courtly.store.memory import MemoryStore


def make(
    *,
    queues: QueueConfig | None = None,
    budget: BudgetConfig | None = None,
    politeness: PolitenessConfig | None = None,
    clock: FakeClock | None = None,
) -> tuple[Frontier, FakeClock]:
    clock = clock or FakeClock()
    queues = queues or QueueConfig()
    config = FrontierConfig(
        queues=queues,
        budget=budget or BudgetConfig(),
        politeness=politeness or PolitenessConfig(min_delay_s=1.0),
    )
    return Frontier(MemoryStore(queues, rng=random.Random(1)), config, clock=clock), clock


async def test_duplicate_spellings_are_seen_once() -> None:
    frontier, _ = make()
    statuses = await frontier.add_many(
        [
            Candidate("HTTP://Example.COM:80/a/./b/../%7Euser#frag", is_seed=True),
            Candidate("http://example.com/a/~user"),
            Candidate("mailto:someone@example.com"),
        ]
    )
    assert statuses == [AddStatus.QUEUED, AddStatus.SEEN, AddStatus.INVALID]
    batch = await frontier.lease()
    assert [lease.url for lease in batch.leases] == ["http://example.com/a/~user"]


async def test_lease_then_complete_honours_the_gap() -> None:
    frontier, clock = make()
    await frontier.add_many([Candidate(f"http://a.test/{i}") for i in range(2)])
    first = (await frontier.lease()).leases[0]
    clock.advance(0.2)
    await frontier.complete(first, Outcome.from_status(200, first.leased_at, clock.now()))
    batch = await frontier.lease()
    assert batch.leases == ()
    assert batch.next_ready_at == clock.now() + 1.0
    clock.set(batch.next_ready_at)
    assert len((await frontier.lease()).leases) == 1


async def test_long_crawl_delay_does_not_hold_a_fetcher() -> None:
    frontier, clock = make()
    await frontier.add_many(
        [Candidate("http://slow.test/1"), Candidate("http://slow.test/2")]
        + [Candidate(f"http://fast{i}.test/") for i in range(3)]
    )
    leases = (await frontier.lease(10)).leases
    slow = next(lease for lease in leases if lease.host_key == "slow.test")
    now = clock.now()
    for lease in leases:
        delay = 600.0 if lease is slow else None
        await frontier.complete(lease, Outcome.from_status(200, now, now, crawl_delay_s=delay))
    counts = await frontier.counts()
    # 600 s is past the threshold: the host keeps its URL but gives up its slot
    assert counts.leased == 0 and counts.hosts_snoozed == 0
    assert (counts.hosts_inactive, counts.hosts_active, counts.back_queued) == (1, 0, 1)
    clock.advance(599.0)
    batch = await frontier.lease(10)
    assert batch.leases == () and batch.next_ready_at == clock.now() + 1.0
    clock.advance(1.0)
    assert [lease.url for lease in (await frontier.lease(10)).leases] == ["http://slow.test/2"]
    assert (await frontier.counts()).hosts_inactive == 0


async def test_back_queues_are_bounded_and_refilled() -> None:
    frontier, clock = make(queues=QueueConfig(levels=1, max_back_queues=2))
    await frontier.add_many([Candidate(f"http://h{i}.test/") for i in range(5)])
    counts = await frontier.counts()
    # hosts are taken in when a lease asks for them, not when URLs arrive
    assert counts.hosts_active == 0 and counts.front_queued == 5
    served: list[str] = []
    for _ in range(5):
        batch = await frontier.lease(5)
        assert len(batch.leases) <= 2
        assert (await frontier.counts()).hosts_active == len(batch.leases)
        for lease in batch.leases:
            served.append(lease.host_key)
            await frontier.complete(lease, Outcome.no_request(clock.now()))
    assert sorted(served) == [f"h{i}.test" for i in range(5)]


async def test_low_levels_still_move_under_a_stream_of_urgent_urls() -> None:
    frontier, clock = make(queues=QueueConfig(levels=4, max_back_queues=4, max_skips=8))
    low = [QueuedUrl(f"http://low{i}.test/", f"low{i}.test", 3) for i in range(20)]
    await frontier.add_queued(low)
    served = Counter[int]()
    n = 0
    for _ in range(400):
        urgent = [QueuedUrl(f"http://u{n + i}.test/", f"u{n + i}.test", 0) for i in range(4)]
        n += 4
        await frontier.add_queued(urgent)
        for lease in (await frontier.lease(4)).leases:
            served[3 if lease.host_key.startswith("low") else 0] += 1
            await frontier.complete(lease, Outcome.no_request(clock.now()))
    assert served[3] == 20, "low-level URLs starved"
    assert served[0] > served[3]


async def test_host_queue_budget_drops_without_marking_seen() -> None:
    frontier, clock = make(budget=BudgetConfig(max_queued_per_host=2))
    urls = [Candidate(f"http://big.test/{i}") for i in range(3)]
    assert await frontier.add_many(urls) == [
        AddStatus.QUEUED,
        AddStatus.QUEUED,
        AddStatus.OVER_HOST_BUDGET,
    ]
    lease = (await frontier.lease()).leases[0]
    await frontier.complete(lease, Outcome.no_request(clock.now()))
    assert await frontier.add(urls[2]) is AddStatus.QUEUED


async def test_crawl_queue_budget() -> None:
    frontier, _ = make(budget=BudgetConfig(max_queued=2))
    statuses = await frontier.add_many([Candidate(f"http://h{i}.test/") for i in range(3)])
    assert statuses[-1] is AddStatus.OVER_CRAWL_BUDGET


async def test_request_budget_retires_the_host_and_drops_its_queue() -> None:
    frontier, clock = make(budget=BudgetConfig(max_requests_per_host=1))
    await frontier.add_many([Candidate(f"http://b.test/{i}") for i in range(3)])
    lease = (await frontier.lease()).leases[0]
    await frontier.complete(lease, Outcome.from_status(200, clock.now(), clock.now()))
    counts = await frontier.counts()
    assert counts.hosts_retired == 1 and counts.hosts_held == 0
    assert await frontier.add("http://b.test/new") is AddStatus.HOST_RETIRED
    # its URLs still in the front tier are dropped, and catalogued, as they come out
    assert (await frontier.lease(4)).leases == ()
    assert (await frontier.counts()).queued == 0
    skipped = {e.url: e.skip_reason async for e in frontier.store.catalogue() if e.skip_reason}
    assert skipped == {f"http://b.test/{i}": "host_retired:budget" for i in (1, 2)}


async def test_dead_host_is_parked_then_retired() -> None:
    politeness = PolitenessConfig(park_after_errors=2, retire_after_parks=2, park_s=10.0)
    frontier, clock = make(politeness=politeness)
    await frontier.add_many([Candidate(f"http://dead.test/{i}") for i in range(10)])
    attempts = 0
    while True:
        batch = await frontier.lease()
        if not batch.leases:
            if batch.next_ready_at is None:
                break
            clock.set(batch.next_ready_at)
            continue
        lease = batch.leases[0]
        attempts += 1
        await frontier.complete(
            lease, Outcome(OutcomeKind.NETWORK_ERROR, clock.now(), clock.now() + 1.0)
        )
    assert attempts == 4
    counts = await frontier.counts()
    assert counts.hosts_retired == 1 and counts.queued == 0


async def test_release_puts_the_url_back_at_the_head() -> None:
    frontier, clock = make()
    await frontier.add_many([Candidate(f"http://r.test/{i}") for i in range(3)])
    lease = (await frontier.lease()).leases[0]
    robots_fetch = Outcome.from_status(200, clock.now(), clock.now() + 0.1)
    assert await frontier.release(lease, robots_fetch)
    assert (await frontier.lease()).leases == ()
    clock.advance(1.1)
    again = (await frontier.lease()).leases[0]
    assert again.url == lease.url and again.token > lease.token
    assert again.host.requests_made == 1


async def test_expired_lease_returns_and_late_completion_is_fenced() -> None:
    frontier, clock = make()
    await frontier.add_many([Candidate(f"http://x.test/{i}") for i in range(2)])
    lost = (await frontier.lease()).leases[0]
    clock.advance(frontier.config.lease_ttl_s)
    again = (await frontier.lease()).leases[0]
    assert again.url == lost.url
    assert await frontier.complete(lost, Outcome.from_status(200, 0, 1)) is None
    assert await frontier.complete(again, Outcome.no_request(clock.now())) == []

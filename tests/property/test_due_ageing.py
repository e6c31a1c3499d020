"""Ageing among due hosts, on a fake clock: a host whose head is worse than every other
due host's is served within ``max_due_wait_s`` of its time, however many better hosts
keep coming due; with ageing off it waits as long as they do (it starves).

A crawl bound by its fetchers is modelled directly on the store: one lease of one host
every ``step_s``; each better host gets a new best-level URL with every page, so there is
always a better head due than the poor host's."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import AddStatus, QueuedUrl
from courtly.store.memory import MemoryStore
from courtly.store.scheduler import is_aged

NO_BUDGET = BudgetConfig(max_queued_per_host=None)
T0 = 1_000.0


def _starve(max_due_wait_s: float, hosts: int, delay_s: float, step_s: float, steps: int) -> float:
    """The longest the poor host waited past its time (or, never served, since then)."""

    async def run() -> float:
        store = MemoryStore(
            QueueConfig(levels=3, max_due_wait_s=max_due_wait_s), rng=random.Random(0)
        )
        good = [f"g{i}.test" for i in range(hosts)]
        seeds = [QueuedUrl(f"http://{h}/0", h, 0) for h in good]
        seeds.append(QueuedUrl("http://poor.test/0", "poor.test", 2))
        assert await store.add(seeds, T0, NO_BUDGET) == [AddStatus.QUEUED] * len(seeds)
        now, due_at, worst = T0, T0, 0.0
        pages = 0
        for _ in range(steps):
            batch = await store.lease(now, 60.0, 1)
            for lease in batch.leases:
                pages += 1
                found = []
                if lease.host_key == "poor.test":
                    worst = max(worst, now - due_at)
                    due_at = now + delay_s
                    found = [QueuedUrl(f"http://poor.test/{pages}", "poor.test", 2)]
                else:
                    found = [QueuedUrl(f"http://{lease.host_key}/{pages}", lease.host_key, 0)]
                state = replace(lease.host, next_allowed_at=now + delay_s)
                await store.complete(lease, state, found, now, NO_BUDGET)
            now += step_s
        await store.aclose()
        return max(worst, now - step_s - due_at)

    return asyncio.run(run())


@settings(max_examples=25, deadline=None)
@given(
    hosts=st.integers(4, 12),
    delay_s=st.floats(0.5, 3.0),
    step_s=st.floats(0.05, 0.25),
    max_due_wait_s=st.floats(0.5, 8.0),
)
def test_a_poor_head_waits_at_most_the_ageing_bound(
    hosts: int, delay_s: float, step_s: float, max_due_wait_s: float
) -> None:
    # more hosts due than one lease per step serves: the crawl is bound by its fetcher
    if hosts * step_s <= delay_s:
        hosts = int(delay_s / step_s) + 2
    waited = _starve(max_due_wait_s, hosts, delay_s, step_s, steps=400)
    # aged once it has waited more than the bound; served at the next lease after that
    assert waited <= max_due_wait_s + step_s + 1e-9, waited


def test_without_ageing_a_poor_head_starves() -> None:
    # 15 hosts due once a second, one lease every 0.1 s: better heads are always due
    waited = _starve(float("inf"), hosts=15, delay_s=1.0, step_s=0.1, steps=400)
    assert waited >= 35.0  # not served again for (nearly) the whole 40 s run
    assert _starve(5.0, hosts=15, delay_s=1.0, step_s=0.1, steps=400) <= 5.1


def test_the_ageing_rule() -> None:
    assert not is_aged(10.0, 15.0, 5.0)
    assert is_aged(10.0, 15.01, 5.0)
    assert not is_aged(10.0, 1e9, float("inf"))

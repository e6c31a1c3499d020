"""Frontier benchmark: 1,000,000 URLs over 10,000 hosts with Zipf-distributed host sizes.

Measures, on the in-memory store through the ``Frontier`` facade:

* ``adds_per_s``: already-canonical URLs offered with ``add_many(canonical=True)``
  (host key, prioritiser, budget check, seen-set, front queue);
* ``adds_canonical_per_s``: raw spellings (10% of them duplicate spellings of
  earlier URLs) through canonicalisation and dedup;
* ``lease_complete_per_s``: lease + complete cycles (pure politeness policy
  included) on the full frontier, a fake clock stepping past the delays;
* ``rss_bytes_per_queued_url``: RSS growth while queuing, divided by URLs queued
  (seen-set included).

Run: ``python benchmarks/frontier.py --json`` (``--urls``/``--hosts`` to scale).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import random
import sys
import time
from collections.abc import Iterator

import psutil

from courtly.clock import FakeClock
from courtly.frontier import (
    BloomSeenSet,
    BudgetConfig,
    Candidate,
    Frontier,
    FrontierConfig,
    Outcome,
    QueueConfig,
)
from courtly.store.memory import MemoryStore

BATCH = 2_000


def host_names(n_hosts: int) -> list[str]:
    return [f"www.site{i}.example" for i in range(n_hosts)]


def zipf_hosts(n_urls: int, n_hosts: int, rng: random.Random) -> list[int]:
    weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(n_hosts)))
    return rng.choices(range(n_hosts), cum_weights=weights, k=n_urls)


def canonical_urls(hosts: list[str], picks: list[int]) -> Iterator[str]:
    for i, h in enumerate(picks):
        yield f"http://{hosts[h]}/section{i % 97}/page-{i}.html?ref={i % 13}"


def raw_spelling(url: str, i: int) -> str:
    """A raw spelling of ``url``: upper-case host, default port, dot segments, fragment."""
    rest = url.partition("://")[2]
    host, _, path = rest.partition("/")
    return f"HTTP://{host.upper()}:80/./{path.replace('page-', 'x/../page-')}#frag{i}"


def make_frontier(n_urls: int, clock: FakeClock) -> Frontier:
    queues = QueueConfig.for_fetchers(64)
    store = MemoryStore(
        queues, seen=BloomSeenSet(capacity=n_urls, error_rate=1e-3), rng=random.Random(42)
    )
    config = FrontierConfig(queues=queues, budget=BudgetConfig(max_queued_per_host=None))
    return Frontier(store, config, clock=clock)


def rss() -> int:
    gc.collect()
    return int(psutil.Process().memory_info().rss)


async def bench_adds(n_urls: int, n_hosts: int) -> tuple[float, float, Frontier, FakeClock]:
    rng = random.Random(1)
    hosts = host_names(n_hosts)
    picks = zipf_hosts(n_urls, n_hosts, rng)
    clock = FakeClock()
    frontier = make_frontier(n_urls, clock)
    base_rss = rss()
    elapsed = 0.0
    queued = 0
    urls = canonical_urls(hosts, picks)
    while True:
        chunk = [
            Candidate(u, depth=(i % 7), is_seed=(i % 1000 == 0))
            for i, u in enumerate(itertools.islice(urls, BATCH))
        ]
        if not chunk:
            break
        t0 = time.perf_counter()
        statuses = await frontier.add_many(chunk, canonical=True)
        elapsed += time.perf_counter() - t0
        queued += sum(1 for s in statuses if s == 0)
        del chunk
    grown = rss() - base_rss
    del picks
    return n_urls / elapsed, grown / max(queued, 1), frontier, clock


async def bench_canonical_adds(n_urls: int, n_hosts: int) -> float:
    rng = random.Random(2)
    hosts = host_names(n_hosts)
    picks = zipf_hosts(n_urls, n_hosts, rng)
    clock = FakeClock()
    frontier = make_frontier(n_urls, clock)
    canon = list(canonical_urls(hosts, picks))
    raw: list[str] = []
    for i, u in enumerate(canon):
        if i % 10 == 9:
            raw.append(raw_spelling(canon[rng.randrange(i)], i))
        else:
            raw.append(raw_spelling(u, i) if i % 2 else u)
    del canon
    elapsed = 0.0
    for start in range(0, n_urls, BATCH):
        chunk = [Candidate(u, depth=1) for u in raw[start : start + BATCH]]
        t0 = time.perf_counter()
        await frontier.add_many(chunk)
        elapsed += time.perf_counter() - t0
    return n_urls / elapsed


async def bench_lease_complete(frontier: Frontier, clock: FakeClock, cycles: int) -> float:
    done = 0
    elapsed = 0.0
    while done < cycles:
        t0 = time.perf_counter()
        batch = await frontier.lease(64)
        now = clock.now()
        for lease in batch.leases:
            await frontier.complete(lease, Outcome.from_status(200, now, now + 0.05))
        elapsed += time.perf_counter() - t0
        done += len(batch.leases)
        if not batch.leases:
            if batch.next_ready_at is None:
                break
            clock.set(max(clock.now(), batch.next_ready_at))
        else:
            clock.advance(0.02)
    return done / elapsed


async def main_async(n_urls: int, n_hosts: int, cycles: int) -> dict[str, object]:
    adds_per_s, rss_per_url, frontier, clock = await bench_adds(n_urls, n_hosts)
    lease_complete = await bench_lease_complete(frontier, clock, cycles)
    del frontier
    gc.collect()
    canonical = await bench_canonical_adds(n_urls, n_hosts)
    return {
        "benchmark": "frontier",
        "urls": n_urls,
        "hosts": n_hosts,
        "adds_per_s": round(adds_per_s),
        "adds_canonical_per_s": round(canonical),
        "lease_complete_per_s": round(lease_complete),
        "lease_complete_cycles": cycles,
        "rss_bytes_per_queued_url": round(rss_per_url, 1),
        "python": sys.version.split()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--cycles", type=int, default=200_000)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = asyncio.run(main_async(args.urls, args.hosts, args.cycles))
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:28} {value}")


if __name__ == "__main__":
    main()

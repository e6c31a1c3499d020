"""SQLite store benchmark: throughput, RAM with a large frontier, resume time.

Measures :class:`~courtly.store.sqlite.SqliteStore` (``synchronous="full"``,
default commit interval) through the ``Frontier`` facade, URLs spread over
hosts with Zipf-distributed sizes:

* ``sqlite_adds_per_s``: already-canonical URLs offered with
  ``add_queued`` in batches of 2,000 (budget check, seen-set, front-queue rows);
* ``rss_bytes_per_queued_url_10m``: RSS growth while queuing ``--urls`` URLs
  (default 10,000,000; the count used is ``queued_urls``), divided by the URLs
  queued, and ``rss_bytes_total`` the process RSS at the end;
* ``sqlite_lease_complete_per_s``: lease + complete cycles on that frontier, a
  fake clock stepping past the politeness delays;
* ``resume_s_1m``: reopen a frontier of ``--resume-urls`` URLs (default
  1,000,000) closed cleanly, and lease the first URL; ``resume_s_1m_after_kill``
  the same after the process "died" right after a commit (no seen-set
  checkpoint: the seen-set tail is replayed).

Run: ``python benchmarks/sqlite_store.py --json`` (``--urls N`` to scale down).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import psutil

from courtly.clock import FakeClock
from courtly.frontier import BudgetConfig, Frontier, FrontierConfig, QueueConfig, QueuedUrl
from courtly.store.sqlite import SqliteStore
from frontier import bench_lease_complete  # benchmarks/frontier.py: the same cycle loop

BATCH = 2_000
QUEUES = QueueConfig.for_fetchers(64)
BUDGET = BudgetConfig(max_queued_per_host=None)


def rss() -> int:
    gc.collect()
    return int(psutil.Process().memory_info().rss)


def chunks(n_urls: int, n_hosts: int, seed: int) -> itertools.chain[list[QueuedUrl]]:
    """``n_urls`` queue entries in lists of ``BATCH``, generated lazily (no RAM held)."""
    rng = random.Random(seed)
    cum = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(n_hosts)))
    hosts = range(n_hosts)

    def one(start: int) -> list[QueuedUrl]:
        picks = rng.choices(hosts, cum_weights=cum, k=min(BATCH, n_urls - start))
        out = []
        for i, h in enumerate(picks, start):
            host = f"www.site{h}.example"
            url = f"http://{host}/section{i % 97}/page-{i}.html?ref={i % 13}"
            out.append(QueuedUrl(url, host, i % QUEUES.levels, i % 7))
        return out

    return itertools.chain(one(start) for start in range(0, n_urls, BATCH))


def dir_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir())


def open_store(path: Path, seen_capacity: int) -> SqliteStore:
    return SqliteStore(path, QUEUES, rng=random.Random(42), seen_capacity=seen_capacity)


async def fill(
    frontier: Frontier, store: SqliteStore, n_urls: int, n_hosts: int
) -> tuple[float, int]:
    elapsed = 0.0
    queued = 0
    for chunk in chunks(n_urls, n_hosts, seed=1):
        t0 = time.perf_counter()
        statuses = await frontier.add_queued(chunk)
        elapsed += time.perf_counter() - t0
        queued += sum(1 for s in statuses if s == 0)
    t0 = time.perf_counter()
    await store.flush()
    elapsed += time.perf_counter() - t0
    return n_urls / elapsed, queued


async def resume(directory: Path, n_urls: int, n_hosts: int) -> tuple[float, float]:
    """Seconds to reopen and lease one URL: after a clean close, and after a "kill"."""
    path = directory / "resume.db"
    clock = FakeClock()
    store = open_store(path, n_urls)
    frontier = Frontier(store, FrontierConfig(queues=QUEUES, budget=BUDGET), clock=clock)
    await fill(frontier, store, n_urls, n_hosts)
    await store.aclose()

    t0 = time.perf_counter()
    store = open_store(path, n_urls)
    batch = await store.lease(clock.now(), 60.0, 1)
    clean_s = time.perf_counter() - t0
    assert batch.leases, "nothing to lease after reopening"
    # more URLs after the seen-set checkpoint, committed, then the process "dies"
    for chunk in chunks(n_urls // 4, n_hosts, seed=2):
        await store.add(chunk, clock.now(), BUDGET)
    await store.flush()
    store._cancel_timer()
    store._db.close()

    t0 = time.perf_counter()
    store = open_store(path, n_urls)
    batch = await store.lease(clock.now(), 60.0, 1)
    killed_s = time.perf_counter() - t0
    assert batch.leases, "nothing to lease after the crash"
    await store.aclose()
    return clean_s, killed_s


async def main_async(args: argparse.Namespace) -> dict[str, object]:
    directory = Path(tempfile.mkdtemp(prefix="courtly-bench-", dir=args.dir))
    try:
        clock = FakeClock()
        base_rss = rss()
        store = open_store(directory / "frontier.db", args.urls)
        frontier = Frontier(store, FrontierConfig(queues=QUEUES, budget=BUDGET), clock=clock)
        adds_per_s, queued = await fill(frontier, store, args.urls, args.hosts)
        total_rss = rss()
        per_url = (total_rss - base_rss) / max(queued, 1)
        cycles_per_s = await bench_lease_complete(frontier, clock, args.cycles)
        await store.aclose()
        file_bytes = dir_bytes(directory)
        (directory / "frontier.db").unlink()
        clean_s, killed_s = await resume(directory, args.resume_urls, args.hosts)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "benchmark": "sqlite_store",
        "queued_urls": queued,
        "hosts": args.hosts,
        "sqlite_adds_per_s": round(adds_per_s),
        "sqlite_lease_complete_per_s": round(cycles_per_s),
        "lease_complete_cycles": args.cycles,
        "rss_bytes_per_queued_url_10m": round(per_url, 1),
        "rss_bytes_total": total_rss,
        "state_file_bytes": file_bytes,
        "resume_urls": args.resume_urls,
        "resume_s_1m": round(clean_s, 3),
        "resume_s_1m_after_kill": round(killed_s, 3),
        "python": sys.version.split()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", type=int, default=10_000_000)
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--cycles", type=int, default=100_000)
    parser.add_argument("--resume-urls", type=int, default=1_000_000)
    parser.add_argument("--dir", default=None, help="where to put the state files")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:30} {value}")


if __name__ == "__main__":
    main()

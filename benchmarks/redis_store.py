"""Redis store benchmark, side by side with the SQLite store in the same run.

Starts its own servers on loopback (a standalone ``redis-server`` and a 3-master
Redis Cluster, both without persistence) and measures, for standalone Redis,
the cluster and SQLite:

* ``*_adds_per_s``: ``--urls`` canonical URLs over ``--hosts`` Zipf-sized hosts,
  offered in batches of 2,000 through the ``Frontier`` facade;
* ``*_lease_complete_per_s``: lease + complete cycles (the dispatcher's pattern:
  lease up to 8, complete each) with zero politeness delay, by 1, 2 and 4 fetcher
  processes on one crawl (Redis; SQLite is one process by design), each process
  running ``--seconds`` seconds;
* ``wait1_*`` against ``wait0_*`` (``--wait-only``, a 3-master cluster with a
  replica each): the same adds and one-process cycles with ``replica_acks=1`` (a
  WAIT after every writing step) and without, alternated ``--rounds`` times; medians;
* ``redis_bytes_per_queued_url``: Redis ``used_memory`` growth while queuing the
  URLs (front queues, host rows, the Bloom seen-set; no catalogue rows: plain adds
  write none), divided by the URLs queued.

Redis runs on the server's clock (as a crawl does). Everything shares one machine:
read the ratios, not the absolute figures. Run:
``python benchmarks/redis_store.py --json``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.redis_servers

from tests.redis_servers import RedisCluster, start_standalone, stop_server

from courtly.clock import SystemClock
from courtly.frontier import BudgetConfig, Frontier, FrontierConfig, QueueConfig, QueuedUrl
from courtly.frontier.politeness import PolitenessConfig
from courtly.frontier.records import Outcome
from courtly.store.base import FrontierStore
from courtly.store.redis import RedisLayout, RedisStore
from courtly.store.redis.address import connect
from courtly.store.sqlite import SqliteStore

BATCH = 2_000
QUEUES = QueueConfig(max_back_queues=10_000)
BUDGET = BudgetConfig(max_queued_per_host=None)
CONFIG = FrontierConfig(
    queues=QUEUES,
    budget=BUDGET,
    politeness=PolitenessConfig(min_delay_s=0.0, delay_factor=0.0),
)


def entries(n_urls: int, n_hosts: int, seed: int) -> list[list[QueuedUrl]]:
    rng = random.Random(seed)
    cum = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(n_hosts)))
    picks = rng.choices(range(n_hosts), cum_weights=cum, k=n_urls)
    out = []
    for i, h in enumerate(picks):
        host = f"www.site{h}.example"
        out.append(QueuedUrl(f"http://{host}/section{i % 97}/page-{i}.html", host, i % 4, i % 7))
    return [out[i : i + BATCH] for i in range(0, n_urls, BATCH)]


SHARDS = [RedisLayout().shards]


def redis_store(url: str, crawl: str, replica_acks: int = 0) -> RedisStore:
    return RedisStore(
        connect(url),
        crawl,
        QUEUES,
        layout=RedisLayout(shards=SHARDS[0]),
        replica_acks=replica_acks,
        replica_wait_s=1.0,
    )


async def fill(store: FrontierStore, chunks: list[list[QueuedUrl]]) -> tuple[float, int]:
    frontier = Frontier(store, CONFIG, clock=SystemClock())
    queued = 0
    t0 = time.perf_counter()
    for chunk in chunks:
        queued += sum(1 for s in await frontier.add_queued(chunk) if s == 0)
    return sum(map(len, chunks)) / (time.perf_counter() - t0), queued


async def cycles(store: FrontierStore, seconds: float) -> int:
    """Lease up to 8 and complete each, for ``seconds``; the cycles done."""
    clock = SystemClock()
    frontier = Frontier(store, CONFIG, clock=clock)
    done = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        batch = await frontier.lease(8)
        for lease in batch.leases:
            now = clock.now()
            await frontier.complete(lease, Outcome.from_status(200, now, now))
        done += len(batch.leases)
        if not batch.leases:
            await asyncio.sleep(0.001)
    return done


def _fetcher_process(
    url: str, crawl: str, shards: int, seconds: float, start_at: float, out: Any
) -> None:
    SHARDS[0] = shards

    async def run() -> int:
        store = redis_store(url, crawl)
        await store.open()
        await asyncio.sleep(max(0.0, start_at - time.time()))
        try:
            return await cycles(store, seconds)
        finally:
            await store.aclose()

    out.put(asyncio.run(run()))


def parallel_cycles(url: str, crawl: str, processes: int, seconds: float) -> float:
    """Cycles per second of ``processes`` fetcher processes on one crawl."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    start_at = time.time() + 3.0  # every process has imported and connected by then
    workers = [
        context.Process(
            target=_fetcher_process,
            args=(url, crawl, SHARDS[0], seconds, start_at, queue),
        )
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    total = sum(int(queue.get(timeout=120)) for _ in workers)
    for worker in workers:
        worker.join()
    return total / seconds


async def used_memory(url: str) -> int:
    client = connect(url)
    try:
        info = await client.info("memory")
        return int(info["used_memory"])
    finally:
        await client.aclose()


async def measure_redis(url: str, label: str, args: argparse.Namespace) -> dict[str, Any]:
    chunks = entries(args.urls, args.hosts, seed=1)
    crawl = f"bench-{label}-{random.randrange(1 << 30):x}"
    before = await used_memory(url) if label == "redis" else 0
    store = redis_store(url, crawl)
    adds_per_s, queued = await fill(store, chunks)
    out: dict[str, Any] = {f"{label}_adds_per_s": round(adds_per_s), f"{label}_queued": queued}
    if label == "redis":
        out["redis_bytes_per_queued_url"] = round(
            ((await used_memory(url)) - before) / max(queued, 1), 1
        )
    out[f"{label}_lease_complete_per_s_1"] = round(
        (await cycles(store, args.seconds)) / args.seconds
    )
    await store.aclose()
    for processes in (2, 4):
        rate = parallel_cycles(url, crawl, processes, args.seconds)
        out[f"{label}_lease_complete_per_s_{processes}"] = round(rate)
    return out


async def measure_memory(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """``used_memory`` growth per queued URL while queuing ``--urls`` over ``--hosts``
    (a fresh server: nothing else in it), and ``MEMORY USAGE`` of every key of the
    crawl summed by key kind (the text after the shard's hash tag, host names cut)."""
    chunks = entries(args.urls, args.hosts, seed=1)
    crawl = f"bench-mem-{random.randrange(1 << 30):x}"
    before = await used_memory(url)
    store = redis_store(url, crawl)
    _, queued = await fill(store, chunks)
    await store.aclose()
    after = await used_memory(url)
    client = connect(url)
    kinds: dict[str, int] = {}
    try:
        async for key in client.scan_iter(match=f"{crawl}:*", count=1000):
            name = key.decode().rpartition("}:")[2]
            kind = "b:<host>" if name.startswith("b:") else name
            kinds[kind] = kinds.get(kind, 0) + int(await client.memory_usage(key, samples=0) or 0)
    finally:
        await client.aclose()
    keyed = sum(kinds.values())
    return {
        "urls": args.urls,
        "hosts": args.hosts,
        "shards": SHARDS[0],
        "queued": queued,
        "used_memory_growth": after - before,
        "redis_bytes_per_queued_url": round((after - before) / max(queued, 1), 1),
        "key_bytes_per_queued_url": round(keyed / max(queued, 1), 1),
        "key_bytes_per_queued_url_by_kind": {
            kind: round(size / max(queued, 1), 2)
            for kind, size in sorted(kinds.items(), key=lambda kv: -kv[1])
        },
    }


async def measure_wait(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """Adds/s and lease + complete cycles/s on a cluster with a replica per master,
    without and with ``replica_acks=1`` (WAIT after every writing step), alternated
    ``args.rounds`` times; the medians, and the ratios of the medians."""
    chunks = entries(args.urls // 5, args.hosts // 5, seed=2)
    runs: dict[str, list[float]] = {}
    for round_ in range(args.rounds):
        for acks in (0, 1):
            crawl = f"bench-wait{acks}-{round_}-{random.randrange(1 << 30):x}"
            store = redis_store(url, crawl, replica_acks=acks)
            adds_per_s, _ = await fill(store, chunks)
            rate = (await cycles(store, args.seconds)) / args.seconds
            await store.aclose()
            runs.setdefault(f"wait{acks}_adds_per_s", []).append(adds_per_s)
            runs.setdefault(f"wait{acks}_lease_complete_per_s_1", []).append(rate)
    out: dict[str, Any] = {key: round(statistics.median(v)) for key, v in runs.items()}
    for what in ("adds_per_s", "lease_complete_per_s_1"):
        out[f"wait1_over_wait0_{what}"] = round(
            out[f"wait1_{what}"] / max(1, out[f"wait0_{what}"]), 3
        )
    return out


async def measure_sqlite(directory: Path, args: argparse.Namespace) -> dict[str, Any]:
    store = SqliteStore(directory / "frontier.db", QUEUES, rng=random.Random(42))
    adds_per_s, _ = await fill(store, entries(args.urls, args.hosts, seed=1))
    rate = (await cycles(store, args.seconds)) / args.seconds
    await store.aclose()
    return {"sqlite_adds_per_s": round(adds_per_s), "sqlite_lease_complete_per_s_1": round(rate)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--shards", type=int, default=RedisLayout().shards)
    parser.add_argument("--rounds", type=int, default=3, help="of the WAIT comparison")
    parser.add_argument(
        "--wait-only", action="store_true", help="only the WAIT comparison (3+3 cluster)"
    )
    parser.add_argument(
        "--memory-only", action="store_true", help="only Redis memory per queued URL"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    SHARDS[0] = args.shards
    if args.memory_only:
        url, server = start_standalone()
        try:
            memory: dict[str, Any] = {"benchmark": "redis_store_memory"}
            memory.update(asyncio.run(measure_memory(url, args)))
        finally:
            stop_server(server)
        print(json.dumps(memory))
        return
    if args.wait_only:
        replicated = RedisCluster().start(masters=3, replicas=1)
        try:
            waits: dict[str, Any] = {"benchmark": "redis_store_wait", "shards": args.shards}
            waits.update(asyncio.run(measure_wait(replicated.url, args)))
        finally:
            replicated.stop()
        print(json.dumps(waits))
        return
    directory = Path(tempfile.mkdtemp(prefix="courtly-bench-"))
    url, server = start_standalone()
    cluster = RedisCluster().start()
    try:
        result: dict[str, Any] = {
            "benchmark": "redis_store",
            "urls": args.urls,
            "hosts": args.hosts,
            "shards": args.shards,
            "seconds": args.seconds,
        }
        result.update(asyncio.run(measure_sqlite(directory, args)))
        result.update(asyncio.run(measure_redis(url, "redis", args)))
        result.update(asyncio.run(measure_redis(cluster.url, "cluster", args)))
        for key in ("redis", "cluster"):
            result[f"{key}_over_sqlite_lease_complete_1"] = round(
                result[f"{key}_lease_complete_per_s_1"]
                / max(1, result["sqlite_lease_complete_per_s_1"]),
                3,
            )
    finally:
        cluster.stop()
        stop_server(server)
        shutil.rmtree(directory, ignore_errors=True)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:40} {value}")


if __name__ == "__main__":
    main()

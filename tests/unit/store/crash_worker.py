"""A crawl-like loop on a SqliteStore, for the crash test (run as a script, killed with SIGKILL).

``python crash_worker.py STATE_FILE LOG_FILE RUN`` adds URLs, leases, completes
(with discovered links and a catalogue entry) and sometimes leaves a lease in
flight, for ever. After each ``flush`` it appends what is now durable to the
log: ``A url`` (added), ``C url`` (completed), ``T token`` (a token handed out).
It prints ``ready`` once the store is open.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

from courtly.archive.catalogue import CatalogueEntry
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import AddStatus, QueuedUrl
from courtly.store.sqlite import SqliteStore

QUEUES = QueueConfig(levels=2, max_back_queues=6)
BUDGET = BudgetConfig(max_queued_per_host=None)
HOSTS = 9


def _entry(run: int, name: str, k: int) -> QueuedUrl:
    host = f"h{k % HOSTS}.test"
    return QueuedUrl(f"http://{host}/{run}/{name}", host, k % 2, 1)


async def main(state: Path, log_path: Path, run: int) -> None:
    rng = random.Random(run)
    store = SqliteStore(
        state,
        QUEUES,
        rng=rng,
        commit_interval_s=0.01,
        synchronous="normal",
        seen_checkpoint_urls=97,
    )
    print("ready", flush=True)
    pending: list[str] = []
    with log_path.open("a") as log:
        for i in range(10**9):
            now = time.time()
            batch = [_entry(run, f"a{i}-{k}", rng.randrange(100)) for k in range(2)]
            statuses = await store.add(batch, now, BUDGET)
            pending += [
                f"A {e.url}" for e, s in zip(batch, statuses, strict=True) if s is AddStatus.QUEUED
            ]
            leases = (await store.lease(now, 0.02, 3)).leases
            for lease in leases:
                pending.append(f"T {lease.token}")
                if rng.random() < 0.05:
                    continue  # in flight until it expires or the process dies
                found = [_entry(run, f"d{lease.token}-{k}", rng.randrange(100)) for k in range(2)]
                host = replace(lease.host, next_allowed_at=now, requests_made=1)
                record = CatalogueEntry(lease.url, status=200, fetched_at=now)
                result = await store.complete(lease, host, found, now, BUDGET, [record])
                assert result is not None
                pending.append(f"C {lease.url}")
                pending += [
                    f"A {e.url}"
                    for e, s in zip(found, result, strict=True)
                    if s is AddStatus.QUEUED
                ]
            if i % 3 == 0:
                await store.flush()
                log.write("".join(line + "\n" for line in pending))
                log.flush()
                pending.clear()
            await asyncio.sleep(0)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])))

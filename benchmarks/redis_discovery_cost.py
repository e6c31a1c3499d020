"""The Redis server's script time per page of discovered links, on a server of its own.

A page of the broad web (250 pages a host) links to most of its host's pages, so a
COMPLETE carries up to 255 URLs of its own host and shard; the Redis server runs every
script on its one thread, so this time bounds the pages/s of every fetcher of a crawl.
Seeds 2,000 hosts, then per page: LEASE, COMPLETE with ``--links`` new links of the
leased host (levels 1 to 3), and for every other page the same links offered again by
an ADD (the other fetcher's discovery: all seen). Prints the server's EVALSHA time
(``INFO commandstats``) per page. Compare code trees with ``PYTHONPATH=DIR/src``,
alternating; read the ratio of one run.

    python benchmarks/redis_discovery_cost.py --pages 256 --links 255
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.redis_servers

from tests.redis_servers import start_standalone, stop_server

from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import QueuedUrl
from courtly.store.redis import RedisLayout, RedisStore
from courtly.store.redis.address import connect


async def measure(url: str, pages: int, links: int) -> dict[str, float]:
    client = connect(url)
    store = RedisStore(client, "cost", QueueConfig(), layout=RedisLayout(shards=64))
    budget = BudgetConfig()
    seeds = [QueuedUrl(f"http://h{h}.test/", f"h{h}.test", 0) for h in range(2000)]
    await store.add(seeds, time.time(), budget)
    before = (await client.info("commandstats"))["cmdstat_evalsha"]["usec"]
    done = 0
    while done < pages:
        batch = await store.lease(time.time(), 60.0, 16)
        for i, lease in enumerate(batch.leases):
            host = lease.host_key
            found = [
                QueuedUrl(f"http://{host}/p/{j}.html", host, 1 + j % 3, depth=1)
                for j in range(links)
            ]
            await store.complete(lease, lease.host, found, time.time(), budget)
            if i % 2 == 0:
                await store.add(found, time.time(), budget)
            done += 1
    after = (await client.info("commandstats"))["cmdstat_evalsha"]["usec"]
    await client.aclose()
    return {"pages": done, "server_ms_per_page": round((after - before) / done / 1000.0, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=256)
    parser.add_argument("--links", type=int, default=255)
    args = parser.parse_args()
    url, server = start_standalone()
    try:
        print(json.dumps(asyncio.run(measure(url, args.pages, args.links))))
    finally:
        stop_server(server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

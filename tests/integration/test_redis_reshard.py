"""Moving shard slots between the masters of a Redis Cluster while the store works.

A shard's scripts touch keys they do not declare (each host's back queue), so while
the shard's slot migrates some of its keys may sit on the source and some on the
target. The shard prelude finds that out before any write and the store calls again:
no script runs half-way, nothing is lost, nothing is leased twice. One test moves a
slot by hand and watches a step wait; the other adds a master and runs ``redis-cli
--cluster reshard`` under two fetchers.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import uuid
from dataclasses import replace

import pytest
from redis.crc import key_slot
from tests.redis_servers import RedisCluster, have_redis_server

from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import AddStatus, Lease, QueuedUrl
from courtly.store.redis import RedisLayout, RedisStore
from courtly.store.redis.address import connect
from courtly.store.redis.codec import shard_of

pytestmark = pytest.mark.skipif(not have_redis_server(), reason="redis-server is not installed")

NO_BUDGET = BudgetConfig(max_queued_per_host=None)
SHARDS = 64
MOVED_SLOTS = 600
"""``redis-cli --cluster reshard`` moves the lowest slots of its source: these many."""


def store_on(cluster: RedisCluster, crawl: str, seed: int) -> RedisStore:
    return RedisStore(
        connect(cluster.url),
        crawl,
        QueueConfig(max_back_queues=256),
        layout=RedisLayout(shards=SHARDS),
        rng=random.Random(seed),
        probe_interval_s=0.0,
    )


def shard_slot(crawl: str, shard: int) -> int:
    return int(key_slot(f"{crawl}:{{{crawl}.{shard}}}:m".encode()))


def host_in(shard: int, taken: int = 0) -> str:
    """The ``taken``-th host key (h0.test, h1.test, ...) that falls in ``shard``."""
    found = 0
    for n in range(100_000):
        host = f"h{n}.test"
        if shard_of(host, SHARDS) == shard:
            if found == taken:
                return host
            found += 1
    raise LookupError(shard)


async def test_a_step_waits_while_its_shard_slot_migrates_and_writes_nothing_half_way() -> None:
    cluster = RedisCluster().start()
    crawl = f"courtly-test-move-{uuid.uuid4().hex[:12]}"
    store = store_on(cluster, crawl, 1)
    try:
        host = host_in(3)
        await store.add([QueuedUrl(f"http://{host}/a", host, 0)], 0.0, NO_BUDGET)
        slot = shard_slot(crawl, 3)
        source = cluster.owner_of(slot)
        target = next(port for port in cluster.ports if port != source)
        before = cluster.keys_in_slot(source, slot)
        assert before > 2
        cluster.begin_move(slot, source, target)
        assert cluster.move_keys(slot, source, target, 2) == 2  # the shard is split in two
        adding = asyncio.create_task(
            store.add([QueuedUrl(f"http://{host}/b", host, 0)], 0.0, NO_BUDGET)
        )
        await asyncio.sleep(0.5)
        # the ADD cannot finish while the slot migrates, and it wrote nothing on either node
        assert not adding.done()
        assert cluster.keys_in_slot(source, slot) == before - 2
        assert cluster.keys_in_slot(target, slot) == 2
        while cluster.move_keys(slot, source, target, 100):
            pass
        cluster.end_move(slot, target)
        assert await asyncio.wait_for(adding, 30.0) == [AddStatus.QUEUED]
        assert cluster.owner_of(slot) == target
        lease = (await store.lease(0.0, 30.0, 1)).leases[0]
        assert lease.url == f"http://{host}/a"
        assert await store.complete(lease, lease.host, (), 0.0, NO_BUDGET) == []
        assert [x.url for x in (await store.lease(0.0, 30.0, 1)).leases] == [f"http://{host}/b"]
    finally:
        await store.aclose()
        cluster.stop()


def crawl_with_moved_shards(least: int) -> tuple[str, list[int]]:
    """A crawl name with at least ``least`` shards whose slots the reshard moves."""
    for _ in range(1000):
        crawl = f"courtly-test-reshard-{uuid.uuid4().hex[:12]}"
        moved = [s for s in range(SHARDS) if shard_slot(crawl, s) < MOVED_SLOTS]
        if len(moved) >= least:
            return crawl, moved
    raise LookupError("no crawl name with enough moved shards")


async def test_resharding_onto_a_new_master_mid_crawl_loses_nothing_leases_nothing_twice() -> None:
    cluster = RedisCluster().start()
    crawl, moved = crawl_with_moved_shards(3)
    stores = [store_on(cluster, crawl, seed) for seed in (1, 2)]
    rng = random.Random(7)
    counter = 0

    def new_urls(n: int, hosts: list[str]) -> list[QueuedUrl]:
        nonlocal counter
        out = []
        for _ in range(n):
            host = rng.choice(hosts)
            counter += 1
            out.append(QueuedUrl(f"http://{host}/p{counter}", host, counter % 2))
        return out

    def keep(entries: list[QueuedUrl], statuses: list[AddStatus]) -> None:
        """The URLs queued are the ones to be served (a Bloom false positive says SEEN)."""
        assert set(statuses) <= {AddStatus.QUEUED, AddStatus.SEEN}
        offered.extend(e for e, st in zip(entries, statuses, strict=True) if st is AddStatus.QUEUED)

    async def add(store: RedisStore, entries: list[QueuedUrl]) -> None:
        keep(entries, await store.add(entries, 0.0, NO_BUDGET))

    try:
        hosts = [f"h{n}.test" for n in range(200)]
        moved_hosts = [host_in(shard, k) for shard in moved for k in range(3)]
        offered: list[QueuedUrl] = []
        await add(stores[0], new_urls(400, hosts) + new_urls(3 * len(moved_hosts), moved_hosts))
        for shard in moved:
            slot = shard_slot(crawl, shard)
            assert cluster.keys_in_slot(cluster.owner_of(slot), slot) > 0
        new = await asyncio.to_thread(cluster.add_master)  # while the fetchers' clients run
        reshard = await asyncio.create_subprocess_exec(
            *cluster.reshard_command(cluster.ports[0], new, MOVED_SLOTS),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        served: list[Lease] = []
        after_move: list[Lease] = []
        live: dict[str, int] = {}  # host -> token of its lease in flight
        finished = False
        for _ in range(20_000):
            batches = await asyncio.gather(*(store.lease(0.0, 60.0, 4) for store in stores))
            for batch in batches:
                for lease in batch.leases:
                    assert lease.host_key not in live, lease  # one lease per host at a time
                    live[lease.host_key] = lease.token
            for store, batch in zip(stores, batches, strict=True):
                for lease in batch.leases:
                    (after_move if finished else served).append(lease)
                    growing = reshard.returncode is None and counter < 3000
                    found = new_urls(2, hosts) if growing else []
                    state = replace(lease.host, next_allowed_at=0.0)
                    statuses = await store.complete(lease, state, found, 0.0, NO_BUDGET)
                    assert statuses is not None, lease  # never fenced: no lease expired
                    keep(found, statuses)
                    del live[lease.host_key]
            if not finished and reshard.returncode is not None:
                finished = True
                # more work for the moved shards, on the new master now
                await add(stores[1], new_urls(2 * len(moved_hosts), moved_hosts))
            if finished and not any(batch.leases for batch in batches):
                counts = await stores[0].counts(0.0)
                if counts.queued == 0 and counts.leased == 0:
                    break
            await asyncio.sleep(0)
        _, errors = await reshard.communicate()
        assert reshard.returncode == 0, errors.decode()
        every = [lease.url for lease in served + after_move]
        # nothing lost, nothing leased twice
        assert sorted(every) == sorted(entry.url for entry in offered)
        assert len({lease.token for lease in served + after_move}) == len(every)
        for shard in moved:
            assert cluster.owner_of(shard_slot(crawl, shard)) == new
        moved_set = set(moved_hosts)
        assert any(lease.host_key in moved_set for lease in after_move)
        print(f"reshard: {len(served)} leases while {MOVED_SLOTS} slots moved, {len(every)} in all")
    finally:
        for store in stores:
            await store.aclose()
        cluster.stop()

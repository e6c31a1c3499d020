"""The Redis store's front depth per priority level (the dashboard's queue depth chart
and ``courtly_front_queue_urls{level}``), summed over shards, standalone and cluster."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest
from tests.redis_servers import (
    cluster_url,
    delete_crawl,
    have_redis_server,
    new_crawl_name,
    standalone_url,
)

from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import QueuedUrl
from courtly.store.base import FrontDepths
from courtly.store.redis import RedisLayout, RedisStore
from courtly.store.redis.address import connect

pytestmark = pytest.mark.skipif(not have_redis_server(), reason="redis-server is not installed")


@pytest.fixture(params=["standalone", "cluster"])
async def crawl(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, str]]:
    url = cluster_url() if request.param == "cluster" else standalone_url()
    name = new_crawl_name("depth")
    yield url, name
    client = connect(url)
    try:
        await delete_crawl(client, name)
    finally:
        await client.aclose()


async def test_the_redis_store_says_the_front_depth_of_each_level(
    crawl: tuple[str, str],
) -> None:
    url, name = crawl
    store = RedisStore(
        connect(url),
        name,
        QueueConfig(max_back_queues=4),
        layout=RedisLayout(shards=8),
        rng=random.Random(1),
        probe_interval_s=0.0,
    )
    try:
        assert isinstance(store, FrontDepths)
        assert store.front_by_level() == (0, 0, 0, 0)  # before any counts: zeros
        entries = [QueuedUrl(f"http://h{i}.test/{i}", f"h{i}.test", level=i % 3) for i in range(30)]
        entries += [QueuedUrl("http://h0.test/more", "h0.test", level=3)]
        now = 1_000.0
        await store.add(entries, now, BudgetConfig(max_queued_per_host=None))
        counts = await store.counts(now)
        depths = store.front_by_level()
        assert depths == (10, 10, 10, 1) and sum(depths) == counts.front_queued
        batch = await store.lease(now, 60.0, 3)  # hosts move from the front tier
        assert batch.leases
        counts = await store.counts(now)
        depths = store.front_by_level()
        assert sum(depths) == counts.front_queued <= 31 - len(batch.leases)
        assert all(n >= 0 for n in depths) and len(depths) == 4
    finally:
        await store.aclose()

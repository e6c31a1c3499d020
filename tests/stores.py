"""Every FrontierStore backend, for the contract suite and the property tests.

Add a backend here and both suites run against it. A factory takes a fresh
directory (for backends that persist) and returns a new, empty store.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path

from courtly.frontier.config import QueueConfig
from courtly.store.base import FrontierStore
from courtly.store.memory import MemoryStore
from courtly.store.redis import RedisLayout, RedisStore
from courtly.store.redis.address import connect
from courtly.store.sqlite import SqliteStore
from tests.redis_servers import cluster_url, delete_crawl, new_crawl_name, standalone_url

StoreFactory = Callable[[Path, QueueConfig, random.Random], FrontierStore]


def _memory(_dir: Path, queues: QueueConfig, rng: random.Random) -> FrontierStore:
    return MemoryStore(queues, rng=rng)


def _sqlite(directory: Path, queues: QueueConfig, rng: random.Random) -> FrontierStore:
    return SqliteStore(directory / "frontier.db", queues, rng=rng)


class DisposableRedisStore(RedisStore):
    """A Redis store that deletes its crawl's keys when closed (tests share servers)."""

    async def aclose(self) -> None:
        await self.flush()
        await delete_crawl(self._client, self._crawl)
        await super().aclose()


def redis_store(
    url: str, queues: QueueConfig, rng: random.Random, *, shards: int = 1, **options: object
) -> DisposableRedisStore:
    """A fresh crawl on the Redis at ``url``; one shard and the caller's clock unless
    told otherwise, so that the contract's fake times drive it."""
    options.setdefault("server_clock", False)
    return DisposableRedisStore(
        connect(url),
        new_crawl_name(),
        queues,
        layout=RedisLayout(shards=shards),
        rng=rng,
        **options,  # type: ignore[arg-type]
    )


def _redis(_dir: Path, queues: QueueConfig, rng: random.Random) -> FrontierStore:
    return redis_store(standalone_url(), queues, rng)


def _redis_cluster(_dir: Path, queues: QueueConfig, rng: random.Random) -> FrontierStore:
    return redis_store(cluster_url(), queues, rng)


def _repeatable(url: str, queues: QueueConfig, rng: random.Random) -> FrontierStore:
    """No wall-clock index cache or overlapped index read, and no probe after the first
    lease: each store call then makes the same script calls whatever the timing, so the
    scripts' random seeds (drawn from the store's seeded ``rng``, one per call), and with
    them the front tier's level draws, repeat run for run. With the cache on, a lease
    within 25 ms of the last index read makes one LEASE call or two (INDEX, then LEASE
    again) depending on the wall clock, and Hypothesis, replaying a run, met other draws
    than the first time (``FlakyStrategyDefinition``); the overlapped read likewise."""
    return redis_store(
        url,
        queues,
        rng,
        index_interval_s=0.0,
        index_overlap_s=0.0,
        probe_interval_s=math.inf,
    )


def _redis_repeatable(_dir: Path, queues: QueueConfig, rng: random.Random) -> FrontierStore:
    return _repeatable(standalone_url(), queues, rng)


def _redis_cluster_repeatable(_dir: Path, queues: QueueConfig, rng: random.Random) -> FrontierStore:
    return _repeatable(cluster_url(), queues, rng)


STORE_FACTORIES: dict[str, StoreFactory] = {
    "memory": _memory,
    "sqlite": _sqlite,
}

REDIS_STORE_FACTORIES: dict[str, StoreFactory] = {
    "redis": _redis,
    "redis-cluster": _redis_cluster,
}
"""Redis standalone and a 3-master cluster (one shard, the caller's clock), as a crawl
makes them (the due-index cache and the probe on): the contract suite runs them."""

REPEATABLE_REDIS_STORE_FACTORIES: dict[str, StoreFactory] = {
    "redis": _redis_repeatable,
    "redis-cluster": _redis_cluster_repeatable,
}
"""The same stores calling the scripts the same way whatever the timing (``_repeatable``),
for the Hypothesis state machine: ``make test`` runs one shorter machine on each, and
``COURTLY_PROPERTY_REDIS=1`` every machine (minutes per backend over the network)."""

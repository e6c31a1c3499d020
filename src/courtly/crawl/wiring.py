"""What a crawl config implies: its frontier settings, its store, its politeness unit.

Pure functions of a :class:`~courtly.config.CrawlConfig` (``open_store`` also opens the
store it names); :class:`~courtly.crawl.Crawler` calls them once at construction.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from courtly.config import CrawlConfig
from courtly.fetch.ip_gate import IpGate
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import FrontierConfig, QueueConfig, default_inactive_after_s
from courtly.frontier.politeness import PolitenessConfig, lost_answer_hold_s
from courtly.frontier.seen import BloomSeenSet
from courtly.store.base import FrontierStore
from courtly.store.memory import MemoryStore
from courtly.store.redis.address import is_redis_url
from courtly.url import DomainResolver, host_key, host_of

if TYPE_CHECKING:
    from courtly.store.redis.store import RedisStore

__all__ = ["frontier_config", "host_key_function", "is_shared", "open_store", "shared_ip_gate"]


def open_store(config: CrawlConfig, queues: QueueConfig) -> FrontierStore:
    """The frontier store a config asks for: SQLite in ``state_dir`` (default), memory,
    or the shared Redis crawl ``crawl_name`` at a ``redis://`` or ``redis+cluster://`` URL."""
    if config.store == "memory":
        return MemoryStore(queues, seen=BloomSeenSet(capacity=1_000_000))
    if is_redis_url(config.store):
        from courtly.store.redis.address import open_redis_store

        assert config.crawl_name is not None  # CrawlConfig checks it
        return open_redis_store(config.store, config.crawl_name, queues)
    from courtly.store.sqlite import SqliteStore  # the SQLite backend is optional at import

    config.state_dir.mkdir(parents=True, exist_ok=True)
    # After a crash, hosts fetched in the last commit window have no stored next-allowed
    # time for their last request: hold every host for one minimum delay from the moment
    # of resuming, which is after that request ended; a host leased at the crash may
    # have lost an answer that asked for more (Retry-After): it waits as after a failure.
    # "crash": the steps of one pass of the event loop (the pages whose responses came in
    # together) share a commit, made before the loop next waits for I/O.
    crash = config.durability == "crash"
    return SqliteStore(
        config.state_dir / "frontier.sqlite3",
        queues,
        resume_guard_s=config.min_delay_s,
        resume_in_flight_s=lost_answer_hold_s(frontier_config(config).politeness),
        commit_interval_s=0.0 if crash else 0.2,
        commit_per_pass=crash,
        synchronous="normal" if crash else "full",
    )


def is_shared(store: FrontierStore) -> bool:
    """True for a store that other crawl processes use at the same time (Redis)."""
    return _redis_store(store) is not None


def shared_ip_gate(store: FrontierStore, config: CrawlConfig) -> IpGate | None:
    """The per-IP cap across every process of a shared (Redis) crawl; ``None`` otherwise."""
    redis_store = _redis_store(store)
    if redis_store is None:
        return None
    return redis_store.ip_gate(
        config.per_ip, config.total_timeout_s + config.connect_timeout_s + 10.0
    )


def _redis_store(store: FrontierStore) -> RedisStore | None:
    """``store`` if it is a Redis store. A process that never imported the Redis store's
    module holds none, so a local crawl does not import that module (about 40 ms of CPU
    a process) to find that out."""
    module = sys.modules.get("courtly.store.redis.store")
    if module is None:
        return None
    return store if isinstance(store, module.RedisStore) else None


def frontier_config(config: CrawlConfig) -> FrontierConfig:
    """The frontier settings implied by a crawl config."""
    return FrontierConfig(
        queues=QueueConfig(
            max_back_queues=config.effective_back_queues(),
            inactive_after_s=default_inactive_after_s(config.min_delay_s),
        ),
        politeness=PolitenessConfig(
            min_delay_s=config.min_delay_s,
            delay_factor=config.delay_factor,
            max_delay_s=config.max_delay_s,
            max_attempts=config.max_attempts,
        ),
        budget=BudgetConfig(
            max_queued_per_host=config.max_queued_per_host,
            max_requests_per_host=config.max_requests_per_host,
        ),
        lease_ttl_s=config.lease_ttl_s,
        params=config.param_policy(),
    )


def host_key_function(mode: Literal["host", "domain"]) -> Callable[[str], str]:
    """The politeness unit of a canonical URL: its host, or its registered domain."""
    if mode == "host":
        return host_of
    resolver = DomainResolver()
    return functools.partial(host_key, mode="domain", resolver=resolver)

"""The Redis store: one frontier for many fetcher processes (see :mod:`.store`).

The names load on first use, so that importing :mod:`.address` (which the crawl's
configuration does, to recognise a store URL) does not import the Redis client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from courtly.store.redis.store import RedisLayout, RedisStore

__all__ = ["RedisLayout", "RedisStore"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from courtly.store.redis import store

        return getattr(store, name)
    raise AttributeError(name)

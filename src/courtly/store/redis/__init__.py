"""The Redis store: one frontier for many fetcher processes (see :mod:`.store`)."""

from courtly.store.redis.store import RedisLayout, RedisStore

__all__ = ["RedisLayout", "RedisStore"]

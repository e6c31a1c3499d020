"""The per-IP cap of a crawl shared by several processes, kept in Redis.

Each address has a sorted set of the slots held on it: a holder's token scored by
the time the slot frees itself (``hold_s`` after it was taken, on the server's
clock), so a slot held by a process that died comes back by itself. Taking a slot
is one Lua call (``ip_gate.lua``); a fetcher that finds every slot taken polls
again after ``poll_s`` (sooner if a slot frees itself sooner).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from courtly.store.redis.scripts import script_text

__all__ = ["RedisIpGate"]

_CALLS = 32
"""Calls in flight at once when no semaphore is given (the client's pool holds 100)."""


class RedisIpGate:
    """An :class:`~courtly.fetch.ip_gate.IpGate` over the crawl's keys in Redis.

    ``cap`` slots per address for the whole crawl; ``hold_s`` must exceed the longest
    exchange (the fetch timeouts plus reading the body). ``ready`` is awaited before
    each call (the store's ``open``). ``calls`` bounds the calls in flight (the store
    shares its own: every caller of one client together stays within its pool, which
    refuses a call beyond its size instead of waiting).
    """

    def __init__(
        self,
        client: Any,
        crawl: str,
        cap: int,
        hold_s: float,
        *,
        ready: Callable[[], Awaitable[None]] | None = None,
        poll_s: float = 0.01,
        calls: asyncio.Semaphore | None = None,
    ) -> None:
        if cap < 1:
            raise ValueError("cap must be >= 1")
        self._client = client
        self._crawl = crawl
        self._cap = cap
        self._hold_ms = max(1.0, hold_s * 1000.0)
        self._poll_s = poll_s
        self._ready = ready
        self._calls = calls if calls is not None else asyncio.Semaphore(_CALLS)
        self._script = client.register_script(script_text("ip_gate"))
        self._ids = itertools.count()
        self._me = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"

    @asynccontextmanager
    async def hold(self, ip: str) -> AsyncIterator[None]:
        key = f"{self._crawl}:ip:{ip}"
        token = f"{self._me}:{next(self._ids)}"
        if self._ready is not None:
            await self._ready()  # a cluster client learns its slots before concurrent calls
        while True:
            async with self._calls:
                got = await self._script(keys=[key], args=[token, self._cap, self._hold_ms])
            if int(got[0]) == 1:
                break
            await asyncio.sleep(min(self._poll_s, max(0.001, int(got[1]) / 1000.0)))
        try:
            yield
        finally:
            async with self._calls:
                await self._client.zrem(key, token)

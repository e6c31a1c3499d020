"""The per-IP cap of a crawl shared by several processes, kept in Redis.

Each address has a sorted set of the slots held on it: a holder's token scored by
the time the slot frees itself (``hold_s`` after it was taken, on the server's
clock), so a slot held by a process that died comes back by itself. Taking a slot
is one Lua call (``ip_gate.lua``). The requests of one process that find every slot
of an address taken wait in turn, and only the first of them asks the server again:
after ``poll_s``, doubling up to ``max_poll_s`` while the slots stay taken, and at
once when this process gives one of them back (a slot another process gives back is
seen at the next poll).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import cache
from typing import Any

from courtly.store.redis.scripts import script_text

__all__ = ["RedisIpGate"]

log = logging.getLogger(__name__)


@cache
def _gone() -> tuple[type[BaseException], ...]:
    """The errors of a server that is down or of a cluster failing over."""
    from redis import exceptions

    return (
        exceptions.ConnectionError,
        exceptions.TimeoutError,
        exceptions.ClusterError,
        exceptions.TryAgainError,
        exceptions.SlotNotCoveredError,
    )


_CALLS = 32
"""Calls in flight at once when no semaphore is given (the client's pool holds 100)."""


class RedisIpGate:
    """An :class:`~courtly.fetch.ip_gate.IpGate` over the crawl's keys in Redis.

    ``cap`` slots per address for the whole crawl; ``hold_s`` must exceed the longest
    exchange (the fetch timeouts plus reading the body). ``ready`` is awaited before
    each call (the store's ``open``). ``calls`` bounds the calls in flight (the store
    shares its own: every caller of one client together stays within its pool, which
    refuses a call beyond its size instead of waiting). ``send(*command)``, if given,
    sends each command instead of the client (the store's batcher on standalone Redis:
    a command goes in one pipeline with the other callers' of its round).
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
        max_poll_s: float = 0.08,
        calls: asyncio.Semaphore | None = None,
        send: Callable[..., Awaitable[Any]] | None = None,
    ) -> None:
        if cap < 1:
            raise ValueError("cap must be >= 1")
        self._client = client
        self._crawl = crawl
        self._cap = cap
        self._hold_ms = max(1.0, hold_s * 1000.0)
        self._poll_s = poll_s
        self._max_poll_s = max(poll_s, max_poll_s)
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}  # ip -> this process's waiters
        self._freed: dict[str, asyncio.Event] = {}  # ip -> set when this process gives one back
        self._ready = ready
        self._calls = calls if calls is not None else asyncio.Semaphore(_CALLS)
        self._script = client.register_script(script_text("ip_gate"))
        self._send = send
        self._ids = itertools.count()
        self._me = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"

    @asynccontextmanager
    async def hold(self, ip: str) -> AsyncIterator[None]:
        key = f"{self._crawl}:ip:{ip}"
        token = f"{self._me}:{next(self._ids)}"
        if self._ready is not None:
            await self._ready()  # a cluster client learns its slots before concurrent calls
        await self._wait_for_slot(ip, key, token)
        try:
            yield
        finally:
            try:
                async with self._calls:
                    if self._send is None:
                        await self._client.zrem(key, token)
                    else:
                        await self._send("ZREM", key, token)
            except _gone() as error:  # the slot frees itself after hold_s
                log.warning("%s: slot not given back (%s); it frees itself", key, error)
            finally:
                freed = self._freed.get(ip)
                if freed is not None:
                    freed.set()  # this process's waiter on the address asks again now

    async def _take(self, key: str, token: str) -> float | None:
        """One try: ``None`` when the slot is taken, else ms until one frees itself (a
        server that is unreachable, a cluster failing over: as if every slot were held,
        so the caller asks again after its poll interval)."""
        try:
            async with self._calls:
                got = await self._call_script(key, token)
        except _gone() as error:
            log.warning("%s: no slot while redis is unavailable: %s", key, error)
            return self._max_poll_s * 1000.0
        return None if int(got[0]) == 1 else float(got[1])

    async def _call_script(self, key: str, token: str) -> Any:
        args = [token, self._cap, self._hold_ms]
        sha = getattr(self._script, "sha", None)
        if self._send is None or sha is None:
            return await self._script(keys=[key], args=args)
        from redis.exceptions import NoScriptError

        try:
            return await self._send("EVALSHA", sha, 1, key, *args)
        except NoScriptError:  # a server that does not know it yet: EVAL caches it there
            return await self._client.eval(script_text("ip_gate"), 1, key, *args)

    async def _wait_for_slot(self, ip: str, key: str, token: str) -> None:
        """Take a slot of ``ip``: at once if this process has no request waiting for the
        address, else in turn behind them. Only the first waiter asks the server, after
        ``poll_s``, doubling up to ``max_poll_s``, and at once when this process gives
        a slot of the address back."""
        waiters = self._waiting.get(ip)
        if waiters is None:
            if await self._take(key, token) is None:
                return
            waiters = self._waiting.setdefault(ip, [])
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.append(turn)
        try:
            if waiters[0] is not turn:
                await turn  # set when every earlier waiter of this process has its slot
            freed = self._freed.setdefault(ip, asyncio.Event())
            delay_s = self._poll_s
            while True:
                freed.clear()
                left_ms = await self._take(key, token)
                if left_ms is None:
                    return
                wait_s = min(delay_s, max(0.001, left_ms / 1000.0))
                try:  # asyncio.timeout, not wait_for: no cancellation is swallowed
                    async with asyncio.timeout(wait_s):
                        await freed.wait()
                    delay_s = self._poll_s
                except TimeoutError:
                    delay_s = min(2 * delay_s, self._max_poll_s)
        finally:
            first = waiters[0] is turn
            waiters.remove(turn)
            if not waiters:
                del self._waiting[ip]
                self._freed.pop(ip, None)
            elif first and not waiters[0].done():
                waiters[0].set_result(None)

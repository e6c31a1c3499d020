"""The per-IP cap of a crawl shared by several processes, kept in Redis.

Each address has a sorted set of the slots held on it: a holder's token scored by
the time the slot frees itself (``hold_s`` after it was taken, on the server's
clock), so a slot held by a process that died comes back by itself. Taking a slot
is one Lua call (``ip_gate.lua``). The requests of one process that find every slot
of an address taken wait in turn, and only the first of them asks the server again:
after ``poll_s``, doubling up to ``max_poll_s`` while the slots stay taken, and at
once when this process gives one of them back (a slot another process gives back is
seen at the next poll).

Turns between processes: the address also has a queue of the gates (one per
process) waiting there, in the order they first found it full. A freed slot goes to
the gate at the head, not to whichever asks first, and a gate that takes one leaves
the queue (its next waiter queues again at the tail): so processes take the places
of a busy address in turn, rather than the one that gives a slot back taking it
again at once. The head asks at least every ``head_poll_s``, since a slot freed by
another process is seen only when it asks (the price of the turns: a slot can stay
free for up to that long). A gate that stops asking (its process died) loses its
turn after ``lapse_s``; one whose last waiter gives up leaves at once.

:meth:`RedisIpGate.close` ends every wait with :class:`~courtly.fetch.ip_gate.GateClosed`:
a waiter's loop calls the server, and a cancellation that comes while such a call
completes can be lost (Python 3.11's ``wait_for``, docs/distributed.md), so an owner
that shuts down does not rely on cancelling its waiters alone.
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

from courtly.fetch.ip_gate import GateClosed
from courtly.store.redis.outage import OutageLog
from courtly.store.redis.scripts import run_script, script_text

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
    a command goes in one pipeline with the other callers' of its round). ``outage``:
    where an unreachable server is told (the store's, so that one outage is told once).
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
        head_poll_s: float = 0.02,
        lapse_s: float = 2.0,
        calls: asyncio.Semaphore | None = None,
        send: Callable[..., Awaitable[Any]] | None = None,
        outage: OutageLog | None = None,
    ) -> None:
        if cap < 1:
            raise ValueError("cap must be >= 1")
        self._client = client
        self._crawl = crawl
        self._cap = cap
        self._hold_ms = max(1.0, hold_s * 1000.0)
        self._poll_s = poll_s
        self._max_poll_s = max(poll_s, max_poll_s)
        self._head_poll_s = min(max(poll_s, head_poll_s), self._max_poll_s)
        self._lapse_ms = max(1.0, lapse_s * 1000.0)
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}  # ip -> this process's waiters
        self._freed: dict[str, asyncio.Event] = {}  # ip -> set when this process gives one back
        self._ready = ready
        self._calls = calls if calls is not None else asyncio.Semaphore(_CALLS)
        self._script = client.register_script(script_text("ip_gate"))
        self._send = send
        self._ids = itertools.count()
        self._me = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self._closed = False
        self._outage = outage if outage is not None else OutageLog(log)

    def close(self) -> None:
        """End every wait for a slot, now and later, with :class:`GateClosed` (slots held
        stay held until their ``async with`` ends)."""
        self._closed = True
        for freed in self._freed.values():
            freed.set()

    @asynccontextmanager
    async def hold(self, ip: str) -> AsyncIterator[None]:
        keys = self._keys(ip)
        key = keys[0]
        token = f"{self._me}:{next(self._ids)}"
        if self._ready is not None:
            await self._ready()  # a cluster client learns its slots before concurrent calls
        if self._closed:
            raise GateClosed(ip)
        await self._wait_for_slot(ip, keys, token)
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
                log.debug("%s: slot not given back (%s); it frees itself", key, error)
                self._outage.failed(error, None)
            finally:
                freed = self._freed.get(ip)
                if freed is not None:
                    freed.set()  # this process's waiter on the address asks again now

    def _keys(self, ip: str) -> list[str]:
        """The address's slot set, then its turns and their lapse times, in its slot."""
        key = f"{self._crawl}:ip:{ip}"
        return [key, f"{self._crawl}:ipq:{{{key}}}", f"{self._crawl}:ipl:{{{key}}}"]

    async def _take(self, keys: list[str], token: str) -> tuple[float, int] | None:
        """One try: ``None`` when the slot is taken, else (ms until a held slot frees
        itself, gates waiting ahead of this one). A server that is unreachable, a cluster
        failing over: as if every slot were held, so the caller asks again after its poll
        interval."""
        try:
            async with self._calls:
                got = await self._call_script(
                    keys, [token, self._cap, self._hold_ms, self._me, self._lapse_ms, "take"]
                )
        except _gone() as error:  # told once, then every few seconds (OutageLog)
            self._outage.failed(error, self._max_poll_s)
            return self._max_poll_s * 1000.0, 1
        self._outage.answered()
        return None if int(got[0]) == 1 else (float(got[1]), int(got[2]))

    async def _leave(self, keys: list[str]) -> None:
        """This gate waits no more at the address: give up its turn (else it lapses)."""
        try:
            async with self._calls:
                await self._call_script(keys, ["", 0, 0, self._me, 0, "leave"])
        except _gone() as error:
            log.debug("%s: turn not given up (%s); it lapses", keys[0], error)
            self._outage.failed(error, None)

    async def _call_script(self, keys: list[str], args: list[Any]) -> Any:
        """The gate's script on ``keys`` (through the store's pipelined calls if given)."""
        return await run_script(self._client, self._script, "ip_gate", keys, args, self._send)

    async def _wait_for_slot(self, ip: str, keys: list[str], token: str) -> None:
        """Take a slot of ``ip``: at once if this process has no request waiting for the
        address and no other gate of the crawl waits there, else in turn. Only the first
        waiter of this process asks the server, after ``poll_s``, doubling up to
        ``max_poll_s`` (``head_poll_s`` once no gate waits ahead of this one), and at once
        when this process gives a slot of the address back."""
        waiters = self._waiting.get(ip)
        if waiters is None:
            waiters = self._waiting.setdefault(ip, [])
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.append(turn)
        took = False
        try:
            if waiters[0] is not turn:
                await turn  # set when every earlier waiter of this process has its slot
            freed = self._freed.setdefault(ip, asyncio.Event())
            delay_s = self._poll_s
            while True:
                if self._closed:  # checked each turn: a lost cancellation ends here
                    raise GateClosed(ip)
                freed.clear()
                refused = await self._take(keys, token)
                if refused is None:
                    took = True
                    return
                left_ms, ahead = refused
                ceiling_s = self._head_poll_s if ahead == 0 else self._max_poll_s
                wait_s = min(delay_s, ceiling_s, max(0.001, left_ms / 1000.0))
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
                if not took:
                    await self._leave(keys)  # the last of this process here gives up
            elif first and not waiters[0].done():
                waiters[0].set_result(None)

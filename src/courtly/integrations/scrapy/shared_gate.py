"""The per-IP cap of a crawl shared by several Scrapy processes, counted in its store.

The places live in Redis (:class:`~courtly.store.redis.ip_gate.RedisIpGate`: one
sorted set per address, a place freeing itself ``hold_s`` after it was taken, so a
killed process's places come back). Taking a place can wait (another process
holds them all), so each admitted item has a task of its own that takes the
place, hands the item on through ``on_admit`` and holds the place until
:meth:`SharedIpGate.release`. Places at one address are interchangeable: a
release frees the oldest one this process holds there.

At close (:meth:`SharedIpGate.close`) nothing more goes on: the places held are
freed, the waits end, and an item offered later waits for ``drain_waiting``. This
does not rest on cancelling the tasks alone: a task cancelled while its store call
completes can lose the cancellation (Python 3.11's ``wait_for``, which the Redis
client sends under) and would otherwise take a place, hand its item on to a
scheduler that is closing and wait for its release for good, so the scheduler's
close never ended.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any, Generic, Protocol, TypeVar

from courtly.fetch.ip_gate import GateClosed

__all__ = ["PlaceHolder", "SharedIpGate"]

T = TypeVar("T")


class PlaceHolder(Protocol):
    """What :class:`~courtly.store.redis.ip_gate.RedisIpGate` offers: hold one place at
    ``ip`` for the life of the context (waiting for one first)."""

    def hold(self, ip: str) -> AbstractAsyncContextManager[None]: ...

    def close(self) -> None:
        """End every wait for a place with :class:`~courtly.fetch.ip_gate.GateClosed`."""
        ...


class SharedIpGate(Generic[T]):
    """An :class:`~courtly.integrations.scrapy.gate.AddressGate` over a store's places.

    ``spawn`` starts a task (the scheduler's task group); ``on_admit`` is called with
    each item once it has its place, on the event loop.
    """

    def __init__(
        self,
        places: PlaceHolder,
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        on_admit: Callable[[T], None],
    ) -> None:
        self._places = places
        self._spawn = spawn
        self._on_admit = on_admit
        self._waiting: dict[int, T] = {}
        self._waiting_at: dict[str, int] = {}
        self._holding: dict[str, deque[asyncio.Future[None]]] = {}
        self._closed = False

    def admit(self, ip: str, item: T) -> bool:
        """Always ``False``: ``item`` goes to ``on_admit`` once it has a place (never
        after :meth:`close`: it waits for :meth:`drain_waiting`)."""
        self._waiting[id(item)] = item
        if self._closed:
            return False
        self._count(ip, 1)  # counted at once: the task asks for a place later
        self._spawn(self._hold(ip, item))
        return False

    async def _hold(self, ip: str, item: T) -> None:
        counted = True
        try:
            async with self._places.hold(ip):
                self._count(ip, -1)
                counted = False
                if self._closed or id(item) not in self._waiting:
                    return  # closing, or drained while it waited: the place goes back
                del self._waiting[id(item)]
                freed = asyncio.get_running_loop().create_future()
                self._holding.setdefault(ip, deque()).append(freed)
                self._on_admit(item)
                await freed
        except GateClosed:
            return  # closed while it waited: no place taken, the item stays to drain
        finally:
            if counted:
                self._count(ip, -1)

    def _count(self, ip: str, delta: int) -> None:
        """``delta`` more items wait for a place at ``ip``."""
        left = self._waiting_at.get(ip, 0) + delta
        if left > 0:
            self._waiting_at[ip] = left
        else:
            self._waiting_at.pop(ip, None)

    def release(self, ip: str) -> T | None:
        """Free the oldest place this process holds at ``ip``; ``None`` (the next item
        comes through ``on_admit``)."""
        holders = self._holding.get(ip)
        if holders:
            freed = holders.popleft()
            if not holders:
                del self._holding[ip]
            if not freed.done():
                freed.set_result(None)
        return None

    def waiting(self) -> int:
        """Items waiting for a place."""
        return len(self._waiting)

    def waiting_at(self, ip: str) -> int:
        """Items of this process waiting for a place at ``ip`` (taking one is a round
        trip: an item counts until it has its place)."""
        return self._waiting_at.get(ip, 0)

    def drain_waiting(self) -> list[T]:
        items = list(self._waiting.values())
        self._waiting.clear()
        return items

    def close(self) -> None:
        """Hand nothing more on: every place held is freed, every wait ends (see the
        module doc); the items that did not go on wait for :meth:`drain_waiting`."""
        self._closed = True
        self._places.close()
        for holders in self._holding.values():
            for freed in holders:
                if not freed.done():
                    freed.set_result(None)
        self._holding.clear()

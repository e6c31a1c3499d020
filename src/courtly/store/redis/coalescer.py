"""Calls of concurrent callers coalesced into one call per key per round.

Completions on the Redis store add their discoveries to other shards before they
complete. Many completions finish at about the same time (a crawl has dozens of
fetches in flight), and each one's links spread over a few shards: sent alone, every
completion would make one ADD per shard it touches. A :class:`Coalescer` gathers
the items every caller submits while no round is running, or while one runs, and
sends them in rounds: one ``send(key, items)`` per key per round, concurrently. A
caller gets its own items' results, in its order, once the round that carried them
is over, so "added before completed" still holds for each completion. Nothing
waits for a timer: the first item starts a round at the next turn of the event
loop, and what arrives during a round goes in the next one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Generic, TypeVar

__all__ = ["Coalescer"]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
R = TypeVar("R")


class Coalescer(Generic[K, T, R]):
    """``send(key, items)`` returns one result per item, in order."""

    def __init__(self, send: Callable[[K, list[T]], Awaitable[Sequence[R]]]) -> None:
        self._send = send
        self._pending: dict[K, list[tuple[T, asyncio.Future[R]]]] = {}
        self._task: asyncio.Task[None] | None = None
        self.rounds = 0
        """Rounds sent so far (each one ``send`` per key)."""
        self.sends = 0
        """``send`` calls so far."""

    async def submit(self, keyed: Sequence[tuple[K, T]]) -> list[R]:
        """The results of ``keyed`` items (a key and an item each), in their order."""
        if not keyed:
            return []
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[R]] = []
        for key, item in keyed:
            future: asyncio.Future[R] = loop.create_future()
            self._pending.setdefault(key, []).append((item, future))
            futures.append(future)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())
        return list(await asyncio.gather(*futures))

    async def aclose(self) -> None:
        """Wait for the round in flight (its callers are waiting for it too)."""
        if self._task is not None and not self._task.done():
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, {}
            self.rounds += 1
            await asyncio.gather(*(self._one(key, items) for key, items in batch.items()))

    async def _one(self, key: K, items: list[tuple[T, asyncio.Future[R]]]) -> None:
        self.sends += 1
        try:
            results = await self._send(key, [item for item, _ in items])
        except BaseException as error:
            for _, future in items:
                if not future.done():
                    future.set_exception(error)
            if isinstance(error, asyncio.CancelledError):
                raise
            return
        for (_, future), result in zip(items, results, strict=True):
            if not future.done():
                future.set_result(result)

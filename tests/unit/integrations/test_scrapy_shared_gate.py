"""The shared per-IP gate: items go on only with a place, a release frees one place."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any

from courtly.integrations.scrapy.shared_gate import SharedIpGate


class Places:
    """An in-memory twin of the store's places: ``cap`` per address for every process."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.taken: dict[str, int] = {}
        self._freed = asyncio.Condition()

    @asynccontextmanager
    async def hold(self, ip: str) -> AsyncIterator[None]:
        async with self._freed:
            await self._freed.wait_for(lambda: self.taken.get(ip, 0) < self.cap)
            self.taken[ip] = self.taken.get(ip, 0) + 1
        try:
            yield
        finally:
            async with self._freed:
                self.taken[ip] -= 1
                self._freed.notify_all()


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_two_gates_on_one_store_keep_the_cap_between_them() -> None:
    places = Places(cap=2)
    admitted: list[str] = []
    tasks: set[asyncio.Task[None]] = set()

    def spawn(coro: Coroutine[Any, Any, None]) -> None:
        tasks.add(asyncio.get_running_loop().create_task(coro))

    first: SharedIpGate[str] = SharedIpGate(places, spawn, admitted.append)
    second: SharedIpGate[str] = SharedIpGate(places, spawn, admitted.append)
    assert not first.admit("10.0.0.1", "a1")
    assert not second.admit("10.0.0.1", "b1")
    assert not second.admit("10.0.0.1", "b2")
    assert not first.admit("10.0.0.2", "a2")
    await _settle()
    assert sorted(admitted) == ["a1", "a2", "b1"]
    assert places.taken == {"10.0.0.1": 2, "10.0.0.2": 1}
    assert second.waiting() == 1
    assert first.release("10.0.0.1") is None  # frees a1's place: b2 takes it
    await _settle()
    assert admitted[-1] == "b2" and places.taken["10.0.0.1"] == 2
    assert second.waiting() == 0


async def test_drained_items_never_go_on_and_take_no_place() -> None:
    places = Places(cap=1)
    admitted: list[str] = []
    tasks: list[asyncio.Task[None]] = []

    def spawn(coro: Coroutine[Any, Any, None]) -> None:
        tasks.append(asyncio.get_running_loop().create_task(coro))

    gate: SharedIpGate[str] = SharedIpGate(places, spawn, admitted.append)
    gate.admit("10.0.0.1", "x")
    gate.admit("10.0.0.1", "y")
    await _settle()
    assert admitted == ["x"]
    assert gate.drain_waiting() == ["y"]
    gate.release("10.0.0.1")
    await asyncio.gather(*tasks)
    assert admitted == ["x"] and places.taken == {"10.0.0.1": 0}

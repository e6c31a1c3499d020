"""The shared per-IP gate: items go on only with a place, a release frees one place."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any

from courtly.fetch.ip_gate import GateClosed
from courtly.integrations.scrapy.shared_gate import SharedIpGate


class Places:
    """An in-memory twin of the store's places: ``cap`` per address for every process."""

    def __init__(
        self, cap: int, *, lose_cancellations: int = 0, close_ends_waits: bool = True
    ) -> None:
        self.cap = cap
        self.close_ends_waits = close_ends_waits
        self.taken: dict[str, int] = {}
        self.closed = False
        self.lost = 0
        self._lose = lose_cancellations
        self._freed = asyncio.Condition()

    @asynccontextmanager
    async def hold(self, ip: str) -> AsyncIterator[None]:
        while True:
            try:
                async with self._freed:
                    await self._freed.wait_for(
                        lambda: self.closed or self.taken.get(ip, 0) < self.cap
                    )
                    if self.taken.get(ip, 0) < self.cap:
                        self.taken[ip] = self.taken.get(ip, 0) + 1
                        break
                    raise GateClosed(ip)
            except asyncio.CancelledError:
                if self.lost >= self._lose:
                    raise
                # Lost, as by Python 3.11's wait_for around a store call that completed
                # in the same turn: the waiter goes on waiting for a place.
                self.lost += 1
        try:
            yield
        finally:
            async with self._freed:
                self.taken[ip] -= 1
                self._freed.notify_all()

    def close(self) -> None:
        """As RedisIpGate's: every wait ends with GateClosed; unless ``close_ends_waits``
        is false (a store call already under way does not see the close)."""
        if self.close_ends_waits:
            self.closed = True
            asyncio.get_running_loop().create_task(self._wake())

    async def _wake(self) -> None:
        async with self._freed:
            self._freed.notify_all()


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def _gate(places: Places) -> tuple[SharedIpGate[str], list[str], list[asyncio.Task[None]]]:
    """A gate over ``places``, the items it handed on, and the tasks it spawned."""
    admitted: list[str] = []
    tasks: list[asyncio.Task[None]] = []

    def spawn(coro: Coroutine[Any, Any, None]) -> None:
        tasks.append(asyncio.get_running_loop().create_task(coro))

    return SharedIpGate(places, spawn, admitted.append), admitted, tasks


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
    gate, admitted, tasks = _gate(places)
    gate.admit("10.0.0.1", "x")
    gate.admit("10.0.0.1", "y")
    await _settle()
    assert admitted == ["x"]
    assert gate.drain_waiting() == ["y"]
    gate.release("10.0.0.1")
    await asyncio.gather(*tasks)
    assert admitted == ["x"] and places.taken == {"10.0.0.1": 0}


async def test_at_close_nothing_goes_on_even_when_a_cancellation_is_lost() -> None:
    """The hang of a shared crawl's close: a waiting task whose cancellation was lost
    took the place freed at close, handed its item on and waited for its release for
    good (the scheduler's task group, and so the spider, never ended)."""
    places = Places(cap=1, lose_cancellations=1, close_ends_waits=False)
    gate, admitted, tasks = _gate(places)
    gate.admit("10.0.0.1", "x")
    gate.admit("10.0.0.1", "y")
    await _settle()
    assert admitted == ["x"]
    gate.close()
    for task in tasks:
        task.cancel()
    gate.admit("10.0.0.1", "z")  # offered after close (a lease admitted late)
    await _settle()
    assert places.lost == 1  # y's cancellation was lost: it took x's place
    assert all(task.done() for task in tasks), "a task of the gate outlived its close"
    assert admitted == ["x"] and places.taken == {"10.0.0.1": 0}
    assert sorted(gate.drain_waiting()) == ["y", "z"]  # given back by the scheduler


async def test_closing_the_places_ends_the_waits_and_keeps_the_items() -> None:
    places = Places(cap=1)
    gate, admitted, tasks = _gate(places)
    gate.admit("10.0.0.1", "x")
    gate.admit("10.0.0.1", "y")
    await _settle()
    gate.close()  # closes the places too: y's wait ends with GateClosed
    await _settle()
    assert all(task.done() for task in tasks), "a task of the gate outlived its close"
    assert admitted == ["x"] and places.taken == {"10.0.0.1": 0}
    assert gate.drain_waiting() == ["y"]

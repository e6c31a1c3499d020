"""The pump's Waker: a poke or the deadline ends a wait; a poke before the wait counts."""

from __future__ import annotations

import asyncio

from courtly.integrations.scrapy.waker import Waker


async def test_a_poke_ends_a_long_wait() -> None:
    waker = Waker()
    waiting = asyncio.create_task(waker.wait(3600.0))
    await asyncio.sleep(0)
    assert not waiting.done()
    waker.poke()
    await asyncio.wait_for(waiting, 5.0)
    assert waker.poked


async def test_a_poke_before_the_wait_returns_at_once_until_cleared() -> None:
    waker = Waker()
    waker.poke()
    await asyncio.wait_for(waker.wait(3600.0), 5.0)
    waker.clear()
    waiting = asyncio.create_task(waker.wait(3600.0))
    await asyncio.sleep(0)
    assert not waiting.done()
    waiting.cancel()


async def test_the_deadline_ends_a_wait_without_a_poke() -> None:
    waker = Waker()
    await asyncio.wait_for(waker.wait(0.001), 5.0)
    assert not waker.poked

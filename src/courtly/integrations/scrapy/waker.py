"""Waker: what the scheduler's pump sleeps on, woken by new work or a deadline.

``asyncio.wait_for(event.wait(), timeout)`` costs the pump a task and a
cancellation per sleep: three or four turns of the event loop between a host
coming due and the pump running, and in a Scrapy process each turn waits for
whatever callbacks are ready (spider output, downloads), tens of milliseconds
on a busy one. A :class:`Waker` is one future and at most one loop timer: a
:meth:`poke` or the deadline resolves the future, and the pump runs on the next
turn. The delay is computed by the caller on its injected clock; the timer is
the loop's, as :meth:`courtly.clock.SystemClock.sleep` uses.
"""

from __future__ import annotations

import asyncio

__all__ = ["Waker"]


class Waker:
    """A one-shot wake-up, re-armed by each :meth:`wait`. Not thread-safe (one loop)."""

    def __init__(self) -> None:
        self._poked = False
        self._future: asyncio.Future[None] | None = None

    def poke(self) -> None:
        """Wake the waiter now (or make its next :meth:`wait` return at once)."""
        self._poked = True
        future = self._future
        if future is not None and not future.done():
            future.set_result(None)

    @property
    def poked(self) -> bool:
        return self._poked

    def clear(self) -> None:
        self._poked = False

    async def wait(self, delay_s: float) -> None:
        """Return after ``delay_s`` seconds, or sooner if poked (at once if poked since
        the last :meth:`clear`)."""
        if self._poked or delay_s <= 0:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._future = future
        timer = loop.call_later(delay_s, _resolve, future)
        try:
            await future
        finally:
            timer.cancel()
            self._future = None


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)

"""The clock seam.

Every policy in courtly takes time as a plain value; the components that need
"now" (the frontier, the crawl loop, caches) receive a :class:`Clock`. Times are
epoch seconds (``float``) so that they can be persisted and compared across a
restart; durations are seconds. Tests use :class:`FakeClock`, which never moves
unless told to (``advance``) or unless someone sleeps on it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """A source of time. ``now()`` is epoch seconds; ``sleep`` waits ``delay_s`` seconds.

    ``sleep`` never returns early on this clock: once it returns, ``now()`` is at
    least its value at the call plus ``delay_s``. A politeness wait relies on it.
    """

    def now(self) -> float: ...

    async def sleep(self, delay_s: float) -> None: ...


class SystemClock:
    """The wall clock (``time.time``) and ``asyncio.sleep``, never returning early.

    The event loop's timers run on another clock and may fire before the delay is
    over on this one: uvloop (libuv) keeps whole milliseconds, rounds the delay to
    the nearest one and starts it from a truncated "now", so ``asyncio.sleep(0.05)``
    measured on ``time.time`` often takes 49.2-50 ms. :meth:`sleep` therefore sleeps
    again for whatever is left (a few sub-millisecond turns of the loop at most)
    until ``now()`` has passed the deadline.
    """

    def now(self) -> float:
        return time.time()

    async def sleep(self, delay_s: float) -> None:
        deadline = time.time() + delay_s
        await asyncio.sleep(max(0.0, delay_s))
        # No event to wait on: the remainder of a timer that fired early on this clock.
        while (left_s := deadline - time.time()) > 0:  # noqa: ASYNC110
            await asyncio.sleep(left_s)


class FakeClock:
    """A clock for tests: time stands still until :meth:`advance` or :meth:`sleep`.

    ``sleep`` advances the clock by the requested amount at once (and yields to
    the event loop), so code that waits out a politeness delay runs instantly.
    """

    def __init__(self, start_at: float = 1_700_000_000.0) -> None:
        self._now = start_at

    def now(self) -> float:
        return self._now

    def advance(self, delta_s: float) -> None:
        if delta_s < 0:
            raise ValueError("a clock never runs backwards")
        self._now += delta_s

    def set(self, at: float) -> None:
        if at < self._now:
            raise ValueError("a clock never runs backwards")
        self._now = at

    async def sleep(self, delay_s: float) -> None:
        if delay_s > 0:
            self._now += delay_s
        await asyncio.sleep(0)

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
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "StepWatch", "SystemClock"]


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


class StepWatch:
    """Notices the wall clock being stepped (set by hand, NTP, a virtual machine resumed).

    Politeness waits run on the wall clock (:class:`SystemClock`, epoch seconds, so that
    they persist and compare across processes and machines). A step forward lets every
    host's next request go up to the step early, once; a step back holds every host the
    step longer. :meth:`look` says how far the wall clock moved beyond (positive) or
    short of (negative) the monotonic clock since the last look (Linux's
    ``CLOCK_BOOTTIME``, which counts a suspended machine's sleep as the wall clock does,
    so a laptop woken up is no step; elsewhere ``time.monotonic``), when that is at least
    ``threshold_s`` seconds: a slewing NTP, which moves the wall clock a fraction of a
    millisecond a second, never reaches it. ``wall`` and ``mono`` are seams for tests.
    """

    def __init__(
        self,
        *,
        threshold_s: float = 1.0,
        wall: Callable[[], float] = time.time,
        mono: Callable[[], float] | None = None,
    ) -> None:
        if mono is None:
            mono = _since_boot
        self.threshold_s = threshold_s
        self._wall, self._mono = wall, mono
        self._last = (wall(), mono())

    def look(self) -> float | None:
        """The wall clock's step since the last look in seconds, or ``None`` if under
        ``threshold_s``."""
        wall, mono = self._wall(), self._mono()
        step_s = (wall - self._last[0]) - (mono - self._last[1])
        self._last = (wall, mono)
        return step_s if abs(step_s) >= self.threshold_s else None


def _since_boot() -> float:
    """Seconds on a clock that never steps and counts a suspended machine's sleep
    (``CLOCK_BOOTTIME`` on Linux; ``time.monotonic`` elsewhere)."""
    if hasattr(time, "CLOCK_BOOTTIME"):
        return time.clock_gettime(time.CLOCK_BOOTTIME)
    return time.monotonic()  # pragma: no cover - not Linux

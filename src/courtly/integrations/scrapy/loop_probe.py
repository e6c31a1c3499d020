"""LoopProbe: how late the event loop runs a timer, sampled through the crawl.

Every step from a host's time to its request in the downloader is a turn of the
event loop (the holdback's timer, the engine's poll, the downloader's task), and
in a busy Scrapy process a turn waits for every callback ready before it. The
probe arms one loop timer every :data:`PROBE_EVERY_S` and records how late it
ran (``courtly/loop_lag_*``): the floor under each stage of the start lag, set by
the process's load and the machine's, not by the scheduler. The delay is measured
on the injected clock; the timer is the loop's (``call_later``, injected too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from courtly.clock import Clock
from courtly.integrations.scrapy.holdback import TimerHandle

__all__ = ["PROBE_EVERY_S", "LoopProbe"]

PROBE_EVERY_S: Final = 0.05


class LoopProbe:
    """Arms a timer every ``every_s`` and hands each one's lateness (seconds) to ``sample``."""

    def __init__(
        self,
        clock: Clock,
        call_later: Callable[[float, Callable[[], None]], TimerHandle],
        sample: Callable[[float], None],
        every_s: float = PROBE_EVERY_S,
    ) -> None:
        self._clock = clock
        self._call_later = call_later
        self._sample = sample
        self._every_s = every_s
        self._timer: TimerHandle | None = None
        self._due_at = 0.0

    def start(self) -> None:
        if self._timer is None:
            self._arm()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        self._due_at = self._clock.now() + self._every_s
        self._timer = self._call_later(self._every_s, self._fire)

    def _fire(self) -> None:
        self._sample(max(0.0, self._clock.now() - self._due_at))
        self._arm()

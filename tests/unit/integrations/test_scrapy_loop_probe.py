"""LoopProbe: one timer at a time, each one's lateness sampled on the injected clock."""

from __future__ import annotations

from collections.abc import Callable

from courtly.clock import FakeClock
from courtly.integrations.scrapy.loop_probe import LoopProbe


class _Timer:
    def __init__(self, delay_s: float, callback: Callable[[], None]) -> None:
        self.delay_s = delay_s
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def test_each_timer_samples_how_late_it_ran_and_arms_the_next() -> None:
    clock, timers, samples = FakeClock(100.0), list[_Timer](), list[float]()

    def call_later(delay_s: float, callback: Callable[[], None]) -> _Timer:
        timers.append(_Timer(delay_s, callback))
        return timers[-1]

    probe = LoopProbe(clock, call_later, samples.append, every_s=0.05)
    probe.start()
    probe.start()  # already armed: no second timer
    assert [t.delay_s for t in timers] == [0.05]
    clock.advance(0.08)  # the loop ran it 30 ms late
    timers[0].callback()
    clock.advance(0.05)  # on time
    timers[1].callback()
    assert [round(s, 6) for s in samples] == [0.03, 0.0]
    assert len(timers) == 3
    probe.stop()
    assert timers[2].cancelled

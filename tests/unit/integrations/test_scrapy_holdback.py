"""The holdback: nothing goes on before its time, everything due goes on when the timer fires."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from courtly.clock import FakeClock
from courtly.integrations.scrapy.holdback import Holdback


class _Timer:
    def __init__(self, at: float, fire: Callable[[], None]) -> None:
        self.at, self.fire, self.cancelled = at, fire, False

    def cancel(self) -> None:
        self.cancelled = True


class _Loop:
    """Loop timers on a fake clock: :meth:`run_until` fires them in time order."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.timers: list[_Timer] = []

    def call_later(self, delay_s: float, fire: Callable[[], None]) -> _Timer:
        timer = _Timer(self.clock.now() + delay_s, fire)
        self.timers.append(timer)
        return timer

    def armed(self) -> list[_Timer]:
        return [t for t in self.timers if not t.cancelled]

    def run_until(self, at: float) -> None:
        while True:
            due = [t for t in self.armed() if t.at <= at]
            if not due:
                break
            timer = min(due, key=lambda t: t.at)
            timer.cancelled = True
            if timer.at > self.clock.now():
                self.clock.set(timer.at)
            timer.fire()
        if at > self.clock.now():
            self.clock.set(at)


@given(st.lists(st.floats(-1.0, 5.0, allow_nan=False), max_size=30), st.floats(0.0, 0.5))
def test_items_go_on_at_their_time_never_before(delays: list[float], lateness: float) -> None:
    clock = FakeClock()
    loop = _Loop(clock)
    start = clock.now()
    gone: list[tuple[int, float]] = []
    holdback: Holdback[int] = Holdback(
        clock, loop.call_later, lambda i: gone.append((i, clock.now()))
    )
    at_once = [i for i, d in enumerate(delays) if not holdback.hold(i, start + d)]
    assert at_once == [i for i, d in enumerate(delays) if start + d <= start]
    assert len(loop.armed()) <= 1  # one timer, for the earliest
    loop.run_until(start + 5.0 + lateness)
    assert sorted(i for i, _ in gone) == [i for i, d in enumerate(delays) if start + d > start]
    for i, at in gone:
        assert at >= start + delays[i]
    assert len(holdback) == 0 and loop.armed() == []


def test_a_late_timer_lets_everything_due_go_at_once_and_drain_empties() -> None:
    clock = FakeClock()
    loop = _Loop(clock)
    gone: list[str] = []
    holdback: Holdback[str] = Holdback(clock, loop.call_later, gone.append)
    now = clock.now()
    for name, delay in (("b", 0.2), ("a", 0.1), ("c", 9.0)):
        assert holdback.hold(name, now + delay)
    clock.advance(0.3)  # the loop was busy: the timer fires late
    loop.run_until(clock.now())
    assert gone == ["a", "b"] and len(holdback) == 1
    assert holdback.drain() == ["c"] and loop.armed() == []

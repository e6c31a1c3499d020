"""The clock seam: :class:`SystemClock` never wakes before its delay is over."""

from __future__ import annotations

import random

from courtly.cli import run_async
from courtly.clock import FakeClock, StepWatch, SystemClock


def test_the_system_clock_never_returns_from_a_sleep_early_on_uvloop() -> None:
    # uvloop's timers keep whole milliseconds: before the clock slept again for the
    # rest, about a quarter of these sleeps returned up to 0.9 ms early on time.time.
    clock = SystemClock()
    rng = random.Random(7)
    delays = [0.002 + rng.random() * 0.002 for _ in range(60)]

    async def shortfalls() -> list[float]:
        short = []
        for delay_s in delays:
            began = clock.now()
            await clock.sleep(delay_s)
            slept_s = clock.now() - began
            if slept_s < delay_s:
                short.append(delay_s - slept_s)
        return short

    assert run_async(shortfalls()) == []


def test_the_fake_clock_moves_by_exactly_the_delay_slept() -> None:
    clock = FakeClock(100.0)
    run_async(clock.sleep(2.5))
    assert clock.now() == 100.0 + 2.5


def test_a_step_watch_notices_the_wall_clock_stepped_either_way() -> None:
    wall, mono = [1_000.0], [50.0]
    watch = StepWatch(wall=lambda: wall[0], mono=lambda: mono[0])
    wall[0] += 2.0
    mono[0] += 2.0
    assert watch.look() is None  # both moved alike
    wall[0] += 2.0 + 3600.0  # set an hour ahead
    mono[0] += 2.0
    assert watch.look() == 3600.0
    wall[0] += 2.0 - 30.0  # NTP steps it back 30 s
    mono[0] += 2.0
    assert watch.look() == -30.0
    wall[0] += 2.0005  # a slew of 0.25 ms a second is no step
    mono[0] += 2.0
    assert watch.look() is None

"""The autoscaler: the pure policy on synthetic samples, and the sampler on a fake clock."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtly.autoscale import (
    AUTO_MAX_FETCHERS,
    AUTO_MIN_FETCHERS,
    AutoscaleConfig,
    Autoscaler,
    Load,
    LoadSample,
    judge_load,
    next_desired,
    run_queue_wait_s,
)
from courtly.clock import FakeClock

CFG = AutoscaleConfig()


def _samples(
    n: int, *, cpu: float = 0.3, lag: float = 0.001, capped: bool = True, desired: int = 32
) -> list[LoadSample]:
    return [LoadSample(float(i), cpu, lag, desired, desired, capped) for i in range(n)]


def test_defaults_are_the_documented_bounds() -> None:
    assert (CFG.min_fetchers, CFG.max_fetchers) == (AUTO_MIN_FETCHERS, AUTO_MAX_FETCHERS)
    assert (AUTO_MIN_FETCHERS, AUTO_MAX_FETCHERS) == (8, 1024)
    assert CFG.min_fetchers <= CFG.initial_fetchers <= CFG.max_fetchers


def test_grows_while_not_overloaded_and_work_waits_for_a_fetcher() -> None:
    assert judge_load(_samples(8, cpu=0.7), CFG) is Load.BUSY
    assert next_desired(32, _samples(8, cpu=0.7), CFG) == 40


def test_doubles_while_work_waits_and_the_machine_has_plenty_of_room() -> None:
    assert judge_load(_samples(8), CFG) is Load.ROOMY  # CPU 0.3, lag 1 ms
    assert next_desired(32, _samples(8), CFG) == 64
    # one sample near a limit: the quarter step
    samples = _samples(8)
    samples[5] = LoadSample(5.0, 0.6, 0.001, 32, 32, True)
    assert next_desired(32, samples, CFG) == 40
    samples[5] = LoadSample(5.0, 0.3, 0.03, 32, 32, True)
    assert next_desired(32, samples, CFG) == 40
    # little CPU used because the machine gave the process none: not room to spare
    samples[5] = LoadSample(5.0, 0.2, 0.001, 32, 32, True, cpu_wait_ratio=0.4)
    assert judge_load(samples, CFG) is Load.BUSY
    assert next_desired(32, samples, CFG) == 40


def test_the_sampler_reads_the_wait_for_a_cpu_per_wall_second() -> None:
    clock = FakeClock()
    scaler = Autoscaler(CFG, clock)
    scaler.observe(clock.now(), 0.0, 0.0, 0, cpu_wait_s=1.0)
    clock.advance(0.5)
    scaler.observe(clock.now(), 0.1, 0.0, 0, cpu_wait_s=1.2)
    (sample,) = scaler.samples
    assert abs(sample.cpu_wait_ratio - 0.4) < 1e-9
    assert abs(sample.cpu_ratio - 0.2) < 1e-9


def test_stays_when_no_host_waits_for_a_fetcher() -> None:
    samples = _samples(8, capped=False)
    assert judge_load(samples, CFG) is Load.IDLE
    assert next_desired(32, samples, CFG) == 32


@pytest.mark.parametrize(("cpu", "lag"), [(0.99, 0.001), (0.3, 0.2), (1.2, 0.3)])
def test_shrinks_when_cpu_or_event_loop_lag_is_over_its_threshold(cpu: float, lag: float) -> None:
    samples = _samples(8, cpu=cpu, lag=lag)  # capped too: overload wins over work waiting
    assert judge_load(samples, CFG) is Load.OVERLOADED
    assert next_desired(100, samples, CFG) == 90


def test_a_short_spike_is_not_an_overload() -> None:
    samples = _samples(10)
    samples[3] = LoadSample(3.0, 1.0, 0.5, 32, 32, True)
    assert judge_load(samples, CFG) is Load.BUSY


def test_never_leaves_the_bounds() -> None:
    assert next_desired(AUTO_MAX_FETCHERS, _samples(8), CFG) == AUTO_MAX_FETCHERS
    assert next_desired(AUTO_MIN_FETCHERS, _samples(8, cpu=2.0), CFG) == AUTO_MIN_FETCHERS
    pinned = AutoscaleConfig.pinned(32)
    assert next_desired(32, _samples(8), pinned) == 32
    assert next_desired(32, _samples(8, lag=1.0), pinned) == 32


def test_config_refuses_inconsistent_bounds() -> None:
    with pytest.raises(ValueError, match="min_fetchers"):
        AutoscaleConfig(min_fetchers=10, max_fetchers=5, initial_fetchers=7)
    with pytest.raises(ValueError, match="initial_fetchers"):
        AutoscaleConfig(initial_fetchers=4)
    with pytest.raises(ValueError, match="grow_ratio"):
        AutoscaleConfig(grow_ratio=1.5)
    with pytest.raises(ValueError, match="fast_grow_ratio"):
        AutoscaleConfig(grow_ratio=0.5, fast_grow_ratio=0.25)
    assert AutoscaleConfig.auto(None) == AutoscaleConfig()
    assert AutoscaleConfig.auto(7).is_pinned


_SAMPLE = st.builds(
    LoadSample,
    at=st.floats(0, 100),
    cpu_ratio=st.floats(0, 2),
    loop_lag_s=st.floats(0, 1),
    desired=st.integers(1, 2000),
    in_flight=st.integers(0, 2000),
    capped=st.booleans(),
)


@given(desired=st.integers(1, 5000), samples=st.lists(_SAMPLE, max_size=30))
def test_next_desired_moves_one_step_toward_the_verdict_within_bounds(
    desired: int, samples: list[LoadSample]
) -> None:
    after = next_desired(desired, samples, CFG)
    assert CFG.min_fetchers <= after <= CFG.max_fetchers
    clamped = min(CFG.max_fetchers, max(CFG.min_fetchers, desired))
    load = judge_load(samples, CFG)
    if load is Load.OVERLOADED:
        assert after <= clamped
    elif load in (Load.BUSY, Load.ROOMY):
        assert after >= clamped
    else:
        assert after == clamped


class _Cpu:
    """A synthetic process CPU meter: ``ratio`` CPU seconds per second of the fake clock."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.ratio = 0.2
        self.total = 0.0
        self.last = clock.now()

    def __call__(self) -> float:
        now = self.clock.now()
        self.total += self.ratio * (now - self.last)
        self.last = now
        return self.total


def test_the_sampler_grows_on_a_light_busy_process_and_shrinks_when_the_cpu_saturates() -> None:
    clock = FakeClock()
    cpu = _Cpu(clock)
    scaler = Autoscaler(CFG, clock, cpu_time=cpu)
    step = CFG.sample_interval_s
    scaler.observe(clock.now(), cpu(), 0.0, 0)
    for _ in range(int(10 / step)):  # 10 s: busy (capped) and light on the CPU
        clock.advance(step)
        scaler.note_capped()
        scaler.observe(clock.now(), cpu(), 0.0, scaler.desired)
    grown = scaler.desired
    assert grown > CFG.initial_fetchers
    cpu.ratio = 1.0  # the process now uses a whole core
    for _ in range(int(10 / step)):
        clock.advance(step)
        scaler.note_capped()
        scaler.observe(clock.now(), cpu(), 0.0, scaler.desired)
    assert scaler.desired < grown
    assert all(s.cpu_ratio == pytest.approx(1.0) for s in scaler.samples)


def test_the_sampler_measures_event_loop_lag_on_the_injected_clock() -> None:
    class LaggyClock(FakeClock):
        async def sleep(self, delay_s: float) -> None:
            await super().sleep(delay_s + 0.2)  # every wake-up comes 0.2 s late

    async def scenario() -> list[LoadSample]:
        clock = LaggyClock()
        scaler = Autoscaler(CFG, clock, cpu_time=lambda: 0.0, cpu_wait=lambda: 0.0)
        changes: list[int] = []
        task = asyncio.create_task(scaler.run(lambda: 10, lambda: changes.append(scaler.desired)))
        for _ in range(40):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert changes and changes[0] < CFG.initial_fetchers  # lag shrank it
        return list(scaler.samples)

    samples = asyncio.run(scenario())
    assert samples and all(s.loop_lag_s == pytest.approx(0.2) for s in samples)


def test_a_pinned_scaler_never_samples() -> None:
    calls: list[int] = []

    def in_flight() -> int:
        calls.append(1)
        return 0

    async def scenario() -> None:
        scaler = Autoscaler(AutoscaleConfig.pinned(5), FakeClock(), cpu_time=lambda: 0.0)
        await scaler.run(in_flight, lambda: None)
        assert scaler.desired == 5

    asyncio.run(scenario())
    assert calls == []


def test_lag_from_waiting_for_a_cpu_is_not_held_against_the_process() -> None:
    """On a machine busy with other work the loop wakes late because it waits for a CPU;
    fewer fetchers would not cure that, so that part of the lag is not counted."""

    class StarvedClock(FakeClock):
        def __init__(self) -> None:
            super().__init__()
            self.waited = 0.0

        async def sleep(self, delay_s: float) -> None:
            self.waited += 0.3  # every wake-up waits 0.3 s on the run queue
            await super().sleep(delay_s + 0.3)

    async def scenario() -> Autoscaler:
        clock = StarvedClock()
        scaler = Autoscaler(CFG, clock, cpu_time=lambda: 0.0, cpu_wait=lambda: clock.waited)
        task = asyncio.create_task(scaler.run(lambda: 10, lambda: None))
        for _ in range(40):
            scaler.note_capped()
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return scaler

    scaler = asyncio.run(scenario())
    assert scaler.desired > CFG.initial_fetchers  # not overloaded, and work was waiting
    assert all(s.loop_lag_s == pytest.approx(0.0, abs=1e-9) for s in scaler.samples)


def test_run_queue_wait_is_a_growing_count_of_seconds() -> None:
    first = run_queue_wait_s()
    assert first >= 0.0
    assert run_queue_wait_s() >= first

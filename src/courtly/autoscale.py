"""How many fetchers a crawler process runs: grown while the machine has room, shrunk when not.

The crawl dispatcher keeps at most :attr:`Autoscaler.desired` requests in flight.
An :class:`Autoscaler` samples, every ``sample_interval_s`` on the injected clock:

* the CPU this process used since the last sample, per wall second (1.0 = one
  core busy; ``--processes`` defaults to one process per core, so one core is
  each process's share);
* the event-loop lag: how much later than asked its own sleep returned (a busy
  loop answers late: callbacks queue up behind one another), less the time the
  loop's thread spent waiting for a CPU meanwhile (Linux ``schedstat``: other
  processes' load, which fewer fetchers would not cure);
* whether the dispatcher was *capped*: a lease filled every free slot, so
  more hosts may have been ready than fetchers were allowed.

Every ``decide_interval_s`` the pure policy :func:`next_desired` looks at the
samples of the last ``window_s`` seconds: if more than ``overloaded_share`` of
them had the CPU above ``max_cpu_ratio`` or the loop lag above
``max_loop_lag_s``, the desired count shrinks by ``shrink_ratio``; else, if at
least ``busy_share`` of them were capped (there is work waiting for a fetcher),
it grows: by ``fast_grow_ratio`` (doubles) when every sample had the CPU at most
``roomy_cpu_ratio``, the loop lag at most half ``max_loop_lag_s`` and the loop's
thread waiting for a CPU at most ``roomy_cpu_wait_ratio`` of the time (the machine
has plenty of room: a start-up burst of hosts due at once; a process that uses little
CPU because others leave it none is not roomy), else by
``grow_ratio``; else it stays. It never leaves
``[min_fetchers, max_fetchers]``. ``--concurrency N`` pins it
(:meth:`AutoscaleConfig.pinned`): no sampling at all.
"""

from __future__ import annotations

import enum
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from courtly.clock import Clock

__all__ = [
    "AUTO_MAX_FETCHERS",
    "AUTO_MIN_FETCHERS",
    "AutoscaleConfig",
    "Autoscaler",
    "Load",
    "LoadSample",
    "judge_load",
    "next_desired",
    "run_queue_wait_s",
]

log = logging.getLogger("courtly.autoscale")

AUTO_MIN_FETCHERS = 8
"""The fewest fetchers an autoscaled crawler process runs."""
AUTO_MAX_FETCHERS = 1024
"""The most fetchers an autoscaled crawler process runs."""


@dataclass(frozen=True, slots=True)
class AutoscaleConfig:
    """Bounds and thresholds of the autoscaler. Durations in seconds, ratios in [0, 1]
    except ``max_cpu_ratio`` (CPU seconds per wall second of this process)."""

    min_fetchers: int = AUTO_MIN_FETCHERS
    max_fetchers: int = AUTO_MAX_FETCHERS
    initial_fetchers: int = 32
    """Where a crawl starts (the former fixed default)."""
    sample_interval_s: float = 0.25
    decide_interval_s: float = 1.0
    window_s: float = 4.0
    """Samples older than this are forgotten."""
    max_cpu_ratio: float = 0.95
    max_loop_lag_s: float = 0.05
    overloaded_share: float = 0.4
    """Shrink when more than this share of the window's samples were overloaded."""
    busy_share: float = 0.5
    """Grow (when not overloaded) if at least this share of the samples were capped."""
    grow_ratio: float = 0.25
    fast_grow_ratio: float = 1.0
    """Growth when busy with room to spare (see ``roomy_cpu_ratio``)."""
    roomy_cpu_ratio: float = 0.5
    """Busy, and every sample at most this CPU ratio (and half the lag limit, and at most
    ``roomy_cpu_wait_ratio``): grow by ``fast_grow_ratio``."""
    roomy_cpu_wait_ratio: float = 0.1
    """Seconds the loop's thread waited for a CPU per wall second, at most, to be roomy."""
    shrink_ratio: float = 0.1

    def __post_init__(self) -> None:
        if not 1 <= self.min_fetchers <= self.max_fetchers:
            raise ValueError("need 1 <= min_fetchers <= max_fetchers")
        if not self.min_fetchers <= self.initial_fetchers <= self.max_fetchers:
            raise ValueError("initial_fetchers must lie within [min_fetchers, max_fetchers]")
        for name in ("sample_interval_s", "decide_interval_s", "window_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        for name in ("overloaded_share", "busy_share", "grow_ratio", "shrink_ratio"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value <= 1):
                raise ValueError(f"{name} must lie within [0, 1], got {value!r}")
        if not (math.isfinite(self.fast_grow_ratio) and self.grow_ratio <= self.fast_grow_ratio):
            raise ValueError("fast_grow_ratio must be finite and at least grow_ratio")
        for name in ("roomy_cpu_ratio", "roomy_cpu_wait_ratio"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")

    @classmethod
    def pinned(cls, fetchers: int) -> AutoscaleConfig:
        """Exactly ``fetchers`` (``--concurrency N``): the bounds coincide."""
        return cls(min_fetchers=fetchers, max_fetchers=fetchers, initial_fetchers=fetchers)

    @classmethod
    def auto(cls, fetchers: int | None) -> AutoscaleConfig:
        """Pinned to ``fetchers`` if given, else the autoscaled default."""
        return cls() if fetchers is None else cls.pinned(fetchers)

    @property
    def is_pinned(self) -> bool:
        return self.min_fetchers == self.max_fetchers


@dataclass(frozen=True, slots=True)
class LoadSample:
    """One look at the process; ``at`` is epoch seconds on the crawl's clock."""

    at: float
    cpu_ratio: float
    """CPU seconds this process used per wall second since the previous sample."""
    loop_lag_s: float
    """How much later than asked the sampler's sleep returned, less the time the loop's
    thread waited for a CPU meanwhile (the lag this process's own work caused)."""
    desired: int
    in_flight: int
    capped: bool
    """Since the previous sample, a lease filled every free slot (work was waiting)."""
    cpu_wait_ratio: float = 0.0
    """Seconds the loop's thread was runnable but waiting for a CPU, per wall second
    since the previous sample (other processes' load)."""


def run_queue_wait_s() -> float:
    """Seconds the calling thread has spent runnable but waiting for a CPU (Linux
    ``/proc/thread-self/schedstat``); 0.0 where that is not available."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as stat:
            return int(stat.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


class Load(enum.Enum):
    """The verdict on a window of samples."""

    OVERLOADED = "overloaded"
    BUSY = "busy"
    """Not overloaded, and fetchers were the limit: more would do more."""
    ROOMY = "roomy"
    """Busy, and the CPU and the loop were far from their limits in every sample."""
    IDLE = "idle"
    """Not overloaded, and fetchers were not the limit (no host waiting for one)."""


def judge_load(samples: Sequence[LoadSample], cfg: AutoscaleConfig) -> Load:
    """Pure: what the samples say (see the module doc). No samples: idle."""
    if not samples:
        return Load.IDLE
    overloaded = sum(
        1 for s in samples if s.cpu_ratio > cfg.max_cpu_ratio or s.loop_lag_s > cfg.max_loop_lag_s
    )
    if overloaded > cfg.overloaded_share * len(samples):
        return Load.OVERLOADED
    capped = sum(1 for s in samples if s.capped)
    if capped < cfg.busy_share * len(samples):
        return Load.IDLE
    lag_s = cfg.max_loop_lag_s / 2
    if all(
        s.cpu_ratio <= cfg.roomy_cpu_ratio
        and s.loop_lag_s <= lag_s
        and s.cpu_wait_ratio <= cfg.roomy_cpu_wait_ratio
        for s in samples
    ):
        return Load.ROOMY
    return Load.BUSY


def next_desired(desired: int, samples: Sequence[LoadSample], cfg: AutoscaleConfig) -> int:
    """Pure: the desired fetcher count after ``samples`` (the last window), within bounds.

    Overloaded: ``desired − ceil(shrink_ratio × desired)``; busy: ``desired +
    ceil(grow_ratio × desired)``; roomy: ``desired + ceil(fast_grow_ratio × desired)``;
    idle: unchanged.
    """
    load = judge_load(samples, cfg)
    if load is Load.OVERLOADED:
        desired -= max(1, math.ceil(cfg.shrink_ratio * desired))
    elif load is Load.BUSY:
        desired += max(1, math.ceil(cfg.grow_ratio * desired))
    elif load is Load.ROOMY:
        desired += max(1, math.ceil(cfg.fast_grow_ratio * desired))
    return min(cfg.max_fetchers, max(cfg.min_fetchers, desired))


class Autoscaler:
    """The desired fetcher count of one crawler process, and the sampling loop behind it.

    The dispatcher reads :attr:`desired` before each lease and calls
    :meth:`note_capped` when a lease filled every free slot. :meth:`run` samples
    until cancelled and calls ``on_change`` when :attr:`desired` changes (so a
    waiting dispatcher can lease more at once). ``cpu_time`` returns this
    process's CPU seconds (``time.process_time`` by default); ``cpu_wait`` the
    seconds the loop's thread waited for a CPU (:func:`run_queue_wait_s`).
    """

    def __init__(
        self,
        cfg: AutoscaleConfig,
        clock: Clock,
        *,
        cpu_time: Callable[[], float] = time.process_time,
        cpu_wait: Callable[[], float] = run_queue_wait_s,
    ) -> None:
        self.cfg = cfg
        self._clock = clock
        self._cpu_time = cpu_time
        self._cpu_wait = cpu_wait
        self.desired = cfg.initial_fetchers
        self._capped = False
        self._samples: deque[LoadSample] = deque()
        self._last_at: float | None = None
        self._last_cpu = 0.0
        self._last_wait = 0.0
        self._decided_at: float | None = None

    @property
    def samples(self) -> tuple[LoadSample, ...]:
        """The samples of the current window, oldest first."""
        return tuple(self._samples)

    def note_capped(self) -> None:
        """The dispatcher filled every free slot: a host may be waiting for a fetcher."""
        self._capped = True

    def observe(
        self, at: float, cpu_s: float, loop_lag_s: float, in_flight: int, cpu_wait_s: float = 0.0
    ) -> bool:
        """Record one sample taken at ``at`` with the process CPU total ``cpu_s`` (and the
        loop thread's total wait for a CPU ``cpu_wait_s``); decide if
        ``decide_interval_s`` has passed. Returns True if :attr:`desired` changed."""
        if self._last_at is None:
            self._last_at, self._last_cpu, self._decided_at = at, cpu_s, at
            self._last_wait = cpu_wait_s
            self._capped = False
            return False
        wall = at - self._last_at
        ratio = (cpu_s - self._last_cpu) / wall if wall > 0 else 0.0
        waited = max(0.0, (cpu_wait_s - self._last_wait) / wall) if wall > 0 else 0.0
        self._last_at, self._last_cpu, self._last_wait = at, cpu_s, cpu_wait_s
        lag = max(0.0, loop_lag_s)
        sample = LoadSample(at, ratio, lag, self.desired, in_flight, self._capped, waited)
        self._capped = False
        self._samples.append(sample)
        while self._samples and self._samples[0].at <= at - self.cfg.window_s:
            self._samples.popleft()
        assert self._decided_at is not None
        if at - self._decided_at < self.cfg.decide_interval_s:
            return False
        self._decided_at = at
        before = self.desired
        self.desired = next_desired(before, self._samples, self.cfg)
        if self.desired != before:
            log.info(
                "fetchers %d -> %d (%s; cpu %.2f, lag %.3f s, in flight %d)",
                before,
                self.desired,
                judge_load(self._samples, self.cfg).value,
                max(s.cpu_ratio for s in self._samples),
                max(s.loop_lag_s for s in self._samples),
                in_flight,
            )
            # Samples taken at the old count say little about the new one.
            self._samples.clear()
        return self.desired != before

    async def run(self, in_flight: Callable[[], int], on_change: Callable[[], None]) -> None:
        """Sample every ``sample_interval_s`` until cancelled (does nothing when pinned)."""
        if self.cfg.is_pinned:
            return
        interval = self.cfg.sample_interval_s
        clock = self._clock
        self.observe(clock.now(), self._cpu_time(), 0.0, in_flight(), self._cpu_wait())
        while True:
            before, waited = clock.now(), self._cpu_wait()
            await clock.sleep(interval)
            now = clock.now()
            wait_s = self._cpu_wait()
            lag = (now - before - interval) - (wait_s - waited)
            if self.observe(now, self._cpu_time(), lag, in_flight(), wait_s):
                on_change()

"""The scheduler's figures in ``crawler.stats``, under ``courtly/*``.

Counters go straight to Scrapy's stats collector; the start-lag and scrape samples
are kept here (at most :data:`LAG_SAMPLES` of each) and published as p50, p95, p99 and
max, in milliseconds, when the scheduler closes (docs/scrapy.md lists them all).
"""

from __future__ import annotations

from typing import Final, Protocol

from courtly.integrations.scrapy.held import Held

__all__ = ["LAG_SAMPLES", "SchedulerStats", "StatsSink"]

LAG_SAMPLES: Final = 50_000


class StatsSink(Protocol):
    """The part of Scrapy's ``StatsCollector`` used here."""

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None: ...

    def set_value(self, key: str, value: object) -> None: ...


class SchedulerStats:
    """``courtly/<name>`` counters and the lag samples behind the ``*_p50_ms`` figures."""

    def __init__(self, sink: StatsSink) -> None:
        self._sink = sink
        self._lags: list[tuple[float, float, float, float, float]] = []
        """Per request that was owed: (due -> due buffer less the per-IP wait, -> engine,
        -> downloader, the per-IP wait, the part of the first that the lease came after
        the due time), seconds."""
        self._scrape_lags: list[float] = []
        """Per response: seconds from its end to the end of its callback's output."""
        self._loop_lags: list[float] = []
        """Per probe: seconds the loop ran a timer late (:mod:`.loop_probe`)."""
        self._pump_durations: list[float] = []
        self._pump_steps = 0
        self._pump_busy_s = 0.0

    def inc(self, name: str, count: int = 1) -> None:
        self._sink.inc_value(f"courtly/{name}", count)

    def set(self, name: str, value: object) -> None:
        self._sink.set_value(f"courtly/{name}", value)

    def started(self, held: Held, now_at: float) -> None:
        """``held``'s request entered the downloader at ``now_at``: one start-lag sample
        if its host was owed (came due while the scheduler waited for it)."""
        owed, buffered, handed = held.owed_at, held.buffered_at, held.handed_at
        if owed is None or buffered is None or handed is None:
            return
        if len(self._lags) < LAG_SAMPLES:
            pump = buffered - owed - held.gate_wait_s
            leased = held.leased_at
            late = 0.0 if leased is None else min(pump, max(0.0, leased - owed))
            self._lags.append((pump, handed - buffered, now_at - handed, held.gate_wait_s, late))

    def scraped(self, seconds: float) -> None:
        """A callback finished its output ``seconds`` after the end of its response."""
        if len(self._scrape_lags) < LAG_SAMPLES:
            self._scrape_lags.append(seconds)

    def loop_lag(self, seconds: float) -> None:
        """The loop ran a probe's timer ``seconds`` late."""
        if len(self._loop_lags) < LAG_SAMPLES:
            self._loop_lags.append(seconds)

    def pump_step(self, busy_s: float) -> None:
        self._pump_steps += 1
        self._pump_busy_s += busy_s
        if len(self._pump_durations) < LAG_SAMPLES:
            self._pump_durations.append(busy_s)

    def publish(self) -> None:
        """Write the sampled figures (at close)."""
        self.set("pump_steps", self._pump_steps)
        self.set("pump_busy_ms", round(1000 * self._pump_busy_s))
        self.set("start_lag_samples", len(self._lags))
        stages = {
            "start_lag": [sum(lag[:3]) for lag in self._lags],
            "start_lag_pump": [lag[0] for lag in self._lags],
            "start_lag_engine": [lag[1] for lag in self._lags],
            "start_lag_downloader": [lag[2] for lag in self._lags],
            "start_lag_lease": [lag[4] for lag in self._lags],
            "ip_wait": [lag[3] for lag in self._lags],
            "scrape": self._scrape_lags,
            "loop_lag": self._loop_lags,
            "pump_step": self._pump_durations,
        }
        for stage, values in stages.items():
            if not values:
                continue
            values.sort()
            for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
                at = values[int(q * (len(values) - 1))]
                self.set(f"{stage}_{name}_ms", round(1000 * at, 1))
            self.set(f"{stage}_max_ms", round(1000 * values[-1], 1))

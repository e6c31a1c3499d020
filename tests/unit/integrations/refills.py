"""A refill task on an in-memory frontier, for the unit tests of the Scrapy add-on's
refill (no Scrapy engine, no robots.txt fetch, a fake clock)."""

from __future__ import annotations

from collections.abc import Callable

from scrapy import Spider

from courtly.clock import FakeClock
from courtly.frontier import Frontier, FrontierConfig, PolitenessConfig
from courtly.integrations.scrapy import CourtlySettings
from courtly.integrations.scrapy.codec import RequestCodec
from courtly.integrations.scrapy.payloads import Payloads
from courtly.integrations.scrapy.pipeline import Pipeline
from courtly.integrations.scrapy.refill import Refill
from courtly.integrations.scrapy.robots import RobotsBook
from courtly.integrations.scrapy.stats import SchedulerStats
from courtly.store.memory import MemoryStore


class StatsSink:
    """Scrapy's stats collector, as far as the add-on's stats use it."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] = int(self.values.get(key, start)) + count  # type: ignore[call-overload]

    def set_value(self, key: str, value: object) -> None:
        self.values[key] = value


def make_refill(
    store: MemoryStore,
    clock: FakeClock,
    config: CourtlySettings,
    on_store_error: Callable[[], None] = lambda: None,
) -> tuple[Refill, Frontier, Pipeline]:
    """A refill task of ``config`` (a Redis URL in it makes a process of a shared crawl,
    whatever ``store`` is), its frontier on ``store`` and its pipeline; ``on_store_error``
    is what the scheduler would do when the store fails (close the spider)."""
    politeness = PolitenessConfig(min_delay_s=config.min_delay_s)
    frontier = Frontier(store, FrontierConfig(politeness=politeness), clock=clock)
    stats = SchedulerStats(StatsSink())
    pipe = Pipeline(
        clock,
        config.per_ip,
        Payloads(RequestCodec(Spider("t")), stats),
        poke=lambda: None,
        wake_engine=lambda _idle: None,
        fetch_robots=lambda _held: None,
    )
    robots = RobotsBook(clock, politeness, "bot", shared=config.shared)
    refill = Refill(
        frontier,
        pipe,
        config,
        stats,
        robots,
        engine=None,
        clock=clock,
        on_store_error=on_store_error,
    )
    return refill, frontier, pipe

"""A refill step that admits a host already due polls the engine at once, once: on the
scheduler's own turn, not on the next turn of a loop the spider keeps busy."""

from __future__ import annotations

from scrapy import Request, Spider

from courtly.clock import FakeClock
from courtly.frontier import Frontier, FrontierConfig, PolitenessConfig, QueueConfig, QueuedUrl
from courtly.integrations.scrapy import CourtlySettings
from courtly.integrations.scrapy.codec import RequestCodec
from courtly.integrations.scrapy.keys import key_for, payload_id_of
from courtly.integrations.scrapy.payloads import Payloads
from courtly.integrations.scrapy.pipeline import Pipeline
from courtly.integrations.scrapy.refill import Refill
from courtly.integrations.scrapy.robots import RobotsBook
from courtly.integrations.scrapy.stats import SchedulerStats
from courtly.robots import authority_of
from courtly.robots.fetch import RobotsFetchOutcome
from courtly.store.memory import MemoryStore

ORIGINS = ("http://127.0.0.1:8001/", "http://127.0.0.2:8001/")


class _Sink:
    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] = int(self.values.get(key, start)) + count  # type: ignore[call-overload]

    def set_value(self, key: str, value: object) -> None:
        self.values[key] = value


async def test_admitting_due_hosts_polls_the_engine_at_once_once_a_step() -> None:
    clock = FakeClock()
    store = MemoryStore(QueueConfig())
    politeness = PolitenessConfig(min_delay_s=0.5)
    frontier = Frontier(store, FrontierConfig(politeness=politeness), clock=clock)
    config = CourtlySettings(state_dir=None, store="memory", allow_private_networks=True)
    stats = SchedulerStats(_Sink())
    payloads = Payloads(RequestCodec(Spider("t")), stats)
    wakes: list[bool] = []
    pipe = Pipeline(
        clock,
        config.per_ip,
        payloads,
        poke=lambda: None,
        wake_engine=wakes.append,
        fetch_robots=lambda _held: None,
    )
    robots = RobotsBook(clock, politeness, "bot")
    refill = Refill(
        frontier,
        pipe,
        config,
        stats,
        robots,
        engine=None,
        clock=clock,
        on_store_error=lambda: None,
    )
    entries = []
    for n, origin in enumerate(ORIGINS):
        authority = authority_of(origin)
        missing = RobotsFetchOutcome("unavailable", None, 404, f"{origin}robots.txt", 0, None)
        await robots._stored.keep(store, authority, missing, clock.now())
        key = key_for(f"{origin}p", bytes([n]) * 20, dont_filter=False)
        payloads.keep(payload_id_of(key), Request(f"{origin}p"))
        entries.append(QueuedUrl(key, authority_of(key)[1] + ":8001", 1, 0))
    await frontier.add_queued(entries)

    await refill._fill()

    assert len(pipe.due) == len(ORIGINS)  # both hosts were due: in the buffer
    assert wakes.count(True) == 1, wakes  # one poll at once for the step

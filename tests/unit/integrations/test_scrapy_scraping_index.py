"""A lease completes at the end of its response; its request survives a kill until the
spider's requests from that response are stored (the scraping index)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from scrapy import Request, Spider
from scrapy.utils.request import RequestFingerprinter

from courtly.clock import FakeClock
from courtly.frontier import Frontier, Outcome
from courtly.integrations.scrapy.codec import RequestCodec
from courtly.integrations.scrapy.scheduler import CourtlyScheduler
from courtly.integrations.scrapy.settings import CourtlySettings


class _Stats:
    def __init__(self) -> None:
        self.values: Counter[str] = Counter()

    def inc_value(self, name: str, count: int = 1) -> None:
        self.values[name] += count

    def set_value(self, name: str, value: Any) -> None:
        self.values[name] = value


class _Spider(Spider):
    name = "index-test"

    def parse(self, response: Any) -> None:
        return None


def _scheduler(state: Path, clock: FakeClock) -> CourtlyScheduler:
    """A scheduler on the SQLite state in ``state``, opened without Scrapy's engine."""
    crawler: Any = SimpleNamespace(stats=_Stats(), request_fingerprinter=RequestFingerprinter())
    config = CourtlySettings(state_dir=state, store="sqlite", min_delay_s=0.0)
    scheduler = CourtlyScheduler(crawler, config, clock=clock)
    spider = _Spider()
    scheduler._codec = RequestCodec(spider)
    scheduler._frontier = Frontier(scheduler._open_store(), scheduler._fconfig, clock=clock)
    return scheduler


async def _scrape_one(scheduler: CourtlyScheduler, clock: FakeClock) -> str:
    """Enqueue a request, lease it, end its response; the spider still has it."""
    spider = scheduler._codec._spider if scheduler._codec else None
    assert spider is not None
    assert scheduler.enqueue_request(Request("http://a.test/page", callback=spider.parse))
    await scheduler._drain()
    assert scheduler._frontier is not None
    batch = await scheduler._frontier.lease(1)
    (lease,) = batch.leases
    held = await scheduler._load(lease, None)
    assert held is not None
    scheduler._held[lease.url] = held
    held.started_at = clock.now()
    held.status = 200
    # What request_left_downloader does, without the signal.
    held.outcome = Outcome.from_status(200, clock.now(), clock.now())
    del scheduler._held[lease.url]
    scheduler._scraping[lease.url] = held
    scheduler._completions.append((held, held.outcome, "complete_scraping"))
    await scheduler._drain()
    return lease.url


async def test_a_response_being_scraped_at_a_kill_is_requeued(tmp_path: Path) -> None:
    clock = FakeClock()
    first = _scheduler(tmp_path, clock)
    await _scrape_one(first, clock)
    assert first._frontier is not None
    assert (await first._frontier.counts()).queued == 0  # the lease is completed
    await first._frontier.aclose()  # a kill after the pump's commit loses nothing more

    second = _scheduler(tmp_path, clock)
    await second._requeue_scraping()
    stats: Any = second._stats
    assert stats.values["courtly/resumed_scraping"] == 1
    assert [add.entry.url.split("#")[0] for add in second._adds] == ["http://a.test/"]
    await second._drain()
    assert second._frontier is not None
    batch = await second._frontier.lease(1)
    (lease,) = batch.leases
    held = await second._load(lease, None)
    assert held is not None and held.request.url == "http://a.test/page"
    await second._frontier.aclose()

    # Requeued once: the index was rewritten in the same commit as the new entry.
    third = _scheduler(tmp_path, clock)
    await third._requeue_scraping()
    assert not third._adds
    assert third._frontier is not None
    await third._frontier.aclose()


async def test_a_scraped_response_is_not_requeued(tmp_path: Path) -> None:
    clock = FakeClock()
    first = _scheduler(tmp_path, clock)
    key = await _scrape_one(first, clock)
    held = first._scraping[key]
    held.output_done = True
    first._settle(held)
    assert key not in first._scraping
    await first._drain()
    assert first._frontier is not None
    await first._frontier.aclose()

    second = _scheduler(tmp_path, clock)
    await second._requeue_scraping()
    assert not second._adds
    stats: Any = second._stats
    assert stats.values["courtly/resumed_scraping"] == 0
    assert second._frontier is not None
    assert (await second._frontier.counts()).queued == 0
    await second._frontier.aclose()

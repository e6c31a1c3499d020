"""A crawl ends even when a store's client loses the cancellation of its reporter.

On Python 3.11, ``asyncio.wait_for`` returns the result of an awaitable that completed
as the cancellation of its caller came, and the cancellation is gone; the Redis client
sends every command under it. The crawl's progress reporter, cancelled at the crawl's
end while its store call was in flight, then went on ticking, and the crawl's task
group (so the whole process) never ended: the last fetcher of a Redis crawl said
"starved" and never exited. The store here loses one cancellation the same way.

And what a crawl holds only while it runs (the collector's frozen heap and thresholds)
is given back at its end.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Sequence
from pathlib import Path

from courtly.archive.catalogue import CatalogueEntry
from courtly.clock import FakeClock
from courtly.config import CrawlConfig
from courtly.crawl import Crawler
from courtly.fetch.memory import MemoryFetcher
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import AddStatus, HostState, Lease, QueuedUrl
from courtly.heap import CRAWL_THRESHOLDS
from courtly.store.memory import MemoryStore

UA = "courtly/0.1 (+https://courtly.invalid/bot; tests@courtly.invalid)"


class _LosingStore(MemoryStore):
    """Its first flush once a completion has begun is a call in flight until its
    caller is cancelled, and then returns as if it had completed (the cancellation
    lost, as by 3.11's wait_for). No lease completes before that flush is under way,
    so the crawl ends during it."""

    lost = 0

    def __init__(self) -> None:
        super().__init__(QueueConfig())
        self.flushing = asyncio.Event()
        self.completing = False

    async def complete(
        self,
        lease: Lease,
        host: HostState,
        discovered: Sequence[QueuedUrl],
        now_at: float,
        budget: BudgetConfig,
        records: Sequence[CatalogueEntry] = (),
    ) -> list[AddStatus] | None:
        self.completing = True
        await self.flushing.wait()
        return await super().complete(lease, host, discovered, now_at, budget, records)

    async def flush(self) -> None:
        if self.completing and self.lost == 0:  # the reporter's, while the crawl runs
            self.flushing.set()
            try:
                await asyncio.Event().wait()  # the call in flight
            except asyncio.CancelledError:
                self.lost += 1
                return  # completed as the cancellation came: its result, no error
        await super().flush()


def _config(tmp_path: Path, *seeds: str) -> CrawlConfig:
    """A crawl of ``seeds`` on the memory store, no delays, two fetchers, ticks every 0.1 s."""
    return CrawlConfig(
        state_dir=tmp_path / "state",
        user_agent=UA,
        seeds=seeds,
        min_delay_s=0.0,
        delay_factor=0.0,
        concurrency=2,
        store="memory",
        follow_sitemaps=False,
        progress_interval_s=0.1,
    )


def _handler(url: str) -> tuple[int, dict[str, str], bytes]:
    if url.endswith("/robots.txt"):
        return (404, {}, b"")
    n = int(url.rsplit("/p", 1)[-1]) if "/p" in url else 0
    link = f'<a href="/p{n + 1}">next</a>' if n < 4 else ""
    return (200, {"Content-Type": "text/html"}, f"<html><body>{link}</body></html>".encode())


def test_the_crawl_ends_when_its_reporters_cancellation_is_lost(tmp_path: Path) -> None:
    async def crawl() -> tuple[str | None, int]:
        clock = FakeClock()
        config = _config(tmp_path, "http://a.test/", "http://b.test/")
        store = _LosingStore()
        crawler = Crawler(config, clock=clock, store=store, fetcher=MemoryFetcher(_handler, clock))
        run = asyncio.ensure_future(crawler.run())
        done, _ = await asyncio.wait({run}, timeout=20.0)  # a bound against the hang only
        if not done:
            run.cancel()
            await asyncio.wait({run})
            return None, store.lost
        return run.result().stop_reason, store.lost

    stop_reason, lost = asyncio.run(crawl())
    assert lost == 1  # the reporter's cancellation was lost, as in the fault
    assert stop_reason == "done"  # and the crawl ended all the same


def test_a_crawl_holds_the_collector_settings_only_while_it_runs(tmp_path: Path) -> None:
    """courtly.heap: the heap is frozen and the thresholds raised for the crawl, and both
    are as before once it has ended."""
    seen: list[tuple[int, tuple[int, int, int]]] = []

    def handler(url: str) -> tuple[int, dict[str, str], bytes]:
        seen.append((gc.get_freeze_count(), gc.get_threshold()))
        return _handler(url)

    async def crawl() -> str | None:
        clock = FakeClock()
        config = _config(tmp_path, "http://a.test/")
        crawler = Crawler(config, clock=clock, fetcher=MemoryFetcher(handler, clock))
        return (await crawler.run()).stop_reason

    before = gc.get_threshold()
    assert asyncio.run(crawl()) == "done"
    assert seen and all(frozen > 0 and limits == CRAWL_THRESHOLDS for frozen, limits in seen)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before

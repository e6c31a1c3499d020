"""The crawl dispatcher keeps every allowed fetcher busy while a host is ready (fake clock)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from courtly.clock import FakeClock
from courtly.config import CrawlConfig
from courtly.crawl import Crawler, CrawlSnapshot
from courtly.fetch.memory import MemoryFetcher
from courtly.store.base import SHARED_POLL_S

UA = "courtly/0.1 (+https://courtly.invalid/bot; tests@courtly.invalid)"


class _CheckedCrawler(Crawler):
    """Records every moment the dispatcher waits while a host was ready and a fetcher free."""

    idle_while_ready: list[tuple[float, int, int, int]]
    waits: int

    async def _idle(self, wait_s: float) -> None:
        if not self._stopping:
            self.waits += 1
            counts = await self.frontier.counts()
            if counts.hosts_ready > 0 and self._in_flight < self.fetchers:
                self.idle_while_ready.append(
                    (self._clock.now(), counts.hosts_ready, self._in_flight, self.fetchers)
                )
        await super()._idle(wait_s)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    hosts=st.integers(1, 12),
    pages=st.integers(1, 6),
    fetchers=st.integers(1, 6),
    delay_s=st.sampled_from([0.0, 0.05, 0.5]),
)
def test_no_fetcher_waits_while_a_host_is_ready(
    tmp_path: Path, hosts: int, pages: int, fetchers: int, delay_s: float
) -> None:
    def handler(url: str) -> tuple[int, dict[str, str], bytes]:
        if url.endswith("/robots.txt"):
            return (404, {}, b"")
        path = url.split("/", 3)[3]
        n = int(path.removeprefix("p") or 0)
        link = f'<a href="/p{n + 1}">next</a>' if n + 1 < pages else ""
        return (200, {"Content-Type": "text/html"}, f"<html><body>{link}</body></html>".encode())

    async def crawl() -> tuple[CrawlSnapshot, _CheckedCrawler]:
        clock = FakeClock()
        config = CrawlConfig(
            state_dir=tmp_path / f"s{hosts}-{pages}-{fetchers}-{delay_s}",
            user_agent=UA,
            seeds=tuple(f"http://h{i}.test/" for i in range(hosts)),
            min_delay_s=delay_s,
            delay_factor=0.0,
            concurrency=fetchers,  # pinned: an autoscaler would sample the fake clock
            store="memory",
            follow_sitemaps=False,
            progress_interval_s=60.0,
        )
        crawler = _CheckedCrawler(config, clock=clock, fetcher=MemoryFetcher(handler, clock))
        crawler.idle_while_ready = []
        crawler.waits = 0
        return await crawler.run(), crawler

    snapshot, crawler = asyncio.run(crawl())
    assert snapshot.stop_reason == "done"
    assert snapshot.pages == hosts * pages  # every page, so the check saw the whole crawl
    assert crawler.waits > 0  # the hook saw the dispatcher wait
    assert crawler.idle_while_ready == []


class _PollWatched(Crawler):
    """Records every wait of the dispatcher; ``shared`` poses its store as shared."""

    waits_s: list[float]

    def __init__(self, *args: Any, shared: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shared = shared
        self.waits_s = []

    async def _idle(self, wait_s: float) -> None:
        if not self._stopping:
            self.waits_s.append(wait_s)
        await super()._idle(wait_s)


def test_on_a_shared_store_an_idle_dispatcher_asks_again_within_the_shared_poll(
    tmp_path: Path,
) -> None:
    """Other processes of a shared crawl release and add without a signal here: the
    dispatcher waits no longer than SHARED_POLL_S before it asks again. On a store of
    its own it waits for the next host's time."""

    def handler(url: str) -> tuple[int, dict[str, str], bytes]:
        if url.endswith("/robots.txt"):
            return (404, {}, b"")
        n = int(url.rsplit("/p", 1)[-1] or 0) if "/p" in url else 0
        link = f'<a href="/p{n + 1}">next</a>' if n < 4 else ""
        return (200, {"Content-Type": "text/html"}, f"<html><body>{link}</body></html>".encode())

    async def crawl(shared: bool) -> _PollWatched:
        clock = FakeClock()
        config = CrawlConfig(
            state_dir=tmp_path / f"shared-{shared}",
            user_agent=UA,
            seeds=("http://h0.test/",),
            min_delay_s=1.0,
            delay_factor=0.0,
            concurrency=2,
            store="memory",
            follow_sitemaps=False,
            progress_interval_s=60.0,
        )
        crawler = _PollWatched(
            config, clock=clock, fetcher=MemoryFetcher(handler, clock), shared=shared
        )
        snapshot = await crawler.run()
        assert snapshot.stop_reason == "done" and snapshot.pages == 5
        return crawler

    own = asyncio.run(crawl(False))
    assert max(own.waits_s) > SHARED_POLL_S  # waits for the host's next time
    shared = asyncio.run(crawl(True))
    assert shared.waits_s and max(shared.waits_s) <= SHARED_POLL_S

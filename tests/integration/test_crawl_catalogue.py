"""The catalogue after a crawl keeps what was fetched: a later refusal of a link to a
fetched page (by depth, scope or a trap bound) does not replace the page's entry."""

from __future__ import annotations

import asyncio
from pathlib import Path

from courtly.clock import FakeClock
from courtly.config import CrawlConfig
from courtly.crawl import Crawler, open_store
from courtly.fetch.memory import MemoryFetcher, Reply
from courtly.frontier.config import QueueConfig

UA = "courtly/0.1 (+https://courtly.invalid/bot; tests@courtly.invalid)"
LINKS = {
    "/": ["/a"],
    "/a": ["/", "/b"],  # at --max-depth 1: "/" and "/b" are links at depth 2
    "/b": [],
}


def answer(url: str) -> Reply:
    path = url.removeprefix("http://home.test")
    if path not in LINKS:
        return 404
    body = "".join(f'<a href="{link}">x</a>' for link in LINKS[path])
    return 200, {"Content-Type": "text/html"}, f"<html><body>{body}</body></html>".encode()


def test_a_link_refused_by_depth_leaves_the_fetched_page_catalogued(tmp_path: Path) -> None:
    clock = FakeClock()
    config = CrawlConfig(
        state_dir=tmp_path / "state",
        user_agent=UA,
        seeds=("http://home.test/",),
        min_delay_s=0.5,
        max_depth=1,
        concurrency=1,
        processes=1,
        follow_sitemaps=False,
        progress_interval_s=60.0,
    )
    fetcher = MemoryFetcher(answer, clock)
    snapshot = asyncio.run(Crawler(config, clock=clock, fetcher=fetcher).run())
    assert snapshot.stop_reason == "done"

    async def entries() -> dict[str, tuple[int | None, str | None]]:
        store = open_store(config, QueueConfig())
        try:
            return {e.url: (e.status, e.skip_reason) async for e in store.catalogue()}
        finally:
            await store.aclose()

    catalogue = asyncio.run(entries())
    assert catalogue["http://home.test/"] == (200, None)
    assert catalogue["http://home.test/a"] == (200, None)
    assert catalogue["http://home.test/b"] == (None, "too_deep")

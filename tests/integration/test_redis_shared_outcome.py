"""How one process of a shared (Redis) crawl ends when the others fetched the pages.

A process that fetched no page of its own, in a crawl whose other processes fetched
pages, ends "done" (exit 0, or 3 when a limit stopped it), not "nothing fetched"
(exit 5): with shard affinity a
process may own none of a small crawl's hosts, and its exit code says how the crawl
went, not how many pages fell to it. A crawl of its own that fetches nothing still
exits 5.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.redis_servers import (
    delete_crawl,
    have_redis_server,
    new_crawl_name,
    standalone_url,
)

from courtly.clock import SystemClock
from courtly.config import CrawlConfig
from courtly.crawl import Crawler, CrawlSnapshot
from courtly.exit_codes import ExitCode, exit_code_for
from courtly.fetch import MemoryFetcher
from courtly.fetch.memory import Reply
from courtly.store.redis.address import connect

pytestmark = pytest.mark.skipif(not have_redis_server(), reason="redis-server is not installed")

HTML = {"Content-Type": "text/html"}


def _site(url: str) -> Reply:
    if url == "http://shut.test/robots.txt":
        return (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /\n")
    if url.endswith("/robots.txt"):
        return 404
    if url.startswith("http://busy.test/"):
        return (429, {"Retry-After": "3600"}, b"")
    return (200, HTML, b"<html><body>a page</body></html>")


async def _crawl(state: Path, crawl: str, seed: str, **overrides: Any) -> CrawlSnapshot:
    config = CrawlConfig(
        state_dir=state,
        user_agent="mybot/1.0 (+https://example.org/bot)",
        seeds=(seed,),
        min_delay_s=0.01,
        delay_factor=0.0,
        concurrency=2,
        progress_interval_s=0.1,
        follow_sitemaps=False,
        store=standalone_url(),
        crawl_name=crawl,
        **overrides,
    )
    clock = SystemClock()
    return await Crawler(config, clock=clock, fetcher=MemoryFetcher(_site, clock)).run()


async def test_a_process_without_pages_of_its_own_ends_done_when_the_crawl_fetched_some(
    tmp_path: Path,
) -> None:
    shared, alone = new_crawl_name("outcome"), new_crawl_name("outcome")
    try:
        first = await _crawl(tmp_path / "a", shared, "http://open.test/")
        assert first.pages == 1 and exit_code_for(first) is ExitCode.DONE
        # a second process of that crawl, whose only seed robots.txt forbids
        second = await _crawl(tmp_path / "b", shared, "http://shut.test/")
        assert second.pages == 0 and second.skipped  # it tried
        assert second.others_fetched and second.stop_reason == "done"
        assert exit_code_for(second) is ExitCode.DONE
        # one stopped by --max-time while its only host holds it off: a limit, not 5
        third = await _crawl(tmp_path / "d", shared, "http://busy.test/", max_time_s=1.0)
        assert third.pages == 0 and third.statuses and third.stop_reason == "max_time"
        assert third.others_fetched and exit_code_for(third) is ExitCode.LIMIT
        # the same seed in a crawl of its own: nothing fetched anywhere
        own = await _crawl(tmp_path / "c", alone, "http://shut.test/")
        assert own.pages == 0 and own.skipped and not own.others_fetched
        assert exit_code_for(own) is ExitCode.NOTHING_FETCHED
    finally:
        client = connect(standalone_url())
        try:
            for name in (shared, alone):
                await delete_crawl(client, name)
        finally:
            await client.aclose()

"""Crawler CPU per page without the network: the crawl's own work, measured in-process.

``courtly``'s crawler (SQLite store, WARC, links, robots.txt, events; its defaults but a
pinned fetcher count) crawls a sandbox web served by a :class:`~courtly.fetch.memory.
MemoryFetcher` on a fake clock: no sockets, no server, no politeness waits, so the
process time per page is what the crawler itself spends on a page (everything but aiohttp
and the kernel), and it does not depend on what else the machine runs. robots.txt is 404
everywhere (one robots.txt request per host, like any first visit).

    python benchmarks/pipeline.py --pages 4000 --json
    python benchmarks/pipeline.py --web broad --pages 20000 --hosts 500   # 250 pages a host
    PYTHONPATH=/tmp/old/src python benchmarks/pipeline.py   # another checkout, same web

Figures: ``pages``, ``robots_fetches``, ``cpu_us_per_page`` (process time of the crawl
alone, from ``time.process_time``, less the time spent rendering the responses; startup and
imports excluded) and ``cpu_us_per_request``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

from courtly.clock import FakeClock
from courtly.config import CrawlConfig
from courtly.crawl import Crawler
from courtly.fetch.memory import MemoryFetcher
from courtly.sandbox import SandboxSpec, SandboxWorld
from courtly.sandbox.resources import Page as SandboxPage
from profile_crawl import wide_spec

USER_AGENT = "courtly/0.1 (+https://courtly.invalid/bot; bench@courtly.invalid)"


def web_spec(web: str, hosts: int) -> SandboxSpec:
    """``wide``: :func:`wide_spec`; ``broad``: compare_scrapy.py's broad web (eight hosts
    an address, 250 pages a host, each front page listing them all)."""
    if web == "broad":
        return dataclasses.replace(SandboxSpec.broad(hosts), pages_per_host=250)
    return wide_spec(hosts)


def run(pages: int, hosts: int, fetchers: int, web: str = "wide") -> dict[str, float | int]:
    """One crawl of ``pages`` pages of a :func:`web_spec` web (every other host seeded)."""
    world = SandboxWorld(web_spec(web, hosts), 8080)
    serving = [0.0]  # process time spent making the responses (the server's work)

    def handler(url: str) -> tuple[int, dict[str, str], bytes]:
        started = time.process_time()
        try:
            return answer(url)
        finally:
            serving[0] += time.process_time() - started

    def answer(url: str) -> tuple[int, dict[str, str], bytes]:
        rest = url.split("://", 1)[1]
        authority, _, path = rest.partition("/")
        if path == "robots.txt":
            return (404, {}, b"")
        resource = world.resolve(authority.partition(":")[0], "/" + path)
        if isinstance(resource, SandboxPage):
            headers = {"Content-Type": "text/html; charset=utf-8"}
            return (200, headers, world.render(resource))
        return (404, {}, b"")

    async def crawl(state: Path) -> tuple[int, int, float]:
        clock = FakeClock()
        config = CrawlConfig(
            state_dir=state,
            user_agent=USER_AGENT,
            seeds=tuple(world.seeds()[::2]),
            scope="any",
            min_delay_s=0.25,
            concurrency=fetchers,  # pinned: an autoscaler would sample the fake clock
            max_pages=pages,
            progress_interval_s=3600.0,
        )
        fetcher = MemoryFetcher(handler, clock, elapsed_s=0.01)
        crawler = Crawler(config, clock=clock, fetcher=fetcher)
        started = time.process_time()
        snapshot = await crawler.run()
        return snapshot.pages, snapshot.robots_fetches, time.process_time() - started - serving[0]

    with tempfile.TemporaryDirectory() as tmp:
        made, robots, cpu_s = asyncio.run(crawl(Path(tmp) / "state"))
    return {
        "pages": made,
        "robots_fetches": robots,
        "cpu_s": round(cpu_s, 3),
        "cpu_us_per_page": round(1e6 * cpu_s / max(1, made), 1),
        "cpu_us_per_request": round(1e6 * cpu_s / max(1, made + robots), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=4000)
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--fetchers", type=int, default=64)
    parser.add_argument("--web", choices=("wide", "broad"), default="wide")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    figures = run(args.pages, args.hosts, args.fetchers, args.web)
    print(json.dumps(figures) if args.json else figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())

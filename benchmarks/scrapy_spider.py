"""The Scrapy side of ``compare_scrapy.py``: a polite broad crawl of the sandbox web.

Runs inside its own virtual environment (``benchmarks/.scrapy-venv``, created by
``compare_scrapy.py``); it imports nothing from courtly unless ``--courtly STATE``
installs courtly's add-on (then it runs in courtly's own environment, where Scrapy
is installed with the ``scrapy`` extra). Settings follow Scrapy's
"Broad Crawls" advice plus the politeness settings its docs give for being polite:
``ROBOTSTXT_OBEY``, one request per domain, a fixed ``DOWNLOAD_DELAY`` equal to
courtly's minimum delay, the downloader-aware priority queue, breadth-first order.

Scrapy has no hosts-file option, so the sandbox names are resolved by
:class:`HostsFileResolver`, a resolver installed on the reactor that answers from
the sandbox's hosts file and refuses every other name (nothing leaves loopback).

    .scrapy-venv/bin/python scrapy_spider.py --seeds-file S --hosts-file H \\
        --user-agent UA --delay 0.5 --concurrency 128 --seconds 30 --stats-out stats.json

``--courtly STATE`` adds ``ADDONS = {"courtly.integrations.scrapy.CourtlyAddon": 0}``
with ``COURTLY_STATE = STATE`` and ``COURTLY_MIN_DELAY`` = ``--delay``; ``--set NAME=JSON``
adds or overrides any setting (e.g. ``--set CONCURRENT_REQUESTS_PER_DOMAIN=8``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import CrawlerProcess
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor
from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer


def read_hosts_file(path: Path) -> dict[str, str]:
    """Name -> IPv4 address from an /etc/hosts-format file (first address wins)."""
    table: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.partition("#")[0].split()
        if len(line) < 2:
            continue
        for name in line[1:]:
            table.setdefault(name.lower().rstrip("."), line[0])
    return table


@implementer(IResolverSimple)
class HostsFileResolver:
    """A reactor resolver that answers from the ``HOSTS_FILE`` setting only.

    Scrapy builds it with ``from_crawler(crawler, reactor=...)`` (setting
    ``TWISTED_DNS_RESOLVER``) and calls :meth:`install_on_reactor`.
    """

    def __init__(self, reactor: Any, table: dict[str, str]) -> None:
        self.reactor = reactor
        self.table = table

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> HostsFileResolver:
        return cls(reactor, read_hosts_file(Path(crawler.settings["HOSTS_FILE"])))

    def install_on_reactor(self) -> None:
        self.reactor.installResolver(self)

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Any:
        address = self.table.get(name.lower().rstrip("."))
        if address is None:
            return defer.fail(DNSLookupError(f"{name} is not in the hosts file"))
        return defer.succeed(address)


class BroadSpider(Spider):
    """Start from the seeds; follow every link that is not ``rel=nofollow``.

    With ``scope="domain"``, ``allowed_domains`` are the seeds' registered domains
    (last two labels), as courtly's ``domain`` scope; Scrapy's offsite filter
    applies them. With ``scope="any"`` there is no offsite filter.
    """

    name = "courtly-bench"

    def __init__(
        self,
        seeds: list[str],
        scope: str = "domain",
        barrier: tuple[Path, int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.seeds = seeds
        self.barrier = barrier
        hosts = {url.split("/")[2].split(":")[0].lower() for url in seeds}
        if scope == "domain":
            self.allowed_domains = sorted({".".join(h.split(".")[-2:]) for h in hosts})
        # Not LinkExtractor(allow_domains=...): it compares the netloc, port included, and
        # the sandbox listens on a port; the offsite filter compares host names.
        self.links = LinkExtractor()

    async def start(self) -> Any:
        if self.barrier is not None:
            await wait_at_barrier(*self.barrier)
        for url in self.seeds:
            yield Request(url, callback=self.parse)

    def parse(self, response: Response) -> Iterator[Request]:
        if not isinstance(response, HtmlResponse):
            return
        for link in self.links.extract_links(response):
            if not link.nofollow:
                yield response.follow(link.url, callback=self.parse)


async def wait_at_barrier(directory: Path, parties: int, limit_s: float = 120.0) -> None:
    """Sign in at ``directory`` (a file named after this process) and wait until
    ``parties`` processes have, or ``limit_s`` has passed: processes of one shared crawl
    then start together, however long each took to start up. (Other processes sign in
    on disk: nothing to await but time, so it looks every 50 ms.)"""
    _sign_in(directory)
    for _ in range(int(limit_s / 0.05)):
        if _signed_in(directory) >= parties:
            return
        await asyncio.sleep(0.05)


def _sign_in(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / str(os.getpid())).touch()


def _signed_in(directory: Path) -> int:
    return sum(1 for _ in directory.iterdir())


def settings_for(args: argparse.Namespace) -> dict[str, Any]:
    """Scrapy settings: the broad-crawl advice plus polite per-domain limits."""
    return {
        # Politeness, as Scrapy's docs describe it.
        "ROBOTSTXT_OBEY": True,
        "USER_AGENT": args.user_agent,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": args.delay,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "AUTOTHROTTLE_ENABLED": False,
        # Broad crawls (Scrapy docs, "Broad Crawls").
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "CONCURRENT_REQUESTS": args.concurrency,
        "REACTOR_THREADPOOL_MAXSIZE": 20,
        "LOG_LEVEL": "INFO",
        "COOKIES_ENABLED": False,
        "RETRY_ENABLED": False,
        "DOWNLOAD_TIMEOUT": args.timeout,
        "REDIRECT_ENABLED": True,
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        # The same bounds courtly keeps (10 MiB bodies, decompressed size included).
        "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024,
        "DOWNLOAD_WARNSIZE": 0,
        # The same time budget.
        "CLOSESPIDER_TIMEOUT": args.seconds,
        # Sandbox names come from its hosts file.
        "TWISTED_DNS_RESOLVER": HostsFileResolver,
        "DNS_RESOLVER": HostsFileResolver,  # its name before Scrapy 2.14
        "HOSTS_FILE": str(args.hosts_file),
        "TELNETCONSOLE_ENABLED": False,
    }


def _print_tasks() -> None:
    """Every task with the whole chain of coroutines it waits in, innermost last."""
    loop = asyncio.get_event_loop()
    for task in asyncio.all_tasks(loop):
        print(f"Task {task!r}", file=sys.stderr)
        coro: Any = task.get_coro()
        while coro is not None:
            frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None)
            if frame is not None:
                code = frame.f_code
                print(f"  {code.co_filename}:{frame.f_lineno} {code.co_name}", file=sys.stderr)
            coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)
    sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seeds-file", type=Path, required=True)
    parser.add_argument("--hosts-file", type=Path, required=True)
    parser.add_argument("--user-agent", required=True)
    parser.add_argument("--delay", type=float, required=True, help="DOWNLOAD_DELAY, seconds")
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--seconds", type=float, required=True, help="CLOSESPIDER_TIMEOUT")
    parser.add_argument("--timeout", type=float, default=15.0, help="DOWNLOAD_TIMEOUT")
    parser.add_argument("--stats-out", type=Path, help="write Scrapy's stats here as JSON")
    parser.add_argument("--scope", choices=("domain", "any"), default="domain")
    parser.add_argument("--courtly", type=Path, metavar="STATE", help="use courtly's add-on")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=JSON", help="an extra setting"
    )
    parser.add_argument(
        "--barrier",
        nargs=2,
        metavar=("DIR", "N"),
        help="queue the seeds only once N processes have signed in at DIR (a shared crawl)",
    )
    args = parser.parse_args(argv)
    barrier = None if args.barrier is None else (Path(args.barrier[0]), int(args.barrier[1]))
    seeds = [
        line.strip()
        for line in args.seeds_file.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    settings = settings_for(args)
    if args.courtly is not None:
        settings["ADDONS"] = {"courtly.integrations.scrapy.CourtlyAddon": 0}
        settings["COURTLY_STATE"] = str(args.courtly)
        settings["COURTLY_MIN_DELAY"] = args.delay
    for item in args.set:
        name, _, value = item.partition("=")
        settings[name] = json.loads(value)
    # SIGUSR1 prints every asyncio task's stack to stderr (what a stuck crawl waits on).
    signal.signal(signal.SIGUSR1, lambda *_: _print_tasks())
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(BroadSpider)
    stats: dict[str, Any] = {}

    def closed(spider: Any, reason: str) -> None:
        stats.update({k: str(v) for k, v in crawler.stats.get_stats().items()})
        stats["finish_reason"] = reason

    crawler.signals.connect(closed, signal=signals.spider_closed)
    process.crawl(crawler, seeds=seeds, scope=args.scope, barrier=barrier)
    process.start()
    if args.stats_out is not None:
        args.stats_out.write_text(json.dumps(stats, indent=2, sort_keys=True), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The machine's ceiling: a bare fetch loop over the known pages of a sandbox web.

aiohttp on uvloop in ``--processes`` processes, each fetching its share of the
URLs in ``--urls`` (one a line) with ``--concurrency`` requests in flight and
reading every body to the end. No politeness (no delay, no per-host or per-IP
limit, no robots.txt), no parsing, no storage: what is left is what one HTTP
request costs the client on this machine, and how fast the sandbox can answer.
``compare_scrapy.py`` runs it beside the crawlers and reads every crawler's
pages/s against it (``share_of_ceiling``).

Names resolve from ``--hosts-file`` only (nothing leaves loopback). It runs for
``--seconds``: a process that has fetched every URL of its share starts its share
again (in the same order), so the ceiling is measured on a machine fast enough to
drain the web, not bounded by the web's size (``passes`` in the output: how many
times the fastest process started its list). A page
fetched twice costs the client and the sandbox what a new page of the same size
does. ``--once`` stops at the end of the list instead (``exhausted`` says it did before
the time: the ceiling is then a bound). The server's request log is
the measure, and this prints one JSON line of its own counts.

``--work DIR`` adds the least work an archiving crawler does for each page
(``page_work.py``: its links parsed and joined, a WARC response and request record,
SQLite rows committed every 0.2 s, in ``DIR``): the floor under any such crawler's
CPU a page on this machine (``compare_scrapy.py``'s crawler ``floor``).

    python benchmarks/bare_loop.py --urls U --hosts-file H --user-agent UA --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from page_work import PageWork

#: Requests in flight per process.
CONCURRENCY = 128
PROCESSES = 2


def read_hosts_file(path: Path) -> dict[str, str]:
    """Name -> IPv4 address from an /etc/hosts-format file (first address wins)."""
    table: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        fields = raw.partition("#")[0].split()
        for name in fields[1:]:
            table.setdefault(name.lower().rstrip("."), fields[0])
    return table


async def _fetch_all(
    urls: list[str],
    table: dict[str, str],
    user_agent: str,
    concurrency: int,
    deadline: float,
    once: bool = False,
    work: PageWork | None = None,
) -> dict[str, int]:
    import aiohttp
    from aiohttp.abc import AbstractResolver, ResolveResult

    class HostsResolver(AbstractResolver):
        """Answers from the hosts file; every other name fails."""

        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[ResolveResult]:
            address = table.get(host.lower().rstrip("."))
            if address is None:
                raise OSError(f"{host} is not in the hosts file")
            return [
                {
                    "hostname": host,
                    "host": address,
                    "port": port,
                    "family": socket.AF_INET,
                    "proto": 0,
                    "flags": socket.AI_NUMERICHOST,
                }
            ]

        async def close(self) -> None:
            return None

    counts = {"requests": 0, "ok": 0, "failed": 0, "bytes": 0, "passes": 1 if urls else 0}

    def passes() -> Iterator[str]:
        yield from urls
        while not once:
            counts["passes"] += 1
            yield from urls

    queue = passes() if urls else iter(())
    connector = aiohttp.TCPConnector(
        limit=concurrency, limit_per_host=0, resolver=HostsResolver(), ttl_dns_cache=None
    )
    timeout = aiohttp.ClientTimeout(total=30, connect=10)
    headers = {"User-Agent": user_agent}
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, headers=headers, auto_decompress=False
    ) as session:

        async def worker() -> None:
            for url in queue:
                if time.monotonic() >= deadline:
                    return
                counts["requests"] += 1
                try:
                    async with session.get(url, allow_redirects=False) as response:
                        body = await response.read()
                        counts["bytes"] += len(body)
                        counts["ok" if response.status == 200 else "failed"] += 1
                        if work is not None:
                            work.page(url, response.status, _http_head(response), body)
                except (aiohttp.ClientError, OSError, TimeoutError):
                    counts["failed"] += 1

        async with asyncio.TaskGroup() as group:
            for _ in range(concurrency):
                group.create_task(worker())
    return counts


def _http_head(response: Any) -> bytes:
    """The status line and header block of ``response``, as they came."""
    lines = [f"HTTP/1.1 {response.status} {response.reason}".encode()]
    lines += [name + b": " + value for name, value in response.raw_headers]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _child(
    urls: list[str],
    table: dict[str, str],
    user_agent: str,
    concurrency: int,
    deadline_in_s: float,
    once: bool,
    out: Any,
    work_dir: Path | None = None,
    index: int = 0,
) -> None:
    import uvloop

    work = None if work_dir is None else PageWork(work_dir, f"p{index}")
    deadline = time.monotonic() + deadline_in_s
    counts = uvloop.run(_fetch_all(urls, table, user_agent, concurrency, deadline, once, work))
    if work is not None:
        counts["links"] = work.links
        work.close()
    out.put(counts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--urls", type=Path, required=True, help="one URL a line")
    parser.add_argument("--hosts-file", type=Path, required=True)
    parser.add_argument("--user-agent", required=True)
    parser.add_argument("--seconds", type=float, required=True, help="stop after this long")
    parser.add_argument("--processes", type=int, default=PROCESSES)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, help="per process")
    parser.add_argument(
        "--once", action="store_true", help="stop at the end of the list (no second pass)"
    )
    parser.add_argument(
        "--work", type=Path, help="do a page's least work, in this directory (the floor)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    urls = args.urls.read_text(encoding="utf-8").split()
    table = read_hosts_file(args.hosts_file)
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    children = [
        context.Process(
            target=_child,
            args=(
                urls[k :: args.processes],
                table,
                args.user_agent,
                args.concurrency,
                args.seconds,
                args.once,
                results,
                args.work,
                k,
            ),
        )
        for k in range(args.processes)
    ]
    started = time.monotonic()
    for child in children:
        child.start()
    totals: dict[str, Any] = {"urls": len(urls), "processes": args.processes}
    for _ in children:
        for key, value in results.get().items():
            if key == "passes":  # the fastest process's, not a sum
                totals[key] = max(totals.get(key, 0), value)
            else:
                totals[key] = totals.get(key, 0) + value
    for child in children:
        child.join()
    totals["wall_s"] = round(time.monotonic() - started, 2)
    totals["exhausted"] = args.once and totals.get("requests", 0) >= len(urls)
    print(json.dumps(totals) if args.json else json.dumps(totals, indent=2))
    return 0 if all(child.exitcode == 0 for child in children) else 1


if __name__ == "__main__":
    sys.exit(main())

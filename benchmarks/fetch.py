"""Fetcher throughput and client CPU per request against a loopback aiohttp server.

The server runs in its own process (so its CPU is not counted); the client maps
``--hosts`` names to 127.0.0.1 through DNS overrides and keeps one request in
flight per name over keep-alive connections. Client CPU is ``getrusage`` user+sys
of this process over the timed section, divided by the number of requests.

    python benchmarks/fetch.py --requests 20000 --json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import multiprocessing
import os
import resource
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from courtly.clock import SystemClock
from courtly.fetch import FetchConfig, HttpFetcher


def _serve(port: int, body_bytes: int, use_gzip: bool, ready: Any) -> None:
    from aiohttp import web

    with contextlib.suppress(OSError, AttributeError):
        os.sched_setaffinity(0, {0})
    with contextlib.suppress(ImportError):
        import uvloop

        uvloop.install()
    page = (b"<html><body>" + b"<p>courtly benchmark page</p>\n" * (body_bytes // 30))[:body_bytes]
    headers = {"Content-Type": "text/html; charset=utf-8"}
    if use_gzip:
        page = gzip.compress(page, 6)
        headers["Content-Encoding"] = "gzip"

    async def handle(request: web.Request) -> web.Response:
        return web.Response(body=page, headers=headers)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    ready.set()
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _run(port: int, hosts: int, requests: int, warmup: int) -> dict[str, float]:
    names = [f"h{i}.bench.test" for i in range(hosts)]
    config = FetchConfig(allow_private_networks=True, per_ip_concurrency=hosts)
    overrides = {name: ["127.0.0.1"] for name in names}
    async with HttpFetcher(config, SystemClock(), dns_overrides=overrides) as fetcher:
        bad = 0

        async def worker(name: str, count: int) -> None:
            nonlocal bad
            url = f"http://{name}:{port}/page"
            for _ in range(count):
                result = await fetcher.fetch(url)
                if result.status != 200 or not result.body or result.truncated:
                    bad += 1

        async def round_of(total: int) -> None:
            async with asyncio.TaskGroup() as group:
                for index, name in enumerate(names):
                    share = total // hosts + (1 if index < total % hosts else 0)
                    group.create_task(worker(name, share))

        await round_of(warmup)
        cpu_before, wall_before = _cpu_s(), time.perf_counter()
        await round_of(requests)
        cpu_s, wall_s = _cpu_s() - cpu_before, time.perf_counter() - wall_before
    return {
        "requests": requests,
        "bad_responses": bad,
        "requests_per_s": requests / wall_s,
        "cpu_us_per_request": cpu_s / requests * 1e6,
        "wall_s": wall_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--warmup", type=int, default=2_000)
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--body-bytes", type=int, default=20_000)
    parser.add_argument("--gzip", action="store_true", help="serve gzip-encoded bodies")
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)

    port = _free_port()
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    server = context.Process(
        target=_serve, args=(port, args.body_bytes, args.gzip, ready), daemon=True
    )
    server.start()
    try:
        ready.wait(10)
        for _ in range(100):  # wait for the listening socket
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        with contextlib.suppress(OSError, AttributeError):
            if (os.cpu_count() or 1) > 1:
                os.sched_setaffinity(0, {1})
        runner: Callable[[Any], dict[str, float]] = asyncio.run
        if args.loop == "uvloop":
            import uvloop

            runner = uvloop.run
        stats = runner(_run(port, args.hosts, args.requests, args.warmup))
    finally:
        server.terminate()
        server.join(5)
    report = {
        "loop": args.loop,
        "hosts": args.hosts,
        "body_bytes": args.body_bytes,
        "gzip": args.gzip,
        **stats,
    }
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:>20}: {value:.1f}" if isinstance(value, float) else f"{key:>20}: {value}")
    return 0 if stats["bad_responses"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

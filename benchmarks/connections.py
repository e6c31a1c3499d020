"""Connection reuse of the fetcher's pool under a politeness gap, and idle connections held.

A crawl visits many hosts, each a few times, one request at a time, with a gap
between its requests. This benchmark does the same against a loopback server in
its own process: ``--hosts`` names spread over ``--ips`` addresses; host ``i``
starts at ``i / --hosts-per-s`` and makes ``--requests-per-host`` requests, each
``--gap-s`` after the previous response. Every ``--keepalive`` setting runs in
the same invocation, in turn, against the same server. The server counts the
connections it accepted and the most it held open at once (idle ones included);
the client reports its CPU per request (``getrusage``, this process only).

    python benchmarks/connections.py --json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import resource
import socket
import sys
import time
from typing import Any

from courtly.clock import SystemClock
from courtly.fetch import FetchConfig, HttpFetcher

_BODY = (b"<html><body>" + b"<p>courtly connection benchmark</p>\n" * 300)[:10_000]
_RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(_BODY) + _BODY
)


def _serve(ips: list[str], port: int, counters: Any, ready: Any) -> None:
    """Answer every request with ``_RESPONSE`` over keep-alive; count connections."""
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setaffinity(0, {0})

    class Connection(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport
            self.buffer = b""
            counters[0] += 1  # accepted
            counters[1] += 1  # open
            counters[2] = max(counters[2], counters[1])  # peak open

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while b"\r\n\r\n" in self.buffer:
                _, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
                self.transport.write(_RESPONSE)  # type: ignore[attr-defined]

        def connection_lost(self, exc: Exception | None) -> None:
            counters[1] -= 1

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for ip in ips:
            await loop.create_server(Connection, ip, port, backlog=4096)
        ready.set()
        await asyncio.Event().wait()

    asyncio.run(main())


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _crawl(args: argparse.Namespace, ips: list[str], keepalive_s: float) -> dict[str, float]:
    names = [f"h{i}.conn.test" for i in range(args.hosts)]
    overrides = {name: [ips[i % len(ips)]] for i, name in enumerate(names)}
    config = FetchConfig(allow_private_networks=True, keepalive_timeout_s=keepalive_s)
    bad = 0
    cpu = _cpu_s()  # closing the connections left open is part of the cost
    async with HttpFetcher(config, SystemClock(), dns_overrides=overrides) as fetcher:

        async def host(index: int, name: str) -> None:
            nonlocal bad
            await asyncio.sleep(index / args.hosts_per_s)
            for _ in range(args.requests_per_host):
                result = await fetcher.fetch(f"http://{name}:{args.port}/page")
                bad += result.status != 200 or result.body != _BODY
                await asyncio.sleep(args.gap_s)

        async with asyncio.TaskGroup() as group:
            for index, name in enumerate(names):
                group.create_task(host(index, name))
    cpu = _cpu_s() - cpu
    requests = args.hosts * args.requests_per_host
    return {"requests": requests, "bad": bad, "cpu_us_per_request": cpu / requests * 1e6}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--hosts", type=int, default=2_000)
    parser.add_argument("--ips", type=int, default=16)
    parser.add_argument("--hosts-per-s", type=float, default=400.0)
    parser.add_argument("--requests-per-host", type=int, default=3)
    parser.add_argument("--gap-s", type=float, default=0.25)
    parser.add_argument("--keepalive", type=float, nargs="+", default=[15.0, 4.0, 0.0])
    parser.add_argument("--rounds", type=int, default=2, help="each setting runs this often")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    ips = [f"127.0.0.{2 + i}" for i in range(args.ips)]
    with socket.socket() as sock:
        sock.bind((ips[0], 0))
        args.port = sock.getsockname()[1]
    context = multiprocessing.get_context("spawn")
    counters = context.Array("q", 3, lock=False)
    ready = context.Event()
    server = context.Process(target=_serve, args=(ips, args.port, counters, ready), daemon=True)
    server.start()
    results: dict[str, list[dict[str, float]]] = {str(k): [] for k in args.keepalive}
    try:
        if not ready.wait(30):
            raise RuntimeError("the benchmark server did not start")
        with contextlib.suppress(OSError, AttributeError):
            if (os.cpu_count() or 1) > 1:
                os.sched_setaffinity(0, {1})
        import uvloop

        for _ in range(args.rounds):
            for keepalive_s in args.keepalive:  # interleaved, so load hits every setting
                while counters[1]:  # the previous setting's connections are all closed
                    time.sleep(0.05)
                counters[0] = counters[2] = 0
                stats = uvloop.run(_crawl(args, ips, keepalive_s))
                stats["connections"] = counters[0]
                stats["connections_per_request"] = counters[0] / stats["requests"]
                stats["peak_open_connections"] = counters[2]
                results[str(keepalive_s)].append(stats)
    finally:
        server.terminate()
        server.join(5)
    report: dict[str, Any] = {
        "hosts": args.hosts,
        "ips": args.ips,
        "hosts_per_s": args.hosts_per_s,
        "requests_per_host": args.requests_per_host,
        "gap_s": args.gap_s,
        "keepalive_s": {
            key: {name: round(sum(run[name] for run in runs) / len(runs), 3) for name in runs[0]}
            for key, runs in results.items()
        },
    }
    if args.json:
        print(json.dumps(report))
    else:
        print(json.dumps(report, indent=2))
    return 0 if all(run["bad"] == 0 for runs in results.values() for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())

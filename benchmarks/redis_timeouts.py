"""The Redis client's socket timeout: what it costs and what it guards against.

Two measurements on a ``redis-server`` of the run's own (a random loopback port, no
persistence, stopped by PID), each with the client's socket timeout at its default
(5 s, the package redis 8.x) and off (``socket_timeout=None``):

* ``lost``: a task loops SETs and is cancelled at a random moment (0-20 ms after it
  starts); how many of ``--tries`` tasks were still running 50 ms later (their
  cancellation lost: on Python 3.11 the client's ``asyncio.wait_for`` around every
  send returns the send's result when the send completed in the same turn as the
  cancellation);
* ``hang``: the server is stopped with SIGSTOP (a node that stops answering without
  closing its connections: a frozen machine, a partition) and one GET is sent; the
  seconds until it failed, or ``null`` if it was still waiting after ``--hang-s``.
  The server is resumed (SIGCONT) afterwards.

    python benchmarks/redis_timeouts.py --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests.redis_servers

from tests.redis_servers import start_standalone, stop_server  # noqa: E402

_DEFAULT: Any = object()
"""The client's own default socket timeout."""


def _client(url: str, socket_timeout: Any) -> Any:
    from redis.asyncio import Redis

    if socket_timeout is _DEFAULT:
        return Redis.from_url(url)
    return Redis.from_url(url, socket_timeout=socket_timeout)


async def _set_loop(client: Any, running: asyncio.Event, ended: asyncio.Event) -> None:
    try:
        while True:
            await client.set("k", "v")
            running.set()
    finally:
        ended.set()


async def lost_cancellations(url: str, socket_timeout: Any, tries: int, rng: random.Random) -> int:
    """How many of ``tries`` cancelled SET loops went on running."""
    client = _client(url, socket_timeout)
    lost = 0
    try:
        await client.ping()
        for _ in range(tries):
            running, ended = asyncio.Event(), asyncio.Event()
            task = asyncio.create_task(_set_loop(client, running, ended))
            await running.wait()
            await asyncio.sleep(rng.uniform(0.0, 0.02))
            task.cancel()
            await asyncio.sleep(0.05)
            if not ended.is_set():
                lost += 1
                while not task.done():  # a lost cancellation: cancel until it takes
                    task.cancel()
                    await asyncio.sleep(0.001)
    finally:
        await client.aclose()
    return lost


async def hang(url: str, pid: int, socket_timeout: Any, hang_s: float) -> float | None:
    """Seconds a GET to a stopped server took to fail; ``None``: still waiting."""
    client = _client(url, socket_timeout)
    try:
        await client.ping()
        os.kill(pid, signal.SIGSTOP)
        began = time.monotonic()
        try:
            async with asyncio.timeout(hang_s):
                await client.get("k")
        except TimeoutError:  # ours (asyncio's): the call was still waiting
            return None
        except Exception:  # the client's own: its socket timeout
            return round(time.monotonic() - began, 2)
        return round(time.monotonic() - began, 2)
    finally:
        os.kill(pid, signal.SIGCONT)
        await client.aclose()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    url, server = start_standalone()
    rng = random.Random(args.seed)
    out: dict[str, Any] = {"python": sys.version.split()[0]}
    try:
        import redis

        out["redis_client"] = redis.__version__
        for label, socket_timeout in (("default_5s", _DEFAULT), ("none", None)):
            out[label] = {
                "lost": await lost_cancellations(url, socket_timeout, args.tries, rng),
                "tries": args.tries,
                "hang_failed_after_s": await hang(url, server.pid, socket_timeout, args.hang_s),
                "hang_waited_s": args.hang_s,
            }
    finally:
        stop_server(server)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tries", type=int, default=300)
    parser.add_argument("--hang-s", type=float, default=15.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args))
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

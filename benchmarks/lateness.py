"""Why a polite crawl falls short of its politeness bound: per-request lateness and its causes.

A request is *late* by ``start − (end of the host's previous response + required gap)``,
both times as the sandbox server logged them (:func:`courtly.sandbox.lateness`). This
script runs courtly in this process on a sandbox web of ``compare_scrapy.py`` (served by
a child process), with the crawler's own timestamps recorded around the frontier and
the fetcher, and splits each request's lateness into the steps between the previous
response's end and the next request's start:

* ``read``: the server's end of the previous response → the crawler's ``ended_at``
  (the client reading the last bytes; the crawler's gap counts from here);
* ``policy``: ``next_allowed_at`` − (the crawler's ``ended_at`` + the required gap):
  back-off, a latency-doubling pause, parking, a robots.txt retry;
* ``requeue``: the host went back to the frontier after its ``next_allowed_at``
  (the page was still being parsed, archived or committed when it was due);
* ``dispatch``: due and requeued → the lease call that handed the host out began
  (waiting in the ready heap for the dispatcher or a fetcher, or inactive); negative
  when the host was leased ahead of its allowed time (``LEASE_AHEAD_S``);
  ``dispatch_rank<r>``: the same for the requests whose URL was its host's head at
  back-queue rank ``r`` when leased (0 the news lane, ``1 + level`` otherwise), with its
  ``max``: how long a due host waits past its time by the rank of its head (the due heap
  serves the best head first: a starving rank would show here);
* ``lease_step``: that lease call, start to return (the store's step);
* ``start``: the later of leased and due → the fetcher was called (the task's start,
  the robots.txt lookup, the wait for the allowed time of a lease taken ahead);
* ``exchange``: the fetcher was called → its exchange began (the per-IP semaphore,
  DNS);
* ``send``: the exchange began → the server saw the request (connection, loop).

The crawler's own figure (``Crawler.ready_waits``: fetcher-seconds idle while hosts
were due, see :class:`courtly.crawl.dispatch.ReadyWaits`) is printed beside it as
``crawler_dispatch``. ``--dump FILE`` pickles the trace and the server's log records for
a closer look.

One partition of a partitioned crawl is modelled by ``--partition I/N``: the hosts
that partition owns, with the whole per-IP cap (partitions share it through
:class:`~courtly.fetch.machine_ip_gate.MachineIpGate`; the other partitions' use of
the same addresses is not modelled, so this is the partition's best case).
``--split-cap`` gives it ``per_ip // N`` instead, the fixed share partitions had
before. ``--partition 0/1`` is one process with the whole web.

    python benchmarks/lateness.py --scenario politeness --seconds 20 --partition 0/2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvloop

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import compare_scrapy as cs  # noqa: E402
from courtly.clock import SystemClock  # noqa: E402
from courtly.config import CrawlConfig  # noqa: E402
from courtly.crawl import Crawler, frontier_config, open_store  # noqa: E402
from courtly.fetch import FetchConfig, HttpFetcher  # noqa: E402
from courtly.fetch.records import FetchResult  # noqa: E402
from courtly.parallel import partition_of  # noqa: E402
from courtly.sandbox import SandboxTruth, lateness, load_log  # noqa: E402
from courtly.sandbox.urls import split_url  # noqa: E402


@dataclass
class Trace:
    """The crawler's own timestamps, by URL (a URL is fetched once)."""

    leased: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # call, ret, due
    requeued: dict[str, tuple[float, float]] = field(default_factory=dict)  # url -> (at, next)
    fetched: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # call, start, end
    lease_calls: list[tuple[float, int, int, float | None]] = field(default_factory=list)
    busy: list[tuple[float, int, int]] = field(default_factory=list)  # at, in flight, desired
    ranks: dict[str, int] = field(default_factory=dict)  # url -> rank of the head leased


def _leased_rank(store: Any, host_key: str) -> int | None:
    """The back-queue rank of a host's leased head (the memory and SQLite stores' scheduler,
    read from outside: a measurement, not an API), or ``None``."""
    held = getattr(getattr(store, "_sched", None), "_held", {}).get(host_key)
    return None if held is None else int(held.leased_rank)


class TracingStore:
    """A store that records lease and requeue times; everything else passes through."""

    def __init__(self, inner: Any, trace: Trace) -> None:
        self._inner = inner
        self._trace = trace

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def lease(
        self, now_at: float, ttl_s: float, max_leases: int, *, ahead_s: float = 0.0
    ) -> Any:
        called = time.time()
        batch = await self._inner.lease(now_at, ttl_s, max_leases, ahead_s=ahead_s)
        returned = time.time()
        for lease in batch.leases:
            self._trace.leased[lease.url] = (called, returned, lease.host.next_allowed_at)
            if (rank := _leased_rank(self._inner, lease.host_key)) is not None:
                self._trace.ranks[lease.url] = rank
        self._trace.lease_calls.append((called, max_leases, len(batch.leases), batch.next_ready_at))
        return batch

    async def complete(self, lease: Any, host: Any, *args: Any, **kwargs: Any) -> Any:
        self._trace.requeued[lease.url] = (time.time(), host.next_allowed_at)
        return await self._inner.complete(lease, host, *args, **kwargs)

    async def release(self, lease: Any, host: Any, now_at: float, *, failed: bool = False) -> Any:
        if host is not None:
            self._trace.requeued["released:" + lease.url] = (time.time(), host.next_allowed_at)
        return await self._inner.release(lease, host, now_at, failed=failed)


class TracingFetcher:
    """A fetcher that records when it was called and the exchange's own stamps."""

    def __init__(self, inner: HttpFetcher, trace: Trace) -> None:
        self._inner = inner
        self._trace = trace

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def fetch(self, url: str) -> FetchResult:
        called = time.time()
        result = await self._inner.fetch(url)
        self._trace.fetched[url] = (called, result.started_at, result.ended_at)
        return result


def _config(
    web: cs.Sandbox, scenario: cs.Scenario, state: Path, seconds: float, share: int
) -> CrawlConfig:
    return CrawlConfig(
        seeds=(),
        state_dir=state,
        user_agent=cs.USER_AGENT,
        min_delay_s=scenario.min_delay_s,
        scope=scenario.scope,
        hosts_file=Path(web.info["hosts_file"]),
        allow_private_networks=True,
        max_time_s=seconds,
        per_ip=max(1, scenario.per_ip // share),
        processes=1,
    )


async def crawl(config: CrawlConfig, trace: Trace) -> dict[str, float]:
    queues = frontier_config(config).queues
    store = TracingStore(open_store(config, queues), trace)
    http = HttpFetcher(
        FetchConfig(
            user_agent=config.user_agent,
            connect_timeout_s=config.connect_timeout_s,
            total_timeout_s=config.total_timeout_s,
            max_body_bytes=config.max_body_bytes,
            max_decoded_bytes=4 * config.max_body_bytes,
            per_ip_concurrency=config.per_ip,
            allow_private_networks=True,
            hosts_file=config.hosts_file,
        ),
        SystemClock(),
    )
    try:
        crawler = Crawler(config, store=store, fetcher=TracingFetcher(http, trace))

        async def sample() -> None:
            while True:
                trace.busy.append((time.time(), crawler._in_flight, crawler.fetchers))
                await asyncio.sleep(0.005)

        sampler = asyncio.ensure_future(sample())
        try:
            snapshot = await crawler.run()
        finally:
            sampler.cancel()
    finally:
        await http.aclose()
    return getattr(snapshot, "dispatch", {})  # absent before the crawler measured it


def _q(xs: Sequence[float], p: float) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, int(p * len(ys)))] if ys else float("nan")


def _dispatch_cause(trace: Trace, due: float, leased_at: float) -> str:
    """Why a due host waited for its lease: every fetcher was busy at each lease call
    meanwhile (``capped``), every fetcher was busy and no lease call was made
    (``all_fetchers_busy``), the dispatcher made no lease call although a fetcher was
    free at some sample (``no_call``: it slept, or the loop was busy), or a call
    handed out fewer leases than fetchers were free (``uncapped``: the host was not in
    the ready heap, e.g. inactive)."""
    calls = [c for c in trace.lease_calls if due < c[0] < leased_at - 1e-4]
    if not calls:
        busy = [b for b in trace.busy if due < b[0] < leased_at]
        if busy and all(in_flight >= desired for _, in_flight, desired in busy):
            return "all_fetchers_busy"
        return "no_call"
    if all(given >= asked for _, asked, given, _ in calls):
        return "capped"
    return "uncapped"


def breakdown(
    records: list[Any], truth: SandboxTruth, trace: Trace, min_delay_s: float
) -> dict[str, Any]:
    """Each page request's lateness and its parts (see the module doc), in ms."""
    parts: dict[str, list[float]] = defaultdict(list)
    t0 = min(r.start_at for r in records)
    rows = lateness(records, truth=truth, min_delay_s=min_delay_s, delay_factor=cs.DELAY_FACTOR)
    for row in rows:
        prev, rec = row.previous, row.record
        url_prev = f"http://{prev.host}:{prev.port}{prev.path}"
        url = f"http://{rec.host}:{rec.port}{rec.path}"
        fetched_prev = trace.fetched.get(url_prev)
        fetched = trace.fetched.get(url)
        leased = trace.leased.get(url)
        requeued = trace.requeued.get(url_prev) or trace.requeued.get("released:" + url_prev)
        if None in (fetched_prev, fetched, leased, requeued) or prev.path.startswith("/robots"):
            parts["untraced"].append(row.late_s * 1000)
            continue
        assert fetched_prev and fetched and leased and requeued
        c_end = fetched_prev[2]
        next_at = requeued[1]
        due = max(next_at, requeued[0])
        parts["total"].append(row.late_s * 1000)
        parts["read"].append((c_end - prev.end_at) * 1000)
        parts["policy"].append((next_at - (c_end + row.required_s)) * 1000)
        parts["requeue"].append((due - next_at) * 1000)
        parts["dispatch"].append((leased[0] - due) * 1000)
        if (rank := trace.ranks.get(url)) is not None:  # due -> leased, by the head's rank
            parts[f"dispatch_rank{rank}"].append((leased[0] - due) * 1000)
        parts["lease_step"].append((leased[1] - leased[0]) * 1000)
        if leased[0] - due > 0.01:
            cause = _dispatch_cause(trace, due, leased[0])
            parts["dispatch_late_" + cause].append((leased[0] - due) * 1000)
            parts["dispatch_late_" + cause + "_at_ms"].append((due - t0) * 1000)
        parts["start"].append((fetched[0] - max(leased[1], due)) * 1000)
        parts["exchange"].append((fetched[1] - fetched[0]) * 1000)
        parts["send"].append((rec.start_at - fetched[1]) * 1000)
    out: dict[str, Any] = {}
    for name, xs in parts.items():
        out[name] = {
            "n": len(xs),
            "p50": round(_q(xs, 0.5), 1),
            "p90": round(_q(xs, 0.9), 1),
            "p99": round(_q(xs, 0.99), 1),
            "max": round(max(xs), 1) if xs else None,
            "mean": round(statistics.fmean(xs), 1) if xs else None,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenario", default="politeness")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--partition", default="0/2", help="I/N: one partition of N [0/2]")
    parser.add_argument("--split-cap", action="store_true", help="per_ip // N per partition")
    parser.add_argument("--workdir", type=Path, default=HERE / "out" / "lateness")
    parser.add_argument("--dump", type=Path, help="pickle the trace and the log records here")
    args = parser.parse_args(argv)
    index, n = (int(x) for x in args.partition.split("/"))
    scenario = cs.scenarios(args.quick)[args.scenario]
    import dataclasses
    import shutil

    spec = dataclasses.replace(scenario.spec, port=cs.free_port())
    if args.workdir.exists():
        shutil.rmtree(args.workdir)
    web = cs.Sandbox(spec, args.workdir / "web")
    trace = Trace()
    try:
        seeds = tuple(s for s in web.seeds if partition_of(split_url(s)[0], n) == index)
        config = dataclasses.replace(
            _config(
                web, scenario, args.workdir / "state", args.seconds, n if args.split_cap else 1
            ),
            seeds=seeds,
        )
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            own = runner.run(crawl(config, trace))
    finally:
        web.stop()
    records = [r for r in load_log(Path(web.info["log_path"])) if r.ua == cs.USER_AGENT]
    truth = SandboxTruth(web.world)
    report = cs.summarise(scenario, web, records, cs.ProcessCost(1, 0, 0, 0), args.seconds, truth)
    out = {
        "partition": args.partition,
        "pages_per_s": report["pages_per_s"],
        "bound_pages_per_s": report["bound_pages_per_s"],
        "violations": report["violations"],
        "lease_calls": len(trace.lease_calls),
        "fetchers_desired_p10_p50_p90": [
            _q([b[2] for b in trace.busy], p) for p in (0.1, 0.5, 0.9)
        ],
        "in_flight_p10_p50_p90": [_q([b[1] for b in trace.busy], p) for p in (0.1, 0.5, 0.9)],
        "lateness_ms": breakdown(records, truth, trace, scenario.min_delay_s),
        "crawler_dispatch": own,
    }
    print(json.dumps(out, indent=1))
    if args.dump is not None:
        import pickle

        args.dump.write_bytes(pickle.dumps((trace, records)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

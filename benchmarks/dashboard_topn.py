"""The dashboard's per-tick work on a crawl with many hosts: top-N and the summary.

Usage::

    .venv/bin/python benchmarks/dashboard_topn.py                 # 100,000 hosts
    .venv/bin/python benchmarks/dashboard_topn.py --hosts 20000 --json

Fills a :class:`~courtly.observe.hosts.HostTable` with ``--hosts`` hosts through the
same events a crawl publishes (a lease, then a state change with a seeded delay source,
next allowed time, error streak and queue length). Then, ``--ticks`` times (7), one
second of a crawl passes: ``--changes`` hosts (1,000: a crawl at 1,000 pages/s) are
leased and get a new state, the clock moves on one second, and each figure is timed
once; the medians are reported:

* ``top_<sort>_ms``: ``HostTable.top(sort, 50)``, each sort key (what ``/api/hosts``
  answers; ``queued`` includes its pass over the store's queue lengths; the others
  are kept in heaps), beside ``scan_top_<sort>_ms``: the same top by ``heapq.nlargest``
  over every host (``HostTable.top_by_scan``, the reference), and
  ``tops_equal_scan``: whether the two agreed every tick;
* ``top_ms_max``: the slowest top of any sort in any tick (a tick's first top of a sort
  after a rebuild of its candidates from every host, ``kept_top_rebuilds``, is O(hosts));
* ``summary_ms``: ``Observation.summary``, the ``observed`` part of a tick (census,
  three top-50s, log2 bins of queue lengths);
* ``census_ms``: ``HostTable.census`` (counts kept by events; the queue-length pass),
  beside ``scan_ms``: the same figures by one pass over every host
  (``HostTable.scan``, the reference the kept counts are checked against), and
  ``census_equals_scan``: whether the two agreed every tick;
* ``queue_lengths_pass_ms``: one pass over the store's queue lengths (with their log2
  bins); the census and ``top(queued)`` reuse the last one while it is recent, so
  ``top_queued_ms`` is mostly the rows;
* ``load_average``: the machine's, before and after;
* ``event_ns``: one ``HostStateChanged`` through the observation (the hot-path cost
  per completion).

The target is top-N <= 50 ms at 100,000 hosts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from collections.abc import Callable
from typing import Any, TypeVar

from courtly.events import HostLeased, HostStateChanged
from courtly.frontier.records import DelaySource, FrontierCounts, HostState
from courtly.observe.hosts import SORTS
from courtly.observe.observation import Observation

T = TypeVar("T")
T0 = 1_000_000.0


def build(n: int, seed: int = 1) -> tuple[Observation, list[HostStateChanged]]:
    rng = random.Random(seed)
    queued = {f"h{i}.test": int(rng.paretovariate(1.2)) for i in range(n)}
    obs = Observation(queued.get)
    sources = list(DelaySource)
    events = []
    for key in queued:
        obs.notify(HostLeased(T0, key))
        state = HostState(
            key,
            next_allowed_at=T0 + rng.uniform(0, 120),
            last_fetch_s=rng.uniform(0.01, 2.0),
            error_streak=rng.choice((0, 0, 0, 1, 2)),
            requests_made=rng.randint(1, 500),
            delay_source=rng.choice(sources),
            last_status=rng.choice((200, 200, 404, 503)),
        )
        event = HostStateChanged(T0, state)
        events.append(event)
        obs.notify(event)
    return obs, events


def changed(rng: random.Random, key: str, at: float, sources: list[DelaySource]) -> HostState:
    """A host's state after one fetch at ``at``."""
    return HostState(
        key,
        next_allowed_at=at + rng.uniform(0.5, 30),
        last_fetch_s=rng.uniform(0.01, 2.0),
        error_streak=rng.choice((0, 0, 0, 0, 1)),
        requests_made=rng.randint(1, 500),
        delay_source=rng.choice(sources),
        last_status=rng.choice((200, 200, 404, 503)),
    )


def timed(timings: dict[str, list[float]], name: str, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, its wall time in ms appended to ``timings[name]``."""
    start = time.perf_counter()
    value = fn(*args)
    timings.setdefault(name, []).append((time.perf_counter() - start) * 1000)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=1_000, help="state changes per tick")
    parser.add_argument("--ticks", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    obs, events = build(args.hosts)
    rng = random.Random(2)
    sources = list(DelaySource)
    keys = list(obs.hosts.hosts)
    counts = FrontierCounts(10, 5, 5, args.hosts, 0, args.hosts, 0, 0, 0, 0, 0)
    timings: dict[str, list[float]] = {}
    agreed = tops_agreed = True
    now = T0 + 30
    obs.summary(now, counts)  # the first census pops every host already due
    for _ in range(args.ticks):
        for key in rng.sample(keys, min(args.changes, len(keys))):
            obs.notify(HostLeased(now, key))
            obs.notify(HostStateChanged(now + 0.5, changed(rng, key, now + 0.5, sources)))
        now += 1.0
        table = obs.hosts
        scan = timed(timings, "scan_ms", table.scan, now)
        census = timed(timings, "census_ms", table.census, now)
        agreed = agreed and scan == census
        timed(timings, "summary_ms", obs.summary, now, counts)
        for sort in SORTS:
            kept = timed(timings, f"top_{sort}_ms", table.top, sort, 50, now + 0.001)
            if sort != "queued":
                scanned = timed(
                    timings, f"scan_top_{sort}_ms", table.top_by_scan, sort, 50, now + 0.001
                )
                tops_agreed = tops_agreed and kept == scanned
        # the pass over the store's queue lengths (bins, longest queues), forced: the tops
        # above reuse the census's while it is recent (see HostTable._queue_lengths)
        timed(timings, "queue_lengths_pass_ms", table.queue_lengths_pass, now + 0.002)
    result: dict[str, Any] = {"hosts": args.hosts, "changes": args.changes}
    result["load_average"] = [round(x, 2) for x in (load_before, os.getloadavg()[0])]
    for name, runs in timings.items():
        result[name] = round(statistics.median(runs), 2)
    result["kept_top_rebuilds"] = obs.hosts.kept_top_rebuilds()
    result["top_ms_max"] = round(
        max(max(runs) for name, runs in timings.items() if name.startswith("top_")), 2
    )
    result["census_equals_scan"] = agreed
    result["tops_equal_scan"] = tops_agreed
    sample = events[:20_000]
    start = time.perf_counter()
    for event in sample:
        obs.notify(event)
    result["event_ns"] = round((time.perf_counter() - start) / len(sample) * 1e9)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:22} {value}")


if __name__ == "__main__":
    main()

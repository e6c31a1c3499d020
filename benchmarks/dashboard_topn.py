"""The dashboard's per-tick work on a crawl with many hosts: top-N and the summary.

Usage::

    .venv/bin/python benchmarks/dashboard_topn.py                 # 100,000 hosts
    .venv/bin/python benchmarks/dashboard_topn.py --hosts 20000 --json

Fills a :class:`~courtly.observe.hosts.HostTable` with ``--hosts`` hosts through the
same events a crawl publishes (a lease, then a state change with a seeded delay source,
next allowed time, error streak and queue length), then times, median of 5 runs:
``top_<sort>_ms`` (``HostTable.top(sort, 50)``, each sort key), ``summary_ms``
(``Observation.summary``: the ``observed`` part of a tick, three top-50s, counts by
source and state, log2 bins) and ``event_ns`` (one ``HostStateChanged`` through the
observation, the hot-path cost per completion). The target is top-N <= 50 ms at
100,000 hosts.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from courtly.events import HostLeased, HostStateChanged
from courtly.frontier.records import DelaySource, FrontierCounts, HostState
from courtly.observe.hosts import SORTS
from courtly.observe.observation import Observation

_RUNS = 5
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


def timed_ms(fn: object) -> float:
    runs = []
    for _ in range(_RUNS):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        runs.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    obs, events = build(args.hosts)
    now = T0 + 30
    result: dict[str, float | int] = {"hosts": args.hosts}
    for sort in SORTS:
        result[f"top_{sort}_ms"] = round(timed_ms(lambda s=sort: obs.hosts.top(s, 50, now)), 2)
    counts = FrontierCounts(10, 5, 5, args.hosts, 0, args.hosts, 0, 0, 0, 0, 0)
    result["summary_ms"] = round(timed_ms(lambda: obs.summary(now, counts)), 2)
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

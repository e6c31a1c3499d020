"""Scrapy with courtly's add-on against stock Scrapy, same spider, same sandbox webs, one run.

Three crawlers run ``scrapy_spider.py`` in courtly's own environment (one Scrapy
version for all), one after the other, each against a fresh sandbox web served by
a child process, for the same time budget, audited by the server's log as in
``compare_scrapy.py``:

* ``addon``: ``ADDONS = {"courtly.integrations.scrapy.CourtlyAddon": 0}`` with the
  scenario's minimum delay and per-IP cap (SQLite state);
* ``scrapy_polite``: stock Scrapy configured to be polite (robots.txt, one request
  per domain, ``DOWNLOAD_DELAY`` = the minimum delay: ``compare_scrapy``'s settings);
* ``scrapy_defaults``: stock Scrapy's own defaults (8 per domain, no delay, no
  robots.txt);
* ``addon_before`` (with ``--baseline-src DIR``): the add-on as the courtly source
  tree ``DIR/src`` has it (e.g. ``git archive <commit> src | tar -x -C DIR``), put
  first on the crawler's ``PYTHONPATH``: before and after a change, side by side.

Figures per crawler: ``pages_per_s``, ``violations`` (and by kind), ``coverage``,
CPU, and the *start lag* of consecutive requests to a host on hosts with no
Crawl-delay, not slow, not flaky, from the server log: for the add-on, next start
minus (previous end + max(min delay, delay factor x previous duration)); for
stock Scrapy, whose delay runs from the start of the previous request, next start
minus (previous start + delay). Only pairs with a lag under 1 s count (a longer
one means the host had nothing queued): ``start_lag_p50_ms``, ``_p90_ms``,
``_p99_ms``. The add-on also reports its own ``courtly/start_lag_*`` stats
(request entered the downloader - host came due).

    python benchmarks/scrapy_addon.py --quick --json
    python benchmarks/scrapy_addon.py --scenario broad --seconds 20
    python benchmarks/scrapy_addon.py --quick --addon-set COURTLY_BACK_QUEUES=64
    python benchmarks/scrapy_addon.py --quick --py-spy out/profiles   # where the time goes
    python benchmarks/scrapy_addon.py --quick --crawlers addon_before,addon --baseline-src /tmp/old

``--redis`` runs the add-on on a Redis store (``COURTLY_STORE``, a crawl name per run) in
a ``redis-server`` of the run's own, on a random loopback port, stopped at the end.
``--rounds N`` repeats every run N times, the crawlers' order turned by one each
round, and adds medians and per-round ratios (``summary``).
``--addon-set NAME=JSON`` passes a setting to the add-on's run only; ``--py-spy DIR``
samples every crawler with py-spy (installed with pip) into ``DIR/<scenario>-<crawler>.txt``
(collapsed stacks; the CPU figures of such a run include py-spy's own). ``--cpus 0``
pins every process of the run (crawler and sandbox) to the CPUs named, as
``taskset -c`` does: a way to see how the crawlers behave with less CPU than they want.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

from compare_scrapy import (
    DELAY_FACTOR,
    HERE,
    USER_AGENT,
    Sandbox,
    Scenario,
    machine,
    run_measured,
    scenarios,
    scrapy_spider_args,
    summarise,
)
from courtly.sandbox import RequestRecord, SandboxTruth, load_log

CRAWLERS = ("addon", "scrapy_polite", "scrapy_defaults")
ADDONS = ("addon", "addon_before")
_MAX_LAG_S = 1.0
OVERRUN_GRACE_S = 60.0
"""A spider still running this long after its time limit and download timeout is stuck."""


def command(
    crawler: str,
    scenario: Scenario,
    web: Sandbox,
    seconds: float,
    run: Path,
    addon_set: Sequence[str] = (),
) -> list[str]:
    """``scrapy_spider.py`` for ``crawler`` (see the module doc)."""
    cmd = [sys.executable, *scrapy_spider_args(scenario, web, seconds, run / "stats.json")]
    if crawler in ADDONS:
        return [
            *cmd,
            "--courtly",
            str(run / "state"),
            "--set",
            "COURTLY_ALLOW_PRIVATE_NETWORKS=true",
            "--set",
            f"COURTLY_PER_IP={scenario.per_ip}",
            "--set",
            f"COURTLY_DELAY_FACTOR={DELAY_FACTOR}",
            *(arg for setting in addon_set for arg in ("--set", setting)),
            *crawl_name(addon_set, run),
        ]
    if crawler == "scrapy_defaults":
        return [
            *cmd,
            "--set",
            "ROBOTSTXT_OBEY=false",
            "--set",
            "CONCURRENT_REQUESTS_PER_DOMAIN=8",
            "--set",
            "DOWNLOAD_DELAY=0",
        ]
    return cmd


def crawl_name(addon_set: Sequence[str], run: Path) -> list[str]:
    """A crawl name of the run's own on a Redis store (none given): the flags to set it."""
    names = {setting.partition("=")[0] for setting in addon_set}
    if "COURTLY_STORE" not in names or "COURTLY_CRAWL_NAME" in names:
        return []
    name = f"bench-{run.parent.name}-{run.name}-{random.getrandbits(32):08x}"
    return ["--set", f"COURTLY_CRAWL_NAME={json.dumps(name)}"]


@contextmanager
def redis_server() -> Iterator[str]:
    """A ``redis-server`` of this run's own (no persistence): its URL; stopped by PID. Its
    port is one the system reports free; if another program takes it first the server
    exits, and another port is tried."""
    data = tempfile.mkdtemp(prefix="courtly-bench-redis-")
    try:
        for _ in range(5):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = int(probe.getsockname()[1])
            server = subprocess.Popen(
                [
                    *("redis-server", "--port", str(port), "--bind", "127.0.0.1"),
                    *("--save", "", "--appendonly", "no", "--dir", data),
                ],
                stdout=subprocess.DEVNULL,
            )
            try:
                if _listening(server, port):
                    yield f"redis://127.0.0.1:{port}/0"
                    return
            finally:
                server.terminate()
                server.wait(10)
        raise RuntimeError("redis-server did not start on any of 5 ports")
    finally:
        shutil.rmtree(data, ignore_errors=True)


def _listening(server: subprocess.Popen[bytes], port: int) -> bool:
    """Whether ``server`` accepts connections on ``port`` within 10 s (``False``: it exited)."""
    deadline = time.monotonic() + 10.0
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            if server.poll() is not None:
                return False
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {port}") from None
            time.sleep(0.05)


def start_lags(
    records: list[RequestRecord], truth: SandboxTruth, scenario: Scenario, from_start: bool
) -> list[float]:
    """Seconds each request to a plain host started after it was allowed to (module doc)."""
    world = truth.world
    by_host: dict[str, list[RequestRecord]] = defaultdict(list)
    for rec in records:
        profile = world.profile(rec.host)
        if profile is None or profile.slow or profile.flaky:
            continue
        if truth.crawl_delay_s(rec.host, "courtly") > 0:
            continue
        by_host[rec.host].append(rec)
    lags: list[float] = []
    for recs in by_host.values():
        recs.sort(key=lambda r: r.start_at)
        for prev, rec in pairwise(recs):
            if prev.status in (429, 503):
                continue
            if from_start:
                due = prev.start_at + scenario.min_delay_s
            else:
                elapsed = prev.end_at - prev.start_at
                due = prev.end_at + max(scenario.min_delay_s, DELAY_FACTOR * elapsed)
            lag = rec.start_at - due
            if 0.0 <= lag < _MAX_LAG_S:
                lags.append(lag)
    return sorted(lags)


def _quantile(values: list[float], q: float) -> float | None:
    return round(1000 * values[int(q * (len(values) - 1))], 1) if values else None


def measure(
    crawler: str,
    scenario: Scenario,
    seconds: float,
    workdir: Path,
    addon_set: Sequence[str] = (),
    py_spy: Path | None = None,
    baseline_src: Path | None = None,
) -> dict[str, Any]:
    run = workdir / f"{scenario.name}-{crawler}"
    if run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True)
    web = Sandbox(scenario.spec, run / "web")
    cmd = command(crawler, scenario, web, seconds, run, addon_set)
    if py_spy is not None:
        py_spy.mkdir(parents=True, exist_ok=True)
        spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
        out = py_spy / f"{scenario.name}-{crawler}.txt"
        cmd = [spy, "record", "--format", "raw", "--rate", "200", "-o", str(out), "--", *cmd]
    env = None
    if crawler == "addon_before":
        assert baseline_src is not None, "addon_before needs --baseline-src"
        env = {**os.environ, "PYTHONPATH": str(baseline_src / "src")}
    # A spider must close within its time, the end of its last responses and its own
    # close; one that runs on well past that is stuck: its tasks' stacks go to its log
    # (SIGUSR1, not under py-spy), it is killed and the run reports an error.
    limit_s = seconds + scenario.timeout_s + OVERRUN_GRACE_S
    try:
        cost = run_measured(
            cmd,
            run / "scrapy.log",
            env,
            timeout_s=limit_s,
            dump_signal=signal.SIGUSR1 if py_spy is None else None,
        )
    finally:
        web.stop()
    records = load_log(Path(web.info["log_path"]))
    figures = summarise(scenario, web, records, cost, seconds)
    if cost.timed_out:
        figures["error"] = (
            f"the spider ran on past {limit_s:.0f} s and was killed (its tasks' stacks are "
            f"in {run / 'scrapy.log'})"
        )
    mine = [r for r in records if r.ua == USER_AGENT]
    lags = start_lags(mine, SandboxTruth(web.world), scenario, from_start=crawler not in ADDONS)
    figures["start_lag_pairs"] = len(lags)
    figures["start_lag_p50_ms"] = _quantile(lags, 0.5)
    figures["start_lag_p90_ms"] = _quantile(lags, 0.9)
    figures["start_lag_p99_ms"] = _quantile(lags, 0.99)
    figures["start_lag_mean_ms"] = round(1000 * statistics.fmean(lags), 1) if lags else None
    stats_file = run / "stats.json"
    if stats_file.exists():
        stats = json.loads(stats_file.read_text())
        figures["finish_reason"] = stats.get("finish_reason")
        figures["courtly_stats"] = {k: v for k, v in stats.items() if k.startswith("courtly/")}
    for key in ("examples",):
        figures.pop(key, None)
    return figures


STAGES = (
    "start_lag",
    "start_lag_pump",
    "start_lag_lease",
    "start_lag_engine",
    "start_lag_downloader",
)
"""The add-on's own start-lag figures (``courtly/<stage>_<q>_ms``) the summary keeps."""


def run_scenario(
    name: str,
    scenario: Scenario,
    crawlers: Sequence[str],
    seconds: float,
    workdir: Path,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Every crawler once on a fresh copy of ``scenario``'s web."""
    out: dict[str, Any] = {"hosts": scenario.spec.n_hosts, "min_delay_s": scenario.min_delay_s}
    for crawler in crawlers:
        print(f"[{name}] {crawler}: {seconds:.0f} s ...", file=sys.stderr, flush=True)
        figures = measure(
            crawler, scenario, seconds, workdir, args.addon_set, args.py_spy, args.baseline_src
        )
        out[crawler] = figures
        own = figures.get("courtly_stats", {})
        stages = " ".join(
            f"{stage.removeprefix('start_lag_') or 'all'} "
            f"{own.get(f'courtly/{stage}_p50_ms')}/{own.get(f'courtly/{stage}_p99_ms')}"
            for stage in STAGES
        )
        if "error" in figures:
            print(f"[{name}] {crawler}: ERROR {figures['error']}", file=sys.stderr, flush=True)
        print(
            f"[{name}] {crawler}: {figures['pages_per_s']} pages/s, violations "
            f"{figures['violations']} {figures['violations_by_kind']}, server lag p50/p90 "
            f"{figures['start_lag_p50_ms']}/{figures['start_lag_p90_ms']} ms;",
            f"courtly p50/p99 ms: {stages}" if own else "",
            file=sys.stderr,
            flush=True,
        )
    if "addon" in out and out.get("scrapy_polite", {}).get("pages_per_s"):
        out["addon_vs_scrapy_polite"] = round(
            out["addon"]["pages_per_s"] / out["scrapy_polite"]["pages_per_s"], 2
        )
    return out


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def summary(
    rounds: list[dict[str, Any]], names: Sequence[str], crawlers: Sequence[str]
) -> dict[str, Any]:
    """Medians over the rounds: pages/s, ratios to the other crawlers of the same round,
    violations, and the add-ons' start-lag stages."""
    out: dict[str, Any] = {}
    for name in names:
        runs = [one[name] for one in rounds]
        scenario: dict[str, Any] = {}
        for crawler in crawlers:
            mine = [run[crawler] for run in runs]
            figures: dict[str, Any] = {
                "pages_per_s": _median([m["pages_per_s"] for m in mine]),
                "violations": [m["violations"] for m in mine],
                "server_lag_p50_ms": _median(
                    [m["start_lag_p50_ms"] for m in mine if m["start_lag_p50_ms"] is not None]
                ),
                "server_lag_p99_ms": _median(
                    [m["start_lag_p99_ms"] for m in mine if m["start_lag_p99_ms"] is not None]
                ),
            }
            for other in crawlers:
                if other == crawler:
                    continue
                ratios = [
                    run[crawler]["pages_per_s"] / run[other]["pages_per_s"]
                    for run in runs
                    if run[other]["pages_per_s"]
                ]
                figures[f"pages_per_s_vs_{other}"] = [round(r, 2) for r in ratios]
                figures[f"pages_per_s_vs_{other}_median"] = _median(ratios)
            own = [m.get("courtly_stats", {}) for m in mine]
            for stage in STAGES:
                for q in ("p50", "p95", "p99"):
                    key = f"courtly/{stage}_{q}_ms"
                    values = [float(o[key]) for o in own if key in o]
                    if values:
                        figures[f"{stage}_{q}_ms"] = _median(values)
            scenario[crawler] = figures
        out[name] = scenario
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenario", choices=("broad", "politeness", "all"), default="all")
    parser.add_argument("--seconds", type=float, help="time budget per run [30; 10 with --quick]")
    parser.add_argument("--quick", action="store_true", help="smaller webs, 10 s runs")
    parser.add_argument("--crawlers", default=",".join(CRAWLERS))
    parser.add_argument("--workdir", type=Path, default=HERE / "out" / "scrapy_addon")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--addon-set", action="append", default=[], metavar="NAME=JSON", help="add-on run only"
    )
    parser.add_argument("--py-spy", type=Path, metavar="DIR", help="profile every crawler")
    parser.add_argument("--cpus", help="pin the run to these CPUs (e.g. 0 or 0,1)")
    parser.add_argument(
        "--baseline-src", type=Path, metavar="DIR", help="courtly tree of addon_before"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="repeat every run, crawlers in turn [1]"
    )
    parser.add_argument("--redis", action="store_true", help="the add-on on a Redis store")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.cpus:
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    seconds = args.seconds or (10.0 if args.quick else 30.0)
    crawlers = [c for c in args.crawlers.split(",") if c]
    chosen = scenarios(args.quick)
    names = ["broad", "politeness"] if args.scenario == "all" else [args.scenario]
    results: dict[str, Any] = {
        "benchmark": "scrapy_addon",
        "machine": machine(),
        "seconds": seconds,
        "quick": args.quick,
        "addon_set": args.addon_set,
        "cpus": args.cpus,
        "baseline_src": str(args.baseline_src) if args.baseline_src else None,
        "rounds_run": args.rounds,
        "redis": args.redis,
        "scenarios": {},
    }
    rounds: list[dict[str, Any]] = []
    for index in range(args.rounds):
        # Each round turns the order of the crawlers by one: no crawler always runs first.
        shift = index % len(crawlers)
        order = crawlers[shift:] + crawlers[:shift]
        workdir = args.workdir if args.rounds == 1 else args.workdir / f"round-{index}"
        one: dict[str, Any] = {}
        for name in names:
            one[name] = run_scenario(name, chosen[name], order, seconds, workdir, args)
        rounds.append(one)
    results["scenarios"] = rounds[0]
    if args.rounds > 1:
        results["rounds"] = rounds
        results["summary"] = summary(rounds, names, crawlers)
        print(json.dumps(results["summary"], indent=2), file=sys.stderr, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.redis:
        with redis_server() as url:
            args.addon_set = [*args.addon_set, f"COURTLY_STORE={json.dumps(url)}"]
            results = run(args)
    else:
        results = run(args)
    results["errors"] = [
        f"round {index} {name} {crawler}: {figures['error']}"
        for index, one in enumerate(results.get("rounds", [results["scenarios"]]))
        for name, out in one.items()
        for crawler, figures in out.items()
        if isinstance(figures, dict) and "error" in figures
    ]
    print(json.dumps(results) if args.json else json.dumps(results, indent=2))
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())

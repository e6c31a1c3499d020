"""Crawls of a sandbox web on the Redis store, beside the local store, audited.

Two modes, each printing one JSON object with ``--json``:

* ``compare``: the same sandbox web (a fresh copy each run, on one port) crawled
  with the local store (``courtly crawl`` defaults: SQLite, host-partitioned
  processes) and with ``--fetchers`` ``courtly crawl`` processes joined on one crawl
  in a standalone ``redis-server`` of the benchmark's own (a random loopback port,
  no persistence), the same flags, alternated ``--rounds`` times (the order swaps
  every round); medians. Per run: ``pages_per_s`` (over the crawl's active window),
  ``cpu_s`` of the crawler processes (``wait4``), ``pages_per_cpu_s`` (pages/s per
  core: pages over the crawler CPU), the same with the Redis server's CPU counted
  (``pages_per_cpu_s_with_server``), the crawl-order score (``order_score``), the
  audit's violations, and ``lateness_ms`` (each request after a host's first: its start
  against the end of the host's previous response plus the required gap, from the
  server's log; medians of its p50, p90 and p99 over the rounds). ``--scenario broad``
  crawls compare_scrapy's broad web (its delay and concurrency) instead of the wide web
  of ``--hosts``;
* ``cluster``: ``--fetchers`` processes on a 3-master, 3-replica cluster
  (``cluster-node-timeout 2000``, as the tests start it) crawling a finite web to
  its end, audited from the sandbox's request log; with ``--kill-after S`` the
  master holding the most hosts' shards is SIGKILLed ``S`` seconds after the
  first page was archived, and ``failover_s`` is the time from the kill to the
  first request the sandbox logged to one of that master's hosts afterwards (and
  ``resumed_any_s`` to any request that started after the kill; both count a request
  from a lease taken just before the kill, so ``pause_at_kill_s`` gives, for the dead
  master's hosts and for the others, the longest a host went without a request start
  across the kill). Then: the
  violations before the kill, those on the hosts and addresses the dead master did
  not hold, the whole crawl's, whether anything is left queued or leased, and the
  pages served that the exported catalogue lacks (``lost``).

    python benchmarks/redis_crawl.py compare --hosts 2000 --seconds 30 --rounds 2 --json
    python benchmarks/redis_crawl.py compare --variant hiredis=DIR --json   # DIR: hiredis
    python benchmarks/redis_crawl.py compare --web politeness --variant main=DIR --json
    python benchmarks/redis_crawl.py cluster --fetchers 4 --json
    python benchmarks/redis_crawl.py cluster --fetchers 4 --kill-after 3 --json

Everything shares one machine: read the ratios of one run, not absolute figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests.redis_servers
sys.path.insert(0, str(HERE))  # compare_scrapy

from tests.redis_servers import RedisCluster, start_standalone, stop_server  # noqa: E402

from compare_scrapy import (  # noqa: E402
    USER_AGENT,
    CachedTruth,
    ProcessCost,
    Sandbox,
    Scenario,
    commit,
    courtly_command,
    courtly_flags,
    free_port,
    machine,
    run_measured,
    scenarios,
    summarise,
)
from courtly.sandbox import ROBOTS_VARIANTS, SandboxSpec, SandboxWorld, audit, load_log  # noqa: E402
from courtly.sandbox.request_log import RequestRecord  # noqa: E402
from courtly.store.redis.codec import shard_of, url_authority  # noqa: E402

SHARDS = 64
"""The shards a crawl gets by default (``RedisLayout``)."""


def _cpu_of(pid: int) -> float:
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def run_fetchers(
    cmds: list[list[str]], logs: list[Path], env: dict[str, str] | None = None
) -> list[ProcessCost]:
    """Run the commands at once (one thread each waits for its child); their costs."""
    costs: list[ProcessCost | None] = [None] * len(cmds)

    def one(i: int) -> None:
        costs[i] = run_measured(cmds[i], logs[i], env)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(cmds))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [cost for cost in costs if cost is not None]


def merged(costs: list[ProcessCost]) -> ProcessCost:
    return ProcessCost(
        wall_s=max(c.wall_s for c in costs),
        cpu_s=sum(c.cpu_s for c in costs),
        peak_rss_bytes=sum(c.peak_rss_bytes for c in costs),
        returncode=max((c.returncode for c in costs), key=abs),
    )


def with_store(cmd: list[str], store: str, crawl: str) -> list[str]:
    return [*cmd, "--store", store, "--crawl-name", crawl]


# -- compare --------------------------------------------------------------------------------


def one_run(
    scenario: Scenario,
    truth: CachedTruth,
    workdir: Path,
    label: str,
    seconds: float,
    fetchers: int,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One crawl of a fresh copy of the web: ``local`` (defaults) or ``redis...`` (its
    fetchers run with ``env``)."""
    run_dir = workdir / label
    run_dir.mkdir(parents=True)
    web = Sandbox(scenario.spec, run_dir / "web", truth.world)
    server = None
    server_cpu = 0.0
    try:
        if label.startswith("local"):
            cmd = courtly_command(scenario, web, seconds, run_dir / "state")
            cost = run_measured(cmd, run_dir / "crawl.log")
        else:
            url, server = start_standalone()
            crawl = f"bench-{uuid.uuid4().hex[:8]}"
            before = _cpu_of(server.pid)
            cmds = [
                with_store(courtly_command(scenario, web, seconds, run_dir / f"s{i}"), url, crawl)
                for i in range(fetchers)
            ]
            logs = [run_dir / f"crawl{i}.log" for i in range(fetchers)]
            cost = merged(run_fetchers(cmds, logs, env))
            server_cpu = _cpu_of(server.pid) - before
    finally:
        web.stop()
        if server is not None:
            stop_server(server)
    records = load_log(Path(web.info["log_path"]))
    figures = summarise(scenario, web, records, cost, seconds, truth)
    row = {
        key: figures[key]
        for key in (
            "pages",
            "pages_per_s",
            "cpu_s",
            "cpu_ms_per_page",
            "cpu_cores",
            "window_s",
            "coverage",
            "violations",
            "violations_by_kind",
            "order_score",
            "returncode",
            "sandbox_cpu_s",
            "lateness_ms",
        )
    }
    pages = figures["pages"]
    row["requests"] = len(records)
    row["robots_requests"] = sum(1 for r in records if r.path.startswith("/robots"))
    connections = len({(r.ip, r.conn) for r in records})
    row["requests_per_connection"] = round(len(records) / connections, 2) if connections else None
    row["cpu_ms_per_request"] = round(1000.0 * cost.cpu_s / len(records), 3) if records else None
    row["pages_per_cpu_s"] = round(pages / cost.cpu_s, 1) if cost.cpu_s else None
    row["redis_server_cpu_s"] = round(server_cpu, 2)
    total = cost.cpu_s + server_cpu
    row["pages_per_cpu_s_with_server"] = round(pages / total, 1) if total else None
    return row


def compare_scenario(name: str, hosts: int | None, seconds: float) -> Scenario:
    """``wide`` (2,000 hosts by default), ``broad`` (compare_scrapy's) or ``politeness``
    (300 hosts, 60 pages each, a 1 s delay: compare_scrapy's; where the start lag of a
    due host shows)."""
    if name == "politeness":
        spec = SandboxSpec.politeness(hosts or 300)
        spec = dataclasses.replace(spec, pages_per_host=60, port=free_port())
        return Scenario(
            "politeness",
            spec,
            min_delay_s=1.0,
            concurrency=128,
            purpose="the politeness web",
            seconds=seconds,
        )
    if name == "broad":  # compare_scrapy's scenario of that name (its web, delay, concurrency)
        scenario = scenarios(quick=False)["broad"]
        spec = dataclasses.replace(scenario.spec, port=free_port())
        return dataclasses.replace(scenario, spec=spec, seconds=seconds)
    spec = dataclasses.replace(SandboxSpec.wide(hosts or 2000), port=free_port())
    return Scenario("wide", spec, purpose="the wide web", seconds=seconds)


def compare(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    scenario = compare_scenario(args.scenario, args.hosts, args.seconds)
    spec = scenario.spec
    truth = CachedTruth(SandboxWorld(spec, spec.port))
    envs: dict[str, dict[str, str] | None] = {"local": None, "redis": None}
    for variant in args.variant:
        name, _, path = variant.partition("=")
        paths = [path, os.environ.get("PYTHONPATH", "")]
        envs[f"redis_{name}"] = os.environ | {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in envs}
    for round_ in range(args.rounds):
        order = list(envs) if round_ % 2 == 0 else list(reversed(envs))
        for label in order:
            print(f"round {round_ + 1}: {label} ...", file=sys.stderr, flush=True)
            row = one_run(
                scenario,
                truth,
                workdir,
                f"{label}-{round_}",
                args.seconds,
                args.fetchers,
                envs[label],
            )
            print(f"  {row}", file=sys.stderr, flush=True)
            runs[label].append(row)

    def median(label: str, key: str) -> float | None:
        values = [r[key] for r in runs[label] if r.get(key) is not None]
        return round(statistics.median(values), 2) if values else None

    medians = {
        label: {
            key: median(label, key)
            for key in (
                "pages_per_s",
                "pages_per_cpu_s",
                "pages_per_cpu_s_with_server",
                "cpu_s",
                "order_score",
                "requests_per_connection",
                "robots_requests",
                "cpu_ms_per_request",
            )
        }
        | {
            f"lateness_{q}_ms": _median_of(
                [r["lateness_ms"][q] for r in runs[label] if r["lateness_ms"][q] is not None]
            )
            for q in ("p50", "p90", "p99")
        }
        for label in runs
    }
    local = medians["local"]
    ratios: dict[str, dict[str, float | None]] = {}
    for label in envs:
        if label == "local":
            continue
        row = medians[label]
        ratios[label] = {
            key: _ratio(row[key], local_key)
            for key, local_key in (
                ("pages_per_cpu_s", local["pages_per_cpu_s"]),
                ("pages_per_cpu_s_with_server", local["pages_per_cpu_s"]),
                ("pages_per_s", local["pages_per_s"]),
            )
        }
    return {
        "scenario": scenario.name,
        "web": scenario.name,
        "hosts": spec.n_hosts,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "redis_fetchers": args.fetchers,
        "flags": " ".join(courtly_flags(scenario, "F", args.seconds)),
        "runs": runs,
        "medians": medians,
        "over_local": ratios,
        "redis_over_local_pages_per_cpu_s": ratios["redis"]["pages_per_cpu_s"],
    }


def _median_of(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def _ratio(value: float | None, base: float | None) -> float | None:
    return round(value / base, 3) if value and base else None


# -- cluster --------------------------------------------------------------------------------


def finite_spec(pages_per_host: int) -> SandboxSpec:
    """The small web without what keeps a crawl from ending (as the crawl tests use it)."""
    finite = tuple(v for v in ROBOTS_VARIANTS if v not in ("server_error", "hang"))
    return dataclasses.replace(
        SandboxSpec.small(),
        trap_hosts=0,
        dead_hosts=0,
        robots_variants=finite,
        pages_per_host=pages_per_host,
        special_pages=False,
        port=free_port(),
    )


def _shard_port(cluster: RedisCluster, crawl: str, host_key: str) -> int:
    from redis.crc import key_slot

    shard = shard_of(host_key, SHARDS)
    return cluster.owner_of(int(key_slot(f"{crawl}:{{{crawl}.{shard}}}:m".encode())))


def _ip_port(cluster: RedisCluster, crawl: str, ip: str) -> int:
    from redis.crc import key_slot

    return cluster.owner_of(int(key_slot(f"{crawl}:ip:{ip}".encode())))


def cluster_run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    spec = finite_spec(args.pages_per_host)
    scenario = Scenario(
        "finite", spec, purpose="the small finite web", min_delay_s=args.min_delay, scope="any"
    )
    truth = CachedTruth(SandboxWorld(spec, spec.port))
    web = Sandbox(spec, workdir / "web", truth.world)
    cluster = RedisCluster().start(masters=3, replicas=1)
    crawl = f"bench-{uuid.uuid4().hex[:8]}"
    killed_at: float | None = None
    dead_hosts: set[str] = set()
    dead_ips: set[str] = set()
    frontier: dict[str, Any] = {}
    catalogued: set[tuple[str | None, str]] = set()
    try:
        hosts = [url_authority(url) for url in web.seeds]
        flags = [
            "--concurrency",
            str(args.concurrency),
            "--connect-timeout",
            "1",
            "--timeout",
            "2",
        ]
        cmds = []
        for i in range(args.fetchers):
            state = workdir / f"s{i}"
            config = workdir / f"s{i}.toml"
            config.write_text(f"lease_ttl_s = {args.lease_ttl}\n")
            cmd = courtly_command(scenario, web, 600.0, state)
            cmds.append([*with_store(cmd, cluster.url, crawl), *flags, "--config", str(config)])
        logs = [workdir / f"crawl{i}.log" for i in range(args.fetchers)]
        costs: list[ProcessCost] = []
        runner = threading.Thread(target=lambda: costs.extend(run_fetchers(cmds, logs)))
        runner.start()
        if args.kill_after is not None:
            deadline = time.monotonic() + 60.0
            while time.monotonic() < deadline and not any(
                path.stat().st_size > 0
                for i in range(args.fetchers)
                for path in (workdir / f"s{i}" / "warc").glob("*.warc*")
            ):
                time.sleep(0.05)
            time.sleep(args.kill_after)
            owners = Counter(_shard_port(cluster, crawl, h) for h in hosts)
            victim = owners.most_common(1)[0][0]
            dead_hosts = {
                h.partition(":")[0]
                for h in hosts
                if owners and _shard_port(cluster, crawl, h) == victim
            }
            dead_ips = {
                ip
                for ip in set(truth.world.layout.live_ips)
                if _ip_port(cluster, crawl, ip) == victim
            }
            cluster.kill(victim)
            killed_at = time.time()
            print(
                f"killed master {victim} holding {len(dead_hosts)} of {len(hosts)} hosts",
                file=sys.stderr,
                flush=True,
            )
        runner.join()
        base = [sys.executable, "-m", "courtly"]
        status = subprocess.run(
            [*base, "status", "--store", cluster.url, "--crawl-name", crawl, "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
        frontier = json.loads(status.stdout)["frontier"]
        exported = workdir / "catalogue.jsonl"
        subprocess.run(
            [*base, "export", "--store", cluster.url, "--crawl-name", crawl, "-o", str(exported)],
            check=True,
            capture_output=True,
        )
        for line in exported.read_text().splitlines():
            url = json.loads(line)["url"]
            catalogued.add((urlsplit(url).hostname, urlsplit(url).path))
    finally:
        web.stop()
        cluster.stop()
    records = load_log(Path(web.info["log_path"]))
    mine = [r for r in records if r.ua == USER_AGENT]

    def audited(subset: list[RequestRecord]) -> dict[str, Any]:
        report = audit(
            subset,
            spec_or_truth=truth,
            min_delay_s=args.min_delay,
            per_ip_cap=scenario.per_ip,
            user_agent_token="courtly",
            only_user_agent=USER_AGENT,
            seeds=web.seeds,
            scope="any",
        )
        return {
            "requests": len(subset),
            "coverage": round(report.coverage, 4),
            "violations": report.violations,
            "by_kind": {
                "host_overlap": report.host_overlaps,
                "ip_over_cap": report.ip_over_cap,
                "gap": report.gap_violations,
                "retry_after": report.retry_after_violations,
                "disallowed": report.disallowed_fetches,
                "robots_unavailable": report.robots_unavailable_fetches,
                "duplicate": report.duplicate_fetches,
            },
            "max_in_flight_per_host": report.max_in_flight_per_host,
            "max_in_flight_per_ip": report.max_in_flight_per_ip,
        }

    served = {(r.host.partition(":")[0], r.path) for r in mine if not r.path.startswith("/robots")}
    out: dict[str, Any] = {
        "fetchers": args.fetchers,
        "concurrency": args.concurrency,
        "min_delay_s": args.min_delay,
        "pages_per_host": args.pages_per_host,
        "hosts": len(web.seeds),
        "masters": 3,
        "replicas": 3,
        "returncodes": [c.returncode for c in costs],
        "whole": audited(mine),
        "left_queued": frontier.get("queued"),
        "left_leased": frontier.get("leased"),
        "served_pages": len(served),
        "lost": len(served - catalogued),
    }
    if killed_at is not None:
        after = sorted(r.start_at - killed_at for r in mine if r.start_at > killed_at)
        dead_after = sorted(
            r.start_at - killed_at
            for r in mine
            if r.start_at > killed_at and r.host.partition(":")[0] in dead_hosts
        )
        out["killed_master_hosts"] = len(dead_hosts)
        out["killed_master_ips"] = len(dead_ips)
        out["failover_s"] = round(dead_after[0], 2) if dead_after else None
        out["resumed_any_s"] = round(after[0], 2) if after else None
        crawled = {r.host.partition(":")[0] for r in mine}
        out["pause_at_kill_s"] = {
            "dead_hosts": pause_across(mine, crawled & dead_hosts, killed_at),
            "spared_hosts": pause_across(mine, crawled - dead_hosts, killed_at),
        }
        out["before_kill"] = audited([r for r in mine if r.end_at < killed_at])
        out["spared"] = audited(
            [r for r in mine if r.host.partition(":")[0] not in dead_hosts and r.ip not in dead_ips]
        )
    return out


def pause_across(
    records: list[RequestRecord], hosts: set[str], at: float, within_s: float = 15.0
) -> float | None:
    """The longest a host of ``hosts`` went without a request start just after ``at``
    (the kill): per host, the largest gap between two consecutive request starts that
    ends after ``at`` and begins before ``at + within_s``; the largest over the hosts,
    seconds (``None``: no such gap). Unlike ``failover_s``, a request that starts just
    after the kill from a lease taken before it does not hide the pause that follows."""
    starts: dict[str, list[float]] = {}
    for r in records:
        host = r.host.partition(":")[0]
        if host in hosts:
            starts.setdefault(host, []).append(r.start_at)
    pauses = [
        b - a
        for times in starts.values()
        for a, b in itertools.pairwise(sorted(times))
        if b > at and a < at + within_s
    ]
    return round(max(pauses), 2) if pauses else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("mode", choices=("compare", "cluster"))
    parser.add_argument(
        "--scenario",
        "--web",
        dest="scenario",
        choices=("wide", "broad", "politeness"),
        default="wide",
        help="compare: the web (broad: compare_scrapy's broad web, its delay and concurrency)",
    )
    parser.add_argument(
        "--hosts",
        type=int,
        default=None,
        help="compare: the web's hosts [wide 2000, politeness 300]",
    )
    parser.add_argument("--seconds", type=float, default=30.0, help="compare: each crawl's time")
    parser.add_argument("--rounds", type=int, default=2, help="compare: alternated rounds")
    parser.add_argument("--fetchers", type=int, default=None, help="Redis fetcher processes")
    parser.add_argument("--concurrency", type=int, default=8, help="cluster: per fetcher")
    parser.add_argument("--pages-per-host", type=int, default=20, help="cluster: web size")
    parser.add_argument("--min-delay", type=float, default=0.25, help="cluster: --min-delay")
    parser.add_argument("--lease-ttl", type=float, default=30.0, help="cluster: lease_ttl_s")
    parser.add_argument("--kill-after", type=float, default=None, help="cluster: SIGKILL a master")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="compare: also run the Redis fetchers with PATH first on PYTHONPATH (labelled "
        "redis_NAME), e.g. a directory holding the package hiredis",
    )
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.fetchers is None:
        args.fetchers = 2 if args.mode == "compare" else 4
    workdir = args.workdir or HERE / "out" / f"redis_crawl-{uuid.uuid4().hex[:6]}"
    workdir.mkdir(parents=True, exist_ok=True)
    started_load = [round(x, 2) for x in os.getloadavg()]
    result = compare(args, workdir) if args.mode == "compare" else cluster_run(args, workdir)
    result = {
        "benchmark": f"redis_crawl {args.mode}",
        "command": "python benchmarks/redis_crawl.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "commit": commit(),
        "machine": machine(),
        "load_average_at_start": started_load,
    } | result
    if args.json:
        print(json.dumps(result))
    else:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""courtly against Scrapy on the same sandbox web, one after the other, audited by the server.

For every scenario and crawler a fresh sandbox web is served (a child process,
so its CPU is not the crawler's), the crawler runs as another child process for
the same time budget with the same User-Agent, and then:

* ``pages_per_s``: requests the sandbox answered (robots.txt excluded), divided
  by the crawler's active window (first request start to last request end);
* ``cpu_s_per_1000_pages``: the crawler process's user+system CPU (``wait4``
  rusage, startup included) per 1000 such pages;
* ``peak_rss_bytes``: the crawler's peak resident set, sampled every 0.1 s
  (``VmHWM`` of the crawler process plus the RSS of any children it has);
* ``coverage``: share of the pages a correct polite crawler can reach
  (:meth:`courtly.sandbox.SandboxTruth.expected_pages`) that were fetched with 200;
* ``violations``: every politeness violation the sandbox's request log shows
  (:func:`courtly.sandbox.audit`, with courtly's minimum delay and per-IP cap);
* ``bound_pages_per_s``: the politeness bound of the scenario over the same
  window: per host, requests start at most every ``fetch + max(min delay,
  Crawl-delay, delay factor x fetch)`` seconds, longer after a Retry-After, no
  more than the host has, and no address above its per-IP cap (see :func:`bound`).
  ``efficiency`` = requests made (robots.txt included) / requests the bound allows.

Scrapy runs in ``benchmarks/.scrapy-venv`` (made on first use with ``python -m
venv`` and pip) through ``benchmarks/scrapy_spider.py``.

    python benchmarks/compare_scrapy.py --scenario all --seconds 30 --json
    python benchmarks/compare_scrapy.py --quick              # ~1.5 minutes
    python benchmarks/compare_scrapy.py --scenario broad --profile   # py-spy CPU budget
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from courtly.sandbox import (
    RequestRecord,
    SandboxServer,
    SandboxSpec,
    SandboxTruth,
    SandboxWorld,
    audit,
    load_log,
)
from courtly.sandbox.urls import split_url

HERE = Path(__file__).resolve().parent
SCRAPY_VENV = HERE / ".scrapy-venv"
USER_AGENT = "courtly/0.1 (+https://courtly.invalid/bot; bench@courtly.invalid)"
TOKEN = "courtly"
DELAY_FACTOR = 2.0
CRAWLERS = ("courtly", "scrapy")


@dataclass(frozen=True, slots=True)
class Scenario:
    """One sandbox web and the politeness settings both crawlers get."""

    name: str
    spec: SandboxSpec
    min_delay_s: float
    per_ip: int
    concurrency: int
    timeout_s: float
    purpose: str
    courtly_processes: int = 1
    """courtly's ``processes``: the broad scenario uses both cores (Scrapy has no such
    setting; it stays one process)."""


def scenarios(quick: bool) -> dict[str, Scenario]:
    """The three scenarios (smaller webs with ``quick``)."""
    broad_hosts = 1000 if quick else 4000
    polite_hosts = 100 if quick else 300
    return {
        "broad": Scenario(
            "broad",
            # 40 pages a host: the 0.25 s delay cannot drain a host within the budget.
            dataclasses.replace(SandboxSpec.broad(broad_hosts), pages_per_host=40),
            min_delay_s=0.25,
            per_ip=2,
            concurrency=256,
            timeout_s=10.0,
            purpose="CPU efficiency: the politeness bound is far above either crawler",
            courtly_processes=2,
        ),
        "politeness": Scenario(
            "politeness",
            # More pages per host than a 1 s delay can drain within the budget.
            dataclasses.replace(SandboxSpec.politeness(polite_hosts), pages_per_host=60),
            min_delay_s=1.0,
            per_ip=2,
            concurrency=128,
            timeout_s=10.0,
            purpose="politeness-bound: 1 s delay, crawl delays, 429/503 windows, slow hosts",
        ),
        "hostile": Scenario(
            "hostile",
            SandboxSpec.hostile(),
            min_delay_s=0.25,
            per_ip=2,
            concurrency=16,
            timeout_s=10.0,
            purpose="every adversarial feature of the sandbox",
        ),
    }


# -- the sandbox, served by a child process -------------------------------------------------


async def _serve(spec: SandboxSpec, workdir: Path) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with SandboxServer(spec, workdir=workdir) as server:
        ready = workdir / "ready"
        (workdir / "ready.tmp").write_text(json.dumps(server.info()))
        (workdir / "ready.tmp").replace(ready)
        await stop.wait()


def serve_main(spec_file: Path, workdir: Path) -> int:
    """``--serve-spec FILE --dir DIR``: serve a spec (JSON) until SIGTERM."""
    import uvloop

    spec = SandboxSpec.from_json(spec_file.read_text())
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(_serve(spec, workdir))
    return 0


class Sandbox:
    """A fresh sandbox web in ``workdir``; :meth:`stop` flushes its log and ends it."""

    def __init__(self, spec: SandboxSpec, workdir: Path) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        spec_file = workdir / "spec.json"
        spec_file.write_text(spec.to_json())
        cmd = [sys.executable, str(Path(__file__).resolve()), "--serve-spec", str(spec_file)]
        self.proc = subprocess.Popen([*cmd, "--dir", str(workdir)], stdout=subprocess.DEVNULL)
        ready = workdir / "ready"
        deadline = time.monotonic() + 120
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise SystemExit(f"the sandbox web in {workdir} did not start")
            time.sleep(0.05)
        self.info: dict[str, Any] = json.loads(ready.read_text())
        self.world = SandboxWorld(spec, int(self.info["port"]))
        self.cpu_s = 0.0

    @property
    def seeds(self) -> list[str]:
        return Path(self.info["seeds_file"]).read_text().split()

    def stop(self) -> None:
        try:
            import psutil

            times = psutil.Process(self.proc.pid).cpu_times()
            self.cpu_s = times.user + times.system
        except Exception:  # pragma: no cover - informational only
            self.cpu_s = math.nan
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# -- running a crawler as a measured child ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProcessCost:
    """What a finished child cost: wall seconds, CPU seconds, peak RSS, exit status."""

    wall_s: float
    cpu_s: float
    peak_rss_bytes: int
    returncode: int


def run_measured(cmd: list[str], log_file: Path, env: dict[str, str] | None = None) -> ProcessCost:
    """Run ``cmd``; CPU from ``wait4`` (children it waited for included), peak RSS sampled."""
    import psutil

    started = time.monotonic()
    with log_file.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        peak = 0
        done = threading.Event()

        def sample() -> None:
            # ru_maxrss of a forked child starts at the parent's peak; VmHWM is per mm,
            # reset by exec, so it is the crawler's own high-water mark.
            nonlocal peak
            status_file = Path(f"/proc/{proc.pid}/status")
            try:
                root = psutil.Process(proc.pid)
                while not done.wait(0.1):
                    hwm = 0
                    for line in status_file.read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            hwm = int(line.split()[1]) * 1024
                    total = max(hwm, root.memory_info().rss)
                    for child in root.children(recursive=True):
                        total += child.memory_info().rss
                    peak = max(peak, total)
            except (psutil.Error, OSError, ValueError):
                return

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        done.set()
        sampler.join()
    return ProcessCost(
        wall_s=time.monotonic() - started,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_bytes=peak,
        returncode=proc.returncode,
    )


def courtly_command(
    scenario: Scenario,
    web: Sandbox,
    seconds: float,
    state: Path,
    overrides: dict[str, Any] | None = None,
) -> list[str]:
    """``courtly crawl`` with a TOML config written next to the state directory.

    ``overrides`` are extra config keys (``--courtly-set KEY=VALUE``), for experiments.
    """
    config = state.parent / f"{state.name}.toml"
    lines = {
        "state_dir": str(state),
        "user_agent": USER_AGENT,
        "seeds_file": web.info["seeds_file"],
        "hosts_file": web.info["hosts_file"],
        "allow_private_networks": True,
        "min_delay_s": scenario.min_delay_s,
        "delay_factor": DELAY_FACTOR,
        "per_ip": scenario.per_ip,
        "concurrency": scenario.concurrency,
        "max_time_s": seconds,
        "total_timeout_s": scenario.timeout_s,
        "connect_timeout_s": min(5.0, scenario.timeout_s),
        "max_body_bytes": 10 * 1024 * 1024,
        "progress_interval_s": 5.0,
        "scope": "domain",
        "processes": scenario.courtly_processes,
        **(overrides or {}),
    }
    config.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in lines.items()))
    return [sys.executable, "-m", "courtly", "crawl", "--config", str(config)]


def scrapy_command(scenario: Scenario, web: Sandbox, seconds: float, stats: Path) -> list[str]:
    return [
        str(SCRAPY_VENV / "bin" / "python"),
        str(HERE / "scrapy_spider.py"),
        "--seeds-file",
        str(web.info["seeds_file"]),
        "--hosts-file",
        str(web.info["hosts_file"]),
        "--user-agent",
        USER_AGENT,
        "--delay",
        str(scenario.min_delay_s),
        "--concurrency",
        str(scenario.concurrency),
        "--seconds",
        str(seconds),
        "--timeout",
        str(scenario.timeout_s),
        "--stats-out",
        str(stats),
    ]


def ensure_scrapy_venv() -> Path:
    """Create ``benchmarks/.scrapy-venv`` with Scrapy and psutil if it is missing."""
    python = SCRAPY_VENV / "bin" / "python"
    probe = [str(python), "-c", "import scrapy"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"creating {SCRAPY_VENV} (python -m venv; pip install scrapy)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(SCRAPY_VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "scrapy"]
    subprocess.run(pip, check=True)
    return python


# -- the politeness bound ---------------------------------------------------------------------


def bound(scenario: Scenario, truth: SandboxTruth, window_s: float) -> dict[str, float]:
    """Requests a perfectly polite crawler could start in ``window_s`` seconds.

    Per host: the first request (robots.txt) at the window's start, then one
    every ``cycle = fetch + max(min_delay, Crawl-delay, delay_factor x fetch)``
    (``fetch`` = the sandbox's ``slow_s`` on slow hosts, 0 elsewhere), plus on
    flaky hosts the extra wait a ``Retry-After`` forces once every
    ``flaky_every`` requests; never more than the host's reachable pages + 1
    (robots.txt); only robots.txt on hosts whose robots.txt is unreachable or
    that are dead. Per address: at most ``per_ip`` requests in flight, i.e.
    ``sum(requests x fetch) <= per_ip x window``. Returns the bound in
    requests/s and in pages/s (robots.txt excluded).
    """
    spec = truth.world.spec
    expected = truth.expected_pages(TOKEN, scope="domain")
    pages_on: Counter[str] = Counter(split_url(url)[0] for url in expected)
    per_ip: dict[str, list[tuple[float, float]]] = defaultdict(list)  # ip -> (requests, fetch_s)
    for profile in truth.world.hosts:
        if profile.dead or truth.robots_unavailable(profile.name):
            per_ip[profile.ip].append((1.0, 0.0))
            continue
        fetch_s = spec.slow_s if profile.slow else 0.0
        gap_s = max(
            scenario.min_delay_s, truth.crawl_delay_s(profile.name, TOKEN), DELAY_FACTOR * fetch_s
        )
        retry_s = float(spec.retry_after_s) if profile.flaky else 0.0
        every = spec.flaky_every if profile.flaky else 0
        limit = pages_on[profile.name] + 1
        requests = _host_requests(window_s, fetch_s, gap_s, retry_s, every, limit)
        per_ip[profile.ip].append((float(requests), fetch_s))
    total = robots = 0.0
    for hosts in per_ip.values():
        busy_s = sum(n * fetch_s for n, fetch_s in hosts)
        scale = min(1.0, scenario.per_ip * window_s / busy_s) if busy_s > 0 else 1.0
        total += sum(n for n, _ in hosts) * scale
        robots += len(hosts)
    return {
        "bound_requests": total,
        "bound_requests_per_s": total / window_s,
        "bound_pages_per_s": (total - robots) / window_s,
    }


def _host_requests(
    window_s: float, fetch_s: float, gap_s: float, retry_s: float, every: int, limit: int
) -> int:
    """Request starts one host allows in ``window_s``: robots.txt at 0, then one per gap.

    Every ``every``-th request after robots.txt (0 = never) answers 429/503 and the
    gap after it is ``max(gap_s, retry_s)``. At most ``limit`` requests.
    """
    at, count, gap = 0.0, 1, gap_s
    while count < limit:
        at += fetch_s + gap
        if at > window_s:
            break
        count += 1
        gap = max(gap_s, retry_s) if every and (count - 1) % every == 0 else gap_s
    return count


# -- one run ----------------------------------------------------------------------------------


def measure(
    scenario: Scenario,
    crawler: str,
    seconds: float,
    workdir: Path,
    profile: bool = False,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Serve a fresh sandbox, run ``crawler`` against it, audit the log; the figures."""
    run_dir = workdir / f"{scenario.name}-{crawler}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    web = Sandbox(scenario.spec, run_dir / "web")
    extra: dict[str, Any] = {}
    try:
        if crawler == "courtly":
            cmd = courtly_command(scenario, web, seconds, run_dir / "state", overrides)
            if profile:
                flame = run_dir / "profile.txt"
                spy = Path(sys.executable).parent / "py-spy"
                cmd = [str(spy), "record", "-r", "250", "-f", "raw", "-o", str(flame), "--", *cmd]
                extra["profile_file"] = str(flame)
        else:
            cmd = scrapy_command(scenario, web, seconds, run_dir / "scrapy-stats.json")
        cost = run_measured(cmd, run_dir / f"{crawler}.log")
    finally:
        web.stop()
    records = load_log(Path(web.info["log_path"]))
    return summarise(scenario, web, records, cost, seconds) | extra


def summarise(
    scenario: Scenario,
    web: Sandbox,
    records: list[RequestRecord],
    cost: ProcessCost,
    seconds: float,
) -> dict[str, Any]:
    truth = SandboxTruth(web.world)
    report = audit(
        records,
        spec_or_truth=truth,
        min_delay_s=scenario.min_delay_s,
        per_ip_cap=scenario.per_ip,
        user_agent_token=TOKEN,
        only_user_agent=USER_AGENT,
        seeds=web.seeds,
    )
    mine = [r for r in records if r.ua == USER_AGENT]
    pages = sum(1 for r in mine if not truth.is_robots_path(r.host, r.path))
    if mine:
        first = min(r.start_at for r in mine)
        window_s = max(1e-3, max(r.end_at for r in mine) - first)
    else:
        window_s = seconds
    limit = bound(scenario, truth, window_s)
    statuses = Counter(r.status for r in mine)
    return {
        "pages_per_s": round(pages / window_s, 1),
        "cpu_s_per_1000_pages": round(1000 * cost.cpu_s / pages, 3) if pages else None,
        "peak_rss_bytes": cost.peak_rss_bytes,
        "coverage": round(report.coverage, 4),
        "violations": report.violations,
        "violations_by_kind": {
            "host_overlap": report.host_overlaps,
            "ip_over_cap": report.ip_over_cap,
            "gap": report.gap_violations,
            "retry_after": report.retry_after_violations,
            "disallowed": report.disallowed_fetches,
            "robots_unavailable": report.robots_unavailable_fetches,
            "duplicate": report.duplicate_fetches,
        },
        "efficiency": round(len(mine) / limit["bound_requests"], 4),
        "bound_pages_per_s": round(limit["bound_pages_per_s"], 1),
        "bound_requests_per_s": round(limit["bound_requests_per_s"], 1),
        "pages": pages,
        "requests": len(mine),
        "requests_per_s": round(len(mine) / window_s, 1),
        "window_s": round(window_s, 2),
        "wall_s": round(cost.wall_s, 2),
        "cpu_s": round(cost.cpu_s, 2),
        "cpu_share": round(cost.cpu_s / cost.wall_s, 3) if cost.wall_s else None,
        "expected_pages": report.expected_pages,
        "expected_fetched": report.expected_fetched,
        "max_in_flight_per_host": report.max_in_flight_per_host,
        "max_in_flight_per_ip": report.max_in_flight_per_ip,
        "nofollow_fetches": report.nofollow_fetches,
        "trap_fetches": report.trap_fetches,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "sandbox_cpu_s": round(web.cpu_s, 2),
        "returncode": cost.returncode,
        "examples": [dataclasses.asdict(f) for f in report.examples[:8]],
    }


def run_scenario(
    scenario: Scenario,
    seconds: float,
    workdir: Path,
    crawlers: tuple[str, ...],
    profile: bool,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Both crawlers, one after the other, each against its own fresh sandbox."""
    out: dict[str, Any] = {
        "purpose": scenario.purpose,
        "hosts": scenario.spec.n_hosts,
        "ips": len(SandboxWorld(scenario.spec, 1).layout.live_ips),
        "min_delay_s": scenario.min_delay_s,
        "per_ip": scenario.per_ip,
        "concurrency": scenario.concurrency,
        "courtly_processes": scenario.courtly_processes,
        "seconds": seconds,
    }
    for crawler in crawlers:
        print(f"[{scenario.name}] {crawler}: {seconds:.0f} s ...", file=sys.stderr, flush=True)
        out[crawler] = measure(
            scenario, crawler, seconds, workdir, profile and crawler == "courtly", overrides
        )
        figures = out[crawler]
        print(
            f"[{scenario.name}] {crawler}: {figures['pages_per_s']} pages/s, "
            f"{figures['cpu_s_per_1000_pages']} CPU s/1000 pages, coverage "
            f"{figures['coverage']:.1%}, violations {figures['violations']} "
            f"{figures['violations_by_kind']}",
            file=sys.stderr,
            flush=True,
        )
    if "courtly" in out:
        out["bound_pages_per_s"] = out["courtly"]["bound_pages_per_s"]
        out["efficiency"] = out["courtly"]["efficiency"]
    if "courtly" in out and "scrapy" in out and out["scrapy"]["pages_per_s"]:
        out["speedup_vs_scrapy"] = round(
            out["courtly"]["pages_per_s"] / out["scrapy"]["pages_per_s"], 2
        )
    return out


def targets(results: dict[str, Any]) -> dict[str, bool | None]:
    """The issue's targets, each met or not (None when the scenario did not run)."""
    scen = results["scenarios"]

    def get(name: str, *path: str) -> Any:
        value: Any = scen.get(name)
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    zero = [
        get(name, "courtly", "violations") == 0 for name in scen if get(name, "courtly") is not None
    ]
    broad_rate = get("broad", "courtly", "pages_per_s")
    speedup = get("broad", "speedup_vs_scrapy")
    efficiency = get("politeness", "efficiency")
    return {
        "zero_violations": all(zero) if zero else None,
        "politeness_efficiency_ge_97pct": None if efficiency is None else efficiency >= 0.97,
        "broad_ge_10x_scrapy": None if speedup is None else speedup >= 10,
        "broad_ge_1800_pages_per_s": None if broad_rate is None else broad_rate >= 1800,
    }


# -- profile breakdown --------------------------------------------------------------------------

#: (category, markers): the innermost frame matching a marker decides a sample's category;
#: frames of general-purpose libraries (yarl, asyncio, contextlib, dataclass __init__) are
#: skipped so that their cost lands on the courtly code that called them.
PROFILE_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("archive (WARC + gzip)", ("archive/warc.py",)),
    ("parse (HTML links, sitemaps)", ("parse/links.py", "parse/sitemaps.py", "selectolax")),
    ("canonicalise + scope + traps", ("courtly/url/", "Frontier.queued_url")),
    ("robots.txt", ("courtly/robots/",)),
    ("store: catalogue", ("SqliteStore.record", "SqliteStore._record", "_catalogue_row")),
    ("frontier + SQLite store", ("courtly/frontier/", "courtly/store/")),
    ("fetch (aiohttp, DNS, sockets)", ("courtly/fetch/", "aiohttp/", "aiohappyeyeballs/")),
    ("crawl loop (workers, leases, idle waits)", ("courtly/crawl.py",)),
)


def _category(frames: list[str]) -> str:
    for frame in reversed(frames):
        for category, marks in PROFILE_CATEGORIES:
            if any(m in frame for m in marks):
                return category
    return "event loop + startup"


def profile_breakdown(raw_file: Path, cpu_s: float, pages: int) -> dict[str, Any]:
    """Shares of py-spy samples per category, and microseconds of CPU per page.

    ``raw_file`` is ``py-spy record -f raw`` output (idle samples excluded);
    ``cpu_s`` the process's CPU seconds and ``pages`` the pages it fetched.
    """
    counts: Counter[str] = Counter()
    total = 0
    for line in raw_file.read_text().splitlines():
        stack, _, n_text = line.rpartition(" ")
        if stack and n_text.isdigit():
            counts[_category(stack.split(";"))] += int(n_text)
            total += int(n_text)
    us_per_page = 1e6 * cpu_s / pages if pages else 0.0
    return {
        "samples": total,
        "cpu_us_per_page": round(us_per_page, 1),
        "share": {k: round(v / total, 4) for k, v in counts.most_common()} if total else {},
        "us_per_page": {k: round(us_per_page * v / total, 1) for k, v in counts.most_common()}
        if total
        else {},
    }


# -- command line -------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenario", choices=("broad", "politeness", "hostile", "all"))
    parser.add_argument("--seconds", type=float, help="time budget per run [30; 10 with --quick]")
    parser.add_argument("--quick", action="store_true", help="smaller webs, 10 s runs")
    parser.add_argument("--crawlers", default=",".join(CRAWLERS), help="courtly,scrapy")
    parser.add_argument("--workdir", type=Path, default=HERE / "out" / "compare")
    parser.add_argument("--profile", action="store_true", help="py-spy the courtly runs")
    parser.add_argument(
        "--courtly-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra courtly config (TOML value), e.g. warc_gzip_level=1; repeatable",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--serve-spec", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_spec is not None:
        return serve_main(args.serve_spec, args.dir)
    seconds = args.seconds or (10.0 if args.quick else 30.0)
    crawlers = tuple(c for c in args.crawlers.split(",") if c)
    if "scrapy" in crawlers:
        ensure_scrapy_venv()
    overrides = {
        key.strip(): tomllib.loads(f"v = {value}")["v"]
        for key, _, value in (item.partition("=") for item in args.courtly_set)
    }
    chosen = scenarios(args.quick)
    names = list(chosen) if args.scenario in (None, "all") else [args.scenario]
    results: dict[str, Any] = {
        "benchmark": "compare_scrapy",
        "machine": machine(),
        "seconds": seconds,
        "quick": args.quick,
        "user_agent": USER_AGENT,
        "courtly_overrides": overrides,
        "scenarios": {},
    }
    for name in names:
        result = run_scenario(
            chosen[name], seconds, args.workdir, crawlers, args.profile, overrides
        )
        courtly = result.get("courtly", {})
        if args.profile and "profile_file" in courtly:
            result["courtly_profile"] = profile_breakdown(
                Path(courtly["profile_file"]), float(courtly["cpu_s"]), int(courtly["pages"])
            )
        results["scenarios"][name] = result
    results["targets"] = targets(results)
    if args.json:
        print(json.dumps(results))
    else:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""courtly against Scrapy and the machine's ceiling on the same sandbox webs, audited.

For every scenario and crawler a fresh sandbox web is served (a child process,
so its CPU is not the crawler's), the crawler runs as another child process for
the same time budget with the same User-Agent, and then:

* ``pages_per_s``: requests the sandbox answered (robots.txt excluded), divided
  by the crawler's active window (first request start to last request end);
* ``cpu_s_per_1000_pages`` (= ``cpu_ms_per_page``): the crawler process's
  user+system CPU (``wait4`` rusage, its children and startup included) per
  1000 such pages (per page, in ms);
* ``share_of_ceiling``: ``pages_per_s`` over the bare fetch loop's on the same
  web in the same run (``benchmarks/bare_loop.py``: aiohttp + uvloop in two
  processes fetching the web's known pages, no politeness, parsing or storage);
* ``peak_rss_bytes``: the crawler's peak resident set, sampled every 0.1 s
  (``VmHWM`` of the crawler process plus the RSS of any children it has);
* ``order_score``: the crawl-order score (:mod:`courtly.sandbox.order`): 1 when the
  most linked pages were fetched first;
* ``tracking_duplicates``: fetches of a URL differing only by tracking parameters from
  one fetched before (``tracking_duplicate_share``: over the pages fetched);
* ``coverage``: share of the pages a correct polite crawler can reach
  (:meth:`courtly.sandbox.SandboxTruth.expected_pages`) that were fetched with 200;
* ``violations``: every politeness violation the sandbox's request log shows
  (:func:`courtly.sandbox.audit`, with courtly's minimum delay and per-IP cap);
* ``bound_pages_per_s``: the politeness bound of the scenario over the same
  window: per host, requests start at most every ``fetch + max(min delay,
  Crawl-delay, delay factor x fetch)`` seconds, longer after a Retry-After, no
  more than the host has, and no address above its per-IP cap (see :func:`bound`).
  ``efficiency`` = ``pages_per_s`` / ``bound_pages_per_s``;
  ``requests_efficiency`` = requests made (robots.txt included) / requests the
  bound allows; ``efficiency_phase_mean`` and ``requests_efficiency_phase_mean``:
  the same averaged over where the window ends, over the last ``phase_span_s``
  seconds (the longest cycle of a host in the bound), which takes out the phase of the
  hosts' schedules at the window's end (see :func:`phase_mean`);
* ``lateness_ms``: how late each request after a host's first started, against the
  end of the host's previous response plus the gap the rule required
  (:func:`courtly.sandbox.lateness`): ``n``, ``p50``, ``p90``, ``p95``, ``p99``, ``mean``.
  ``benchmarks/lateness.py`` splits it into its causes;
* ``fetchers_idle_while_ready_s`` (courtly only): courtly's own measure, from its own
  timestamps, of fetchers idle while a host was due, summed over its processes
  (fetcher-seconds; see :func:`dispatch_figures` and
  :class:`courtly.crawl.dispatch.ReadyWaits`), with
  ``fetchers_idle_while_ready_ms_per_request``, ``fetchers_idle_while_ready_share``
  (requests that waited more than 1 ms so), ``fetchers_idle_while_ready_max_s``,
  ``fetchers_idle_while_ready_leased_ms_per_request`` (the part after the lease) and
  ``dispatch_requests_measured``. The server's log cannot tell it: it does not know
  when the crawler had a free fetcher.

courtly runs with its defaults: the only flags are those a user must give to
crawl the sandbox (:func:`courtly_flags`); a run labelled ``courtly_tuned`` adds
the scenario's tuning flags. Scrapy runs in ``benchmarks/.scrapy-venv`` (made on
first use with ``python -m venv`` and pip) through ``benchmarks/scrapy_spider.py``.

    python benchmarks/compare_scrapy.py --json                  # every scenario, ~17 minutes
    python benchmarks/compare_scrapy.py --quick                 # smaller webs, ~6 minutes
    python benchmarks/compare_scrapy.py --scenario wide,broad --crawlers bare,courtly
    python benchmarks/compare_scrapy.py --scenario broad --profile   # py-spy CPU budget
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import dataclasses
import gzip
import hashlib
import itertools
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from courtly.sandbox import (
    AuditReport,
    RequestRecord,
    SandboxServer,
    SandboxSpec,
    SandboxTruth,
    SandboxWorld,
    Scope,
    audit,
    lateness,
    lateness_summary,
    load_log,
)
from courtly.sandbox.order import in_degrees, order_score
from courtly.sandbox.urls import host_url, split_url

HERE = Path(__file__).resolve().parent
SCRAPY_VENV = HERE / ".scrapy-venv"
TRUTH_CACHE = HERE / "out" / "truth"
USER_AGENT = "courtly/0.1 (+https://courtly.invalid/bot; bench@courtly.invalid)"
TOKEN = "courtly"
#: courtly's defaults that the audit and the bound assume (``delay_factor``, ``per_ip``).
DELAY_FACTOR = 2.0
COURTLY_PER_IP = 2
#: ``bare`` is the machine's ceiling (benchmarks/bare_loop.py); it runs first. ``floor`` is
#: the bare loop doing the least work an archiving crawler does for a page
#: (benchmarks/page_work.py), on the throughput webs only (:data:`FLOOR_SCENARIOS`).
CRAWLERS = ("bare", "floor", "courtly", "courtly_tuned", "scrapy")
FLOOR_SCENARIOS = frozenset({"wide", "broad"})


@dataclass(frozen=True, slots=True)
class Scenario:
    """One sandbox web, its time budget and the politeness settings every crawler gets.

    ``per_ip`` is the per-address cap the audit and the bound use (courtly's
    default); ``concurrency`` and ``timeout_s`` are Scrapy's ``CONCURRENT_REQUESTS``
    and ``DOWNLOAD_TIMEOUT`` (courtly keeps its defaults). ``tuned`` are the extra
    courtly flags of the run labelled ``courtly_tuned`` (none: no such run).
    """

    name: str
    spec: SandboxSpec
    purpose: str
    min_delay_s: float = 0.25
    per_ip: int = COURTLY_PER_IP
    concurrency: int = 256
    timeout_s: float = 10.0
    seconds: float = 60.0
    scope: Scope = "any"
    tuned: tuple[str, ...] = ()


def scenarios(quick: bool) -> dict[str, Scenario]:
    """The four scenarios (smaller webs and shorter budgets with ``quick``)."""
    wide_hosts = 2000 if quick else 8000
    broad_hosts = 500 if quick else 2000
    polite_hosts = 100 if quick else 300
    long_s, short_s = (20.0, 15.0) if quick else (60.0, 30.0)
    return {
        "wide": Scenario(
            "wide",
            SandboxSpec.wide(wide_hosts),
            purpose="a web shaped like the real one: 8,000 hosts, Zipf sizes, the failure mix",
            seconds=long_s,
            tuned=("--concurrency", "128", "--back-queues", "4000"),
        ),
        "broad": Scenario(
            "broad",
            # 250 pages a host (about 480,000 reachable pages): neither the bare loop
            # (about 5,000 pages/s on 2 quiet cores) nor a crawler running out of hosts
            # (the 0.25 s delay allows 240 requests a host a minute) runs dry in the budget.
            dataclasses.replace(SandboxSpec.broad(broad_hosts), pages_per_host=250),
            purpose="2,000 hosts, eight to an address, the failure mix",
            seconds=long_s,
        ),
        "politeness": Scenario(
            "politeness",
            # More pages per host than a 1 s delay can drain within the budget.
            dataclasses.replace(SandboxSpec.politeness(polite_hosts), pages_per_host=60),
            min_delay_s=1.0,
            concurrency=128,
            purpose="politeness-bound: 1 s delay, crawl delays, 429/503 windows, slow hosts",
            seconds=short_s,
        ),
        "hostile": Scenario(
            "hostile",
            SandboxSpec.hostile(),
            concurrency=16,
            purpose="every adversarial feature of the sandbox",
            seconds=short_s,
        ),
    }


# -- ground truth, computed once per web -------------------------------------------------------


#: The sandbox modules the ground truth depends on besides the spec's values (not the
#: server, its log or the audit).
GENERATOR_MODULES = (
    "html.py",
    "layout.py",
    "resources.py",
    "robots_model.py",
    "truth.py",
    "urls.py",
    "world.py",
)


def _generator_fingerprint() -> str:
    """A hash of the code that generates the web: a cached truth is stale once it changes."""
    import courtly.sandbox

    digest = hashlib.sha256()
    for name in GENERATOR_MODULES:
        digest.update((Path(courtly.sandbox.__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


_GENERATOR = _generator_fingerprint()


class CachedTruth(SandboxTruth):
    """:class:`SandboxTruth` whose ``expected_pages`` is computed once per web and argument set.

    The answer is kept in memory and on disk (``benchmarks/out/truth/``, keyed by
    the sandbox's source, the spec without its port, the arguments and the seeds'
    hosts), as host and path pairs so that a later run on another port reuses it.
    """

    def __init__(self, world: SandboxWorld, cache_dir: Path = TRUTH_CACHE) -> None:
        super().__init__(world)
        self._cache_dir = cache_dir
        self._memo: dict[str, frozenset[str]] = {}

    def expected_pages(
        self,
        token: str,
        *,
        scope: Scope = "domain",
        seeds: Iterable[str] | None = None,
        follow_sitemaps: bool = False,
        max_redirects: int = 5,
    ) -> frozenset[str]:
        seed_list = sorted(seeds) if seeds is not None else None
        spec = json.loads(self.world.spec.to_json())
        spec.pop("port", None)
        seed_hosts = None if seed_list is None else sorted({split_url(u)[0] for u in seed_list})
        key_text = json.dumps(
            [_GENERATOR, spec, token, scope, seed_hosts, follow_sitemaps, max_redirects]
        )
        key = hashlib.sha256(key_text.encode()).hexdigest()[:24]
        if key in self._memo:
            return self._memo[key]
        path = self._cache_dir / f"{key}.json.gz"
        if path.exists():
            pairs = json.loads(gzip.decompress(path.read_bytes()))
            found = frozenset(host_url(h, self.world.port, p) for h, p in pairs)
        else:
            found = super().expected_pages(
                token,
                scope=scope,
                seeds=seed_list,
                follow_sitemaps=follow_sitemaps,
                max_redirects=max_redirects,
            )
            pairs = sorted((host, p) for host, _, p in map(split_url, found))
            self._cache_dir.mkdir(parents=True, exist_ok=True)
            path.write_bytes(gzip.compress(json.dumps(pairs).encode(), 3))
        self._memo[key] = found
        return found


def free_port() -> int:
    """A TCP port free on loopback now (the scenario's webs are all served on it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.2", 0))
        port: int = sock.getsockname()[1]
        return port


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

    def __init__(self, spec: SandboxSpec, workdir: Path, world: SandboxWorld | None = None) -> None:
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
        port = int(self.info["port"])
        self.world = world if world is not None and world.port == port else SandboxWorld(spec, port)
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
    """What a finished child cost: wall seconds, CPU seconds, peak RSS, exit status, and
    whether it was killed for outliving its time limit."""

    wall_s: float
    cpu_s: float
    peak_rss_bytes: int
    returncode: int
    timed_out: bool = False


def run_measured(
    cmd: list[str],
    log_file: Path,
    env: dict[str, str] | None = None,
    *,
    timeout_s: float | None = None,
    dump_signal: int | None = None,
) -> ProcessCost:
    """Run ``cmd``; CPU from ``wait4`` (children it waited for included), peak RSS sampled.

    A child still running ``timeout_s`` after its start is sent ``dump_signal`` (if any:
    e.g. the spider's SIGUSR1, which prints its tasks' stacks to its log), then killed
    2 s later; ``timed_out`` says so."""
    import psutil

    started = time.monotonic()
    with log_file.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        peak = 0
        done = threading.Event()
        overran = threading.Event()

        def watchdog() -> None:
            assert timeout_s is not None
            if done.wait(timeout_s):
                return
            overran.set()
            if dump_signal is not None:
                with contextlib.suppress(OSError):
                    proc.send_signal(dump_signal)
                if done.wait(2.0):
                    return
            with contextlib.suppress(OSError):
                proc.kill()

        if timeout_s is not None:
            threading.Thread(target=watchdog, daemon=True).start()

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
        timed_out=overran.is_set(),
    )


def courtly_flags(scenario: Scenario, hosts_file: str, seconds: float) -> list[str]:
    """The flags a user must give courtly to crawl the sandbox; everything else is default."""
    return [
        "--min-delay",
        f"{scenario.min_delay_s:g}",
        "--scope",
        scenario.scope,
        "--hosts-file",
        hosts_file,
        "--allow-private-networks",
        "--max-time",
        f"{seconds:g}",
    ]


def courtly_command(
    scenario: Scenario,
    web: Sandbox,
    seconds: float,
    state: Path,
    overrides: dict[str, Any] | None = None,
    tuned: bool = False,
) -> list[str]:
    """``courtly crawl`` with its defaults: seeds, state, User-Agent and :func:`courtly_flags`.

    ``tuned`` adds the scenario's tuning flags. ``overrides`` are extra config keys
    (``--courtly-set KEY=VALUE``, for experiments), written to a TOML config next to
    the state directory.
    """
    cmd = [sys.executable, "-m", "courtly", "crawl", "--seeds-file", web.info["seeds_file"]]
    cmd += ["--state", str(state), "--user-agent", USER_AGENT]
    cmd += courtly_flags(scenario, web.info["hosts_file"], seconds)
    if tuned:
        cmd += list(scenario.tuned)
    if overrides:
        config = state.parent / f"{state.name}.toml"
        config.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in overrides.items()))
        cmd += ["--config", str(config)]
    return cmd


def bare_command(
    web: Sandbox, urls_file: Path, seconds: float, work: Path | None = None
) -> list[str]:
    """The bare fetch loop over ``urls_file`` (the machine's ceiling); with ``work``, doing
    a page's least work in that directory (the floor)."""
    script = str(HERE / "bare_loop.py")
    cmd = [sys.executable, script, "--urls", str(urls_file), "--hosts-file"]
    cmd += [web.info["hosts_file"], "--user-agent", USER_AGENT, "--seconds", f"{seconds:g}"]
    if work is not None:
        cmd += ["--work", str(work)]
    return [*cmd, "--json"]


def known_pages(truth: SandboxTruth, scenario: Scenario, seeds: list[str]) -> list[str]:
    """The pages a polite crawler can reach from ``seeds``, in a seeded random order."""
    expected = truth.expected_pages(TOKEN, scope=scenario.scope, seeds=seeds)
    urls = sorted(expected)
    random.Random(f"{scenario.spec.seed}|bare").shuffle(urls)
    return urls


def scrapy_spider_args(scenario: Scenario, web: Sandbox, seconds: float, stats: Path) -> list[str]:
    """``scrapy_spider.py`` and the arguments every run of it takes (after the interpreter)."""
    return [
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


def scrapy_command(scenario: Scenario, web: Sandbox, seconds: float, stats: Path) -> list[str]:
    return [
        str(SCRAPY_VENV / "bin" / "python"),
        *scrapy_spider_args(scenario, web, seconds, stats),
        "--scope",
        scenario.scope,
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


def bound(
    scenario: Scenario, truth: SandboxTruth, window_s: float, seeds: list[str] | None = None
) -> dict[str, float]:
    """Requests a perfectly polite crawler could start in ``window_s`` seconds.

    Per host: the first request (robots.txt) at the window's start, then one
    every ``cycle = fetch + max(min_delay, Crawl-delay, delay_factor x fetch)``
    (``fetch`` = the host's latency on slow hosts, 0 elsewhere), plus on flaky
    hosts the extra wait a ``Retry-After`` forces after each overloaded answer
    (the last ``flaky_window`` of every ``flaky_every`` requests, which deliver
    no page); never more pages than the host has that are reachable from
    ``seeds`` (:meth:`SandboxTruth.expected_pages` in the scenario's scope); only
    robots.txt on hosts whose robots.txt is unreachable or that are dead. Every
    host starts at the window's start, discovered or not, which makes the bound
    optimistic. Per address: at most ``per_ip`` requests in flight, i.e.
    ``sum(requests x fetch) <= per_ip x window``. Returns the bound in
    requests/s and in pages/s (robots.txt excluded).
    """
    return _bound_until(_bound_plan(scenario, truth, window_s, seeds), scenario, window_s)


BoundPlan = dict[str, list[tuple[list[float], float]]]
"""Per address, each host's request starts in the bound (robots.txt at 0) and its fetch
time: what :func:`bound` counts up to the end of a window."""


def _bound_plan(
    scenario: Scenario, truth: SandboxTruth, window_s: float, seeds: list[str] | None
) -> BoundPlan:
    spec, world = truth.world.spec, truth.world
    expected = truth.expected_pages(TOKEN, scope=scenario.scope, seeds=seeds)
    pages_on: Counter[str] = Counter(split_url(url)[0] for url in expected)
    per_ip: BoundPlan = defaultdict(list)
    for profile in world.hosts:
        if profile.dead or truth.robots_unavailable(profile.name):
            per_ip[profile.ip].append(([0.0], 0.0))
            continue
        fetch_s = world.latency_s(profile)
        gap_s = max(
            scenario.min_delay_s, truth.crawl_delay_s(profile.name, TOKEN), DELAY_FACTOR * fetch_s
        )
        retry_s = float(spec.retry_after_s) if profile.flaky else 0.0
        every = spec.flaky_every if profile.flaky else 0
        starts = _host_starts(
            window_s, fetch_s, gap_s, retry_s, every, spec.flaky_window, pages_on[profile.name]
        )
        per_ip[profile.ip].append((starts, fetch_s))
    return per_ip


def _bound_until(plan: BoundPlan, scenario: Scenario, end_s: float) -> dict[str, float]:
    """:func:`bound` for a window that ends ``end_s`` after its start (at most the
    window ``plan`` was made for)."""
    total = robots = 0.0
    for hosts in plan.values():
        counts = [(float(bisect.bisect_right(starts, end_s)), fetch_s) for starts, fetch_s in hosts]
        busy_s = sum(n * fetch_s for n, fetch_s in counts)
        scale = min(1.0, scenario.per_ip * end_s / busy_s) if busy_s > 0 else 1.0
        total += sum(n for n, _ in counts) * scale
        robots += len(hosts)
    return {
        "bound_requests": total,
        "bound_requests_per_s": total / end_s,
        "bound_pages_per_s": (total - robots) / end_s,
    }


def _host_starts(
    window_s: float,
    fetch_s: float,
    gap_s: float,
    retry_s: float,
    every: int,
    window: int,
    pages: int,
) -> list[float]:
    """Request starts one host allows in ``window_s``: robots.txt at 0, then one per gap.

    Of every ``every`` requests after robots.txt (0 = none), the last ``window``
    are answered 429/503: they deliver no page and the gap after them is
    ``max(gap_s, retry_s)``. Stops once ``pages`` pages have been delivered.
    """
    at, starts, delivered, gap = 0.0, [0.0], 0, gap_s
    while delivered < pages:
        at += fetch_s + gap
        if at > window_s:
            break
        starts.append(at)
        position = (len(starts) - 2) % every + 1 if every else 0
        overloaded = every > 0 and position > every - window
        delivered += not overloaded
        gap = max(gap_s, retry_s) if overloaded else gap_s
    return starts


PHASE_ENDS = 100
"""Window ends :func:`phase_mean` averages over."""


def phase_mean(
    scenario: Scenario,
    truth: SandboxTruth,
    records: list[RequestRecord],
    window_s: float,
    seeds: list[str] | None,
    plan: BoundPlan | None = None,
) -> dict[str, float] | None:
    """``efficiency`` and ``requests_efficiency`` averaged over where the window ends.

    The bound starts every host at the window's start and counts a request at each
    whole cycle, so with a window a hair over a whole number of cycles (a 30 s run at a
    1 s delay, the window running on to the last response's end) it counts one more
    request on every host, which no crawler gets: its requests start a few ms after
    each allowed time (the response's own time, which the bound takes as 0 on all
    but slow hosts, and a turn of the event loop), so its last one falls after the
    window. A hair under, it counts none. The single-window figure thus moves by up to
    one request a host with where the run happens to stop. Averaged over window ends
    spread evenly over the last longest cycle (``PHASE_ENDS`` of them; the crawler's
    requests and pages counted up to each end, the bound computed for it), each host's
    lost share is what its lateness costs on average: the figure with the phase taken
    out. ``None`` without requests. ``plan``: the bound's plan for ``window_s`` if the
    caller has made it (else made here from ``seeds``).
    """
    if not records:
        return None
    first = min(r.start_at for r in records)
    made = sorted((r.start_at - first, truth.is_robots_path(r.host, r.path)) for r in records)
    times = [at for at, _ in made]
    pages_before = list(itertools.accumulate((not robots for _, robots in made), initial=0))
    if plan is None:
        plan = _bound_plan(scenario, truth, window_s, seeds)
    cycles = [
        starts[-1] / (len(starts) - 1)
        for hosts in plan.values()
        for starts, _ in hosts
        if len(starts) > 2
    ]
    span_s = min(max(cycles, default=0.0), window_s / 2)
    efficiency = requests = 0.0
    for step in range(PHASE_ENDS):
        end_s = window_s - span_s * step / PHASE_ENDS
        limit = _bound_until(plan, scenario, end_s)
        made_n = bisect.bisect_right(times, end_s)
        efficiency += pages_before[made_n] / end_s / limit["bound_pages_per_s"]
        requests += made_n / limit["bound_requests"]
    return {
        "efficiency_phase_mean": round(efficiency / PHASE_ENDS, 4),
        "requests_efficiency_phase_mean": round(requests / PHASE_ENDS, 4),
        "phase_span_s": round(span_s, 3),
    }


# -- one run ----------------------------------------------------------------------------------


def measure(
    scenario: Scenario,
    crawler: str,
    seconds: float,
    workdir: Path,
    truth: CachedTruth,
    profile: bool = False,
    overrides: dict[str, Any] | None = None,
    courtly_src: Path | None = None,
) -> dict[str, Any]:
    """Serve a fresh sandbox, run ``crawler`` against it, audit the log; the figures.

    ``crawler`` is ``bare`` (the ceiling), ``floor`` (the bare loop doing a page's
    least work), ``courtly`` (defaults), ``courtly_tuned`` or ``scrapy``. ``truth`` is
    the scenario's web on its fixed port.
    """
    run_dir = workdir / f"{scenario.name}-{crawler}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    web = Sandbox(scenario.spec, run_dir / "web", truth.world)
    extra: dict[str, Any] = {}
    try:
        if crawler in ("bare", "floor"):
            urls_file = run_dir / "urls.txt"
            urls = known_pages(truth, scenario, web.seeds)
            urls_file.write_text("\n".join(urls) + "\n", encoding="utf-8")
            work = run_dir / "work" if crawler == "floor" else None
            cmd = bare_command(web, urls_file, seconds, work)
            extra["known_pages"] = len(urls)
        elif crawler.startswith("courtly"):
            tuned = crawler == "courtly_tuned"
            state = run_dir / "state"
            cmd = courtly = courtly_command(scenario, web, seconds, state, overrides, tuned)
            shown = courtly_flags(scenario, "F", seconds) + (list(scenario.tuned) if tuned else [])
            extra["flags"] = " ".join(shown)
            if profile:
                flame = run_dir / "profile.txt"
                spy = Path(sys.executable).parent / "py-spy"
                # -s: the partition processes (--processes defaults to the cores) are sampled too
                cmd = [str(spy), "record", "-r", "250", "-f", "raw", "-s", "-o", str(flame)]
                cmd += ["--", *courtly]
                extra["profile_file"] = str(flame)
        else:
            cmd = scrapy_command(scenario, web, seconds, run_dir / "scrapy-stats.json")
        env = None
        if crawler.startswith("courtly") and courtly_src is not None:
            # another version of courtly for the crawler only (the sandbox stays this one)
            env = os.environ | {"PYTHONPATH": str(courtly_src)}
            extra["courtly_src"] = str(courtly_src)
        cost = run_measured(cmd, run_dir / f"{crawler}.log", env)
    finally:
        web.stop()
    if crawler in ("bare", "floor"):
        lines = (run_dir / f"{crawler}.log").read_text().splitlines()
        own = [json.loads(line) for line in lines if line.startswith("{")]
        extra["exhausted"] = bool(own and own[-1].get("exhausted"))
        extra["passes"] = int(own[-1].get("passes", 1)) if own else 0
    if crawler.startswith("courtly"):
        extra |= dispatch_figures(run_dir / "state", cost.wall_s)
    records = load_log(Path(web.info["log_path"]))
    return summarise(scenario, web, records, cost, seconds, truth) | extra


def dispatch_figures(state: Path, wall_s: float) -> dict[str, Any]:
    """courtly's own measure of fetchers idle while a host was due, summed over its
    processes (``last_run.dispatch`` in each ``status.json``; see
    :class:`courtly.crawl.dispatch.ReadyWaits`): ``fetchers_idle_while_ready_s``
    (fetcher-seconds), its mean per measured request in ms, the share of measured
    requests that waited more than 1 ms so, and the part after the lease per request."""
    totals: Counter[str] = Counter()
    worst = 0.0
    files = sorted(state.glob("status.json")) + sorted(state.glob("part-*/status.json"))
    for path in files:
        try:
            figures = json.loads(path.read_text()).get("last_run", {}).get("dispatch", {})
        except (OSError, ValueError):
            continue
        for key in (
            "requests_measured",
            "requests_waited",
            "fetchers_idle_while_ready_s",
            "fetchers_idle_while_ready_leased_s",
        ):
            totals[key] += figures.get(key, 0)
        worst = max(worst, figures.get("fetchers_idle_while_ready_max_s", 0.0))
    measured = totals["requests_measured"]
    if not measured:
        return {"fetchers_idle_while_ready_s": None}
    idle_s = totals["fetchers_idle_while_ready_s"]
    return {
        "fetchers_idle_while_ready_s": round(idle_s, 3),
        "fetchers_idle_while_ready_ms_per_request": round(1000 * idle_s / measured, 3),
        "fetchers_idle_while_ready_share": round(totals["requests_waited"] / measured, 4),
        "fetchers_idle_while_ready_max_s": round(worst, 3),
        "dispatch_requests_measured": measured,
        "fetchers_idle_while_ready_leased_ms_per_request": round(
            1000 * totals["fetchers_idle_while_ready_leased_s"] / measured, 3
        ),
    }


_TRACKING_PARAM = re.compile(r"(?:utm_[^=&]*|fbclid|gclid|mc_cid|mc_eid)(?:=|$)", re.IGNORECASE)


def tracking_duplicates(fetched: Iterable[str]) -> int:
    """Fetches of a URL that differs only by tracking parameters (the sandbox's
    ``tracking_share`` links: ``utm_*``, ``fbclid``, ``gclid``, ``mc_cid``, ``mc_eid``)
    from a URL fetched before it."""
    exact: set[str] = set()
    untagged: set[str] = set()
    count = 0
    for url in fetched:
        if url in exact:
            continue  # a plain repeat: the audit's "duplicate"
        exact.add(url)
        base, _, query = url.partition("?")
        kept = [p for p in query.split("&") if p and not _TRACKING_PARAM.match(p)]
        key = base + ("?" + "&".join(kept) if kept else "")
        if key in untagged:
            count += 1
        untagged.add(key)
    return count


def audited_pages(
    scenario: Scenario,
    web: Sandbox,
    records: list[RequestRecord],
    seconds: float,
    truth: SandboxTruth,
) -> tuple[AuditReport, list[RequestRecord], int, float]:
    """The politeness audit of courtly's requests in ``records``, those requests, the
    pages among them (requests other than robots.txt) and the window they span (from the
    first one's start to the last one's end; ``seconds`` if there were none)."""
    report = audit(
        records,
        spec_or_truth=truth,
        min_delay_s=scenario.min_delay_s,
        per_ip_cap=scenario.per_ip,
        user_agent_token=TOKEN,
        only_user_agent=USER_AGENT,
        seeds=web.seeds,
        scope=scenario.scope,
    )
    mine = [r for r in records if r.ua == USER_AGENT]
    pages = sum(1 for r in mine if not truth.is_robots_path(r.host, r.path))
    window_s = seconds
    if mine:
        window_s = max(1e-3, max(r.end_at for r in mine) - min(r.start_at for r in mine))
    return report, mine, pages, window_s


def summarise(
    scenario: Scenario,
    web: Sandbox,
    records: list[RequestRecord],
    cost: ProcessCost,
    seconds: float,
    truth: SandboxTruth | None = None,
) -> dict[str, Any]:
    truth = truth if truth is not None else SandboxTruth(web.world)
    seeds = web.seeds
    report, mine, pages, window_s = audited_pages(scenario, web, records, seconds, truth)
    plan = _bound_plan(scenario, truth, window_s, seeds)  # the bound's, made once
    limit = _bound_until(plan, scenario, window_s)
    phased = phase_mean(scenario, truth, mine, window_s, seeds, plan)
    late = lateness(mine, truth=truth, min_delay_s=scenario.min_delay_s, delay_factor=DELAY_FACTOR)
    statuses = Counter(r.status for r in mine)
    pages_per_s = pages / window_s
    expected = truth.expected_pages(TOKEN, scope=scenario.scope, seeds=seeds)
    degrees = in_degrees(truth.world, expected)
    port = truth.world.port
    fetch_order = [
        truth.world.canonical(host_url(r.host, port, r.path))
        for r in sorted(mine, key=lambda r: r.start_at)
        if not truth.is_robots_path(r.host, r.path)
    ]
    score = order_score(fetch_order, degrees)
    tagged = tracking_duplicates(fetch_order)
    return {
        "order_score": round(score, 4) if score is not None else None,
        "tracking_duplicates": tagged,
        "tracking_duplicate_share": round(tagged / pages, 4) if pages else None,
        "pages_per_s": round(pages_per_s, 1),
        "cpu_ms_per_page": round(1000 * cost.cpu_s / pages, 3) if pages else None,
        "cpu_s_per_1000_pages": round(1000 * cost.cpu_s / pages, 3) if pages else None,
        "cpu_cores": round(cost.cpu_s / window_s, 3),
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
        "efficiency": round(pages_per_s / limit["bound_pages_per_s"], 4)
        if limit["bound_pages_per_s"]
        else None,
        "requests_efficiency": round(len(mine) / limit["bound_requests"], 4),
        **(phased or {}),
        "bound_pages_per_s": round(limit["bound_pages_per_s"], 1),
        "bound_requests_per_s": round(limit["bound_requests_per_s"], 1),
        "lateness_ms": lateness_summary(late),
        "pages": pages,
        "requests": len(mine),
        "requests_per_s": round(len(mine) / window_s, 1),
        "robots_requests": len(mine) - pages,
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
    courtly_src: Path | None = None,
    rounds: int = 1,
) -> dict[str, Any]:
    """Every crawler, one after the other, each against its own fresh copy of the web;
    ``rounds`` times, the order reversed every other round.

    The copies are served on one port, so that the ground truth is computed once.
    ``share_of_ceiling`` (and ``speedup_vs_scrapy``) is the median over the rounds of
    each round's ratio to its own bare loop (Scrapy run); a crawler's other figures are
    those of its median run (:func:`combine_rounds`).
    """
    spec = dataclasses.replace(scenario.spec, port=free_port())
    scenario = dataclasses.replace(scenario, spec=spec)
    truth = CachedTruth(SandboxWorld(spec, spec.port))
    out: dict[str, Any] = {
        "purpose": scenario.purpose,
        "hosts": spec.n_hosts,
        "ips": len(truth.world.layout.live_ips),
        "seeds": len(truth.world.seeds()),
        "min_delay_s": scenario.min_delay_s,
        "per_ip": scenario.per_ip,
        "concurrency": scenario.concurrency,
        "scope": scenario.scope,
        "courtly_processes": None,
        "courtly_flags": " ".join(courtly_flags(scenario, "F", seconds)),
        "courtly_tuned_flags": " ".join(scenario.tuned) or None,
        "seconds": seconds,
    }
    started = time.monotonic()
    truth.expected_pages(TOKEN, scope=scenario.scope, seeds=truth.world.seeds())
    out["truth_s"] = round(time.monotonic() - started, 1)
    runs: dict[str, list[dict[str, Any]]] = {}
    for round_index in range(rounds):
        # alternate the order, so that no crawler always runs first on a drifting machine
        order = crawlers if round_index % 2 == 0 else tuple(reversed(crawlers))
        for crawler in order:
            if crawler == "courtly_tuned" and not scenario.tuned:
                continue
            if crawler == "floor" and scenario.name not in FLOOR_SCENARIOS:
                continue
            label = f"{crawler}, round {round_index + 1}/{rounds}" if rounds > 1 else crawler
            print(f"[{scenario.name}] {label}: {seconds:.0f} s ...", file=sys.stderr, flush=True)
            figures = measure(
                scenario,
                crawler,
                seconds,
                workdir,
                truth,
                profile and crawler == "courtly",
                overrides,
                courtly_src,
            )
            runs.setdefault(crawler, []).append(figures)
            print(
                f"[{scenario.name}] {label}: {figures['pages_per_s']} pages/s, "
                f"{figures['cpu_ms_per_page']} CPU ms/page, coverage "
                f"{figures['coverage']:.1%}, efficiency {figures['efficiency']}, violations "
                f"{figures['violations']} {figures['violations_by_kind']}",
                file=sys.stderr,
                flush=True,
            )
    for crawler, made in runs.items():
        out[crawler] = combine_rounds(made)
    ceiling = out.get("bare", {}).get("pages_per_s")
    if ceiling:
        out["ceiling_pages_per_s"] = ceiling
        out["ceiling_cpu_ms_per_page"] = out["bare"]["cpu_ms_per_page"]
    bare_runs = runs.get("bare", [])
    for crawler, made in runs.items():
        # each round's share against that round's bare loop; the median of those
        shares = [
            round(run["pages_per_s"] / bare["pages_per_s"], 4)
            for run, bare in zip(made, bare_runs, strict=False)
            if bare["pages_per_s"]
        ]
        out[crawler]["share_of_ceiling"] = statistics.median(shares) if shares else None
        if rounds > 1:
            out[crawler]["share_of_ceiling_rounds"] = shares
    if "courtly" in out:
        out["bound_pages_per_s"] = out["courtly"]["bound_pages_per_s"]
        out["efficiency"] = out["courtly"]["efficiency"]
        out["efficiency_phase_mean"] = out["courtly"].get("efficiency_phase_mean")
        out["share_of_ceiling"] = out["courtly"]["share_of_ceiling"]
    cpu = {name: out.get(name, {}).get("cpu_ms_per_page") for name in ("bare", "floor", "courtly")}
    if cpu["floor"] and cpu["bare"]:
        out["floor_cpu_over_bare"] = round(cpu["floor"] / cpu["bare"], 2)
    if cpu["floor"] and cpu["courtly"]:
        out["courtly_cpu_over_floor"] = round(cpu["courtly"] / cpu["floor"], 2)
    if "courtly" in out and "scrapy" in out and out["scrapy"]["pages_per_s"]:
        speedups = [
            round(mine["pages_per_s"] / theirs["pages_per_s"], 2)
            for mine, theirs in zip(runs["courtly"], runs["scrapy"], strict=False)
            if theirs["pages_per_s"]
        ]
        out["speedup_vs_scrapy"] = statistics.median(speedups)
        if rounds > 1:
            out["speedup_vs_scrapy_rounds"] = speedups
    return out


def combine_rounds(made: list[dict[str, Any]]) -> dict[str, Any]:
    """One crawler's figures over its rounds: the run of median pages/s, its violations
    replaced by the sum over every round (none is hidden by the median), and with more
    than one round ``rounds``: each round's headline figures."""
    ranked = sorted(made, key=lambda run: run["pages_per_s"])
    median = dict(ranked[(len(ranked) - 1) // 2])
    if len(made) == 1:
        return median
    median["violations"] = sum(run["violations"] for run in made)
    kinds: dict[str, int] = {}
    for run in made:
        for kind, count in run["violations_by_kind"].items():
            kinds[kind] = kinds.get(kind, 0) + count
    median["violations_by_kind"] = kinds
    keys = ("pages_per_s", "cpu_ms_per_page", "efficiency", "coverage", "violations")
    median["rounds"] = [{key: run.get(key) for key in keys} for run in made]
    return median


def targets(results: dict[str, Any]) -> dict[str, bool | None]:
    """The targets, each met or not (None when what it needs did not run).

    Issue targets, read against the bare loop of the same run: the wide scenario
    at >= 1/3 of the ceiling and >= 25x Scrapy, the broad one at >= 0.27 of the
    ceiling, courtly's CPU per page <= 5.5x the bare loop's (wide and broad), the
    politeness scenario at >= 0.97 of its bound, zero violations everywhere. The
    earlier absolute targets stay for comparison.
    """
    scen = results["scenarios"]

    def get(name: str, *path: str) -> Any:
        value: Any = scen.get(name)
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    def at_least(value: Any, floor: float) -> bool | None:
        return None if value is None else bool(value >= floor)

    zero = [
        get(name, crawler, "violations") == 0
        for name in scen
        for crawler in ("courtly", "courtly_tuned")
        if get(name, crawler) is not None
    ]
    cpu_ratios = [
        get(name, "courtly", "cpu_ms_per_page") / get(name, "bare", "cpu_ms_per_page")
        for name in ("wide", "broad")
        if get(name, "courtly", "cpu_ms_per_page") and get(name, "bare", "cpu_ms_per_page")
    ]
    return {
        "wide_share_of_ceiling_ge_one_third": at_least(
            get("wide", "courtly", "share_of_ceiling"), 1 / 3
        ),
        "wide_ge_25x_scrapy": at_least(get("wide", "speedup_vs_scrapy"), 25),
        "broad_share_of_ceiling_ge_0_27": at_least(
            get("broad", "courtly", "share_of_ceiling"), 0.27
        ),
        "cpu_per_page_le_5_5x_ceiling": None if not cpu_ratios else max(cpu_ratios) <= 5.5,
        "zero_violations": all(zero) if zero else None,
        "politeness_efficiency_ge_97pct": at_least(get("politeness", "efficiency"), 0.97),
        "politeness_efficiency_phase_mean_ge_97pct": at_least(
            get("politeness", "efficiency_phase_mean"), 0.97
        ),
        "broad_ge_10x_scrapy": at_least(get("broad", "speedup_vs_scrapy"), 10),
        "broad_ge_1800_pages_per_s": at_least(get("broad", "courtly", "pages_per_s"), 1800),
    }


# -- profile breakdown --------------------------------------------------------------------------

#: (category, markers): the innermost frame matching a marker decides a sample's category;
#: frames of general-purpose libraries (yarl, asyncio, contextlib, dataclass __init__) are
#: skipped so that their cost lands on the courtly code that called them.
PROFILE_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("archive (WARC + gzip)", ("archive/warc.py",)),
    ("parse (HTML links, sitemaps)", ("parse/links.py", "parse/sitemaps.py", "selectolax")),
    ("canonicalise + scope + traps", ("courtly/url/", "Frontier.queued_url", "crawl/links.py")),
    ("robots.txt", ("courtly/robots/",)),
    ("store: catalogue", ("SqliteStore.record", "SqliteStore._record", "_catalogue_row")),
    ("frontier + SQLite store", ("courtly/frontier/", "courtly/store/")),
    ("fetch (aiohttp, DNS, sockets)", ("courtly/fetch/", "aiohttp/", "aiohappyeyeballs/")),
    ("crawl loop (workers, leases, idle waits)", ("courtly/crawl.py", "courtly/crawl/")),
)


_WAITING = "Condition.wait (threading.py"
"""The innermost frame of a thread blocked on a condition (a multiprocessing queue's
feeder thread in every process of a partitioned crawl): py-spy reports these samples as
on the CPU, but /proc shows such a thread using next to no CPU, so they are left out."""


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
            frames = stack.split(";")
            if _WAITING in frames[-1]:
                continue  # a queue's feeder thread, blocked: py-spy counts it as running
            counts[_category(frames)] += int(n_text)
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


def commit() -> str | None:
    """The checked-out commit (with ``+dirty`` if the tree has changes), or None."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=HERE,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return None
    return f"{head}+dirty" if head and dirty else head or None


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--scenario", default="all", help="comma-separated: wide,broad,politeness,hostile [all]"
    )
    parser.add_argument(
        "--seconds", type=float, help="time budget per run [the scenario's: 60 or 30 s]"
    )
    parser.add_argument("--quick", action="store_true", help="smaller webs, 20 and 15 s runs")
    parser.add_argument(
        "--crawlers",
        default=",".join(CRAWLERS),
        help="bare,floor,courtly,courtly_tuned,scrapy [all; floor on wide and broad only]",
    )
    parser.add_argument("--workdir", type=Path, default=HERE / "out" / "compare")
    parser.add_argument("--profile", action="store_true", help="py-spy the courtly runs")
    parser.add_argument(
        "--courtly-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra courtly config (TOML value), e.g. warc_gzip_level=1; repeatable",
    )
    parser.add_argument(
        "--courtly-src",
        type=Path,
        help="run the courtly crawler from this source tree (a before/after on one machine)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run every crawler this many times, alternating the order; medians [1]",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--serve-spec", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_spec is not None:
        return serve_main(args.serve_spec, args.dir)
    crawlers = tuple(c for c in CRAWLERS if c in args.crawlers.split(","))
    if "scrapy" in crawlers:
        ensure_scrapy_venv()
    overrides = {
        key.strip(): tomllib.loads(f"v = {value}")["v"]
        for key, _, value in (item.partition("=") for item in args.courtly_set)
    }
    chosen = scenarios(args.quick)
    names = list(chosen) if args.scenario == "all" else args.scenario.split(",")
    unknown = sorted(set(names) - set(chosen))
    if unknown:
        parser.error(f"unknown scenarios {unknown}; choose from {sorted(chosen)}")
    results: dict[str, Any] = {
        "benchmark": "compare_scrapy",
        "machine": machine(),
        "commit": commit(),
        "seconds": args.seconds,
        "rounds": args.rounds,
        "quick": args.quick,
        "user_agent": USER_AGENT,
        "courtly_overrides": overrides,
        "scenarios": {},
    }
    for name in names:
        seconds = args.seconds or chosen[name].seconds
        result = run_scenario(
            chosen[name],
            seconds,
            args.workdir,
            crawlers,
            args.profile,
            overrides,
            args.courtly_src,
            args.rounds,
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

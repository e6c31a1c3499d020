"""courtly's Scrapy add-on against the sandbox web, judged from the server's request log.

Scrapy runs ``benchmarks/scrapy_spider.py`` (a broad spider) in a subprocess (a
Twisted reactor cannot restart); the sandbox serves from another process (the
benchmarks' ``Sandbox``: a server thread sharing this process's interpreter lock
would stamp its log late).
The web is finite (no traps, nothing dead or hostile) so the crawl ends by itself,
with a crawl-delay host, a slow host, a 429/503 host with ``Retry-After`` and a
robots.txt redirect. The negative control runs stock Scrapy on the same web.
Two processes sharing one frontier in a Redis server of their own are audited
as one crawler.
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from tests.file_limit import with_file_limit
from tests.redis_servers import (
    RedisCluster,
    have_redis_server,
    new_crawl_name,
    start_standalone,
    stop_server,
)

from courtly.event_loop import run_async
from courtly.frontier.config import QueueConfig
from courtly.integrations.scrapy.keys import PAYLOAD_NAMESPACE, payload_id_of
from courtly.sandbox import (
    AuditReport,
    RequestRecord,
    SandboxSpec,
    SandboxTruth,
    SandboxWorld,
    audit,
    load_log,
)
from courtly.sandbox.urls import split_url
from courtly.store.sqlite import SqliteStore

pytestmark = pytest.mark.integration

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SPIDER = BENCHMARKS / "scrapy_spider.py"
UA = "courtly/0.1 (+https://courtly.invalid/bot; tests@courtly.invalid)"
MIN_DELAY_S = 0.2
PER_IP = 2
RUN_TIMEOUT_S = 40.0
OLDEST = Path(sys.prefix) / "scrapy-oldest"
"""Scrapy 2.13 (and a Twisted it works with), installed there by ``make`` (see the Makefile)."""
REQUIRE_OLDEST = os.environ.get("COURTLY_REQUIRE_SCRAPY_OLDEST") == "1"
"""Set by CI (``.ci/run``): a missing oldest Scrapy fails the tests instead of skipping them."""
SCRAPYS = pytest.mark.parametrize("scrapy", ["newest", "oldest"])
"""Run a test on the newest Scrapy (the test extra) and on the oldest supported one."""


def on_oldest(scrapy: str) -> bool:
    """Whether this run is on the oldest Scrapy (skipped, or failed in CI, if absent)."""
    if scrapy != "oldest":
        return False
    if not (OLDEST / "scrapy").is_dir():
        message = f"the oldest supported Scrapy is not installed in {OLDEST} (run make)"
        if REQUIRE_OLDEST:
            pytest.fail(message)
        pytest.skip(message)
    return True


def scrapy_path(oldest: bool) -> str:
    """``PYTHONPATH`` for a child process on the oldest or the newest Scrapy."""
    path = [str(OLDEST)] if oldest else []
    path.append(str(SPIDER.parents[1] / "src"))
    return os.pathsep.join(path)


def banner(oldest: bool) -> str:
    """What Scrapy's log says first, on the version asked for."""
    return "[scrapy.utils.log] INFO: Scrapy " + ("2.13." if oldest else "2.")


SPEC = SandboxSpec(
    seed=3,
    n_sites=2,
    hosts_per_site=4,
    pages_per_host=4,
    ips=3,
    robots_variants=("rules", "crawl_delay", "missing", "wildcard", "redirect", "token_open"),
    crawl_delay_s=0.3,
    slow_hosts=1,
    slow_s=0.1,
    flaky_hosts=1,
    flaky_every=5,
    retry_after_s=1,
    dead_hosts=0,
    trap_hosts=0,
    hostile_hosts=0,
    special_pages=False,
    sitemaps=False,
    redirects=False,
    nofollow=False,
)


class Web:
    """The sandbox web served by a child process; :meth:`records` stops it and reads its log."""

    def __init__(self, spec: SandboxSpec, workdir: Path) -> None:
        if str(BENCHMARKS) not in sys.path:
            sys.path.insert(0, str(BENCHMARKS))
        sandbox: Any = importlib.import_module("compare_scrapy").Sandbox
        self._web = sandbox(spec, workdir)
        self.info: dict[str, Any] = self._web.info
        self.world: SandboxWorld = self._web.world
        self.seeds: list[str] = self._web.seeds
        self._log = Path(self.info["log_path"])

    @property
    def requests_logged(self) -> int:
        """Requests logged so far (the log is written as requests end)."""
        try:
            with self._log.open("rb") as log:
                return sum(1 for _ in log)
        except FileNotFoundError:
            return 0

    def stop(self) -> None:
        self._web.stop()

    def records(self) -> list[RequestRecord]:
        self.stop()
        return load_log(self._log)


@pytest.fixture
def web(tmp_path: Path) -> Iterator[Web]:
    served = Web(SPEC, tmp_path / "web")
    yield served
    served.stop()


@dataclass(frozen=True, slots=True)
class Run:
    """One Scrapy process: its return code, Scrapy's stats and its output."""

    returncode: int
    stats: dict[str, str]
    output: str

    def stat(self, name: str) -> int:
        return int(self.stats.get(name, "0"))


def scrapy_command(web: Web, workdir: Path, extra: Sequence[str]) -> list[str]:
    return [
        sys.executable,
        str(SPIDER),
        "--seeds-file",
        str(web.info["seeds_file"]),
        "--hosts-file",
        str(web.info["hosts_file"]),
        "--user-agent",
        UA,
        "--delay",
        str(MIN_DELAY_S),
        "--concurrency",
        "8",
        "--seconds",
        str(RUN_TIMEOUT_S),
        "--timeout",
        "5",
        "--stats-out",
        str(workdir / "stats.json"),
        "--set",
        'LOG_LEVEL="INFO"',
        "--set",
        "RETRY_ENABLED=true",
        *extra,
    ]


def courtly_args(state: Path, per_ip: int = PER_IP) -> list[str]:
    return [
        "--courtly",
        str(state),
        "--set",
        "COURTLY_ALLOW_PRIVATE_NETWORKS=true",
        "--set",
        f"COURTLY_PER_IP={per_ip}",
        "--set",
        "COURTLY_MAX_WAIT=5",
    ]


def start_scrapy(
    web: Web, workdir: Path, extra: Sequence[str], *, oldest: bool = False
) -> subprocess.Popen[bytes]:
    """Start the spider (on the oldest supported Scrapy with ``oldest``); its output
    goes to ``workdir/scrapy.log``."""
    workdir.mkdir(parents=True, exist_ok=True)
    with (workdir / "scrapy.log").open("wb") as sink:
        return subprocess.Popen(
            scrapy_command(web, workdir, extra),
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": scrapy_path(oldest)},
        )


def finished(
    proc: subprocess.Popen[bytes] | subprocess.CompletedProcess[bytes], workdir: Path
) -> Run:
    stats_file = workdir / "stats.json"
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    assert proc.returncode is not None
    return Run(proc.returncode, stats, (workdir / "scrapy.log").read_text(errors="replace"))


def run_scrapy(
    web: Web,
    workdir: Path,
    extra: Sequence[str],
    *,
    kill_when: Callable[[], bool] | None = None,
    oldest: bool = False,
) -> Run:
    """Run the spider to its end, or SIGKILL it as soon as ``kill_when()`` holds;
    on the oldest supported Scrapy with ``oldest``."""
    proc = start_scrapy(web, workdir, extra, oldest=oldest)
    deadline = time.monotonic() + RUN_TIMEOUT_S + 30
    while proc.poll() is None:
        if kill_when is not None and kill_when():
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            break
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            pytest.fail("Scrapy did not finish in time")
        time.sleep(0.02)
    return finished(proc, workdir)


def held_at_kill(state: Path) -> set[str]:
    """``host/path`` (percent-decoded) of every request a killed spider's state still
    queues (a leased one stays at the head of its host's queue until its completion is
    committed), read from the state file it left with nothing written to it: each queue
    row is a request key (``<origin>/#courtly:<payload id>``), and its request is the
    pickled dict of the payload blob under that id."""
    db = sqlite3.connect(state / "frontier.sqlite3")
    try:
        keys = db.execute("SELECT url FROM front UNION ALL SELECT url FROM back").fetchall()
        out: set[str] = set()
        for (key,) in keys:
            row = db.execute(
                "SELECT value FROM blobs WHERE namespace = ? AND key = ?",
                (PAYLOAD_NAMESPACE, payload_id_of(key)),
            ).fetchone()
            assert row is not None and row[0], key  # a queued request has its payload
            host, _, path = split_url(pickle.loads(row[0])["url"])
            out.add(unquote(f"{host}{path}"))  # the server logs ~ as the spider sent it: %7E
        return out
    finally:
        db.close()


def judge(web: Web, records: list[RequestRecord], per_ip: int = PER_IP) -> AuditReport:
    return audit(
        records,
        spec_or_truth=SandboxTruth(web.world),
        min_delay_s=MIN_DELAY_S,
        per_ip_cap=per_ip,
        only_user_agent=UA,
        seeds=web.seeds,
    )


def robots_first(web: Web, records: list[RequestRecord]) -> list[str]:
    """Hosts whose first request was not their robots.txt."""
    truth = SandboxTruth(web.world)
    first: dict[str, RequestRecord] = {}
    for rec in sorted(records, key=lambda r: r.start_at):
        first.setdefault(rec.host, rec)
    return [h for h, rec in first.items() if not truth.is_robots_path(h, rec.path)]


def assert_polite_and_complete(
    web: Web, records: list[RequestRecord], report: AuditReport, per_ip: int
) -> None:
    """One request in flight per host, the per-IP cap, every gap, Crawl-delay and
    Retry-After kept (and there to be kept), each page once, every reachable page,
    robots.txt first."""
    assert report.violations == 0, report.summary()
    assert report.max_in_flight_per_host == 1
    assert report.max_in_flight_per_ip <= per_ip
    truth = SandboxTruth(web.world)
    assert any(truth.crawl_delay_s(r.host, "courtly") > MIN_DELAY_S for r in records)
    assert any(r.status in (429, 503) for r in records)
    assert report.duplicate_fetches == 0
    assert report.expected_fetched == report.expected_pages, report.summary()
    assert robots_first(web, records) == []


def page_counts(web: Web, records: list[RequestRecord]) -> Counter[str]:
    """Final answers per canonical page URL (robots.txt excluded)."""
    truth = SandboxTruth(web.world)
    counts: Counter[str] = Counter()
    for rec in records:
        if truth.is_robots_path(rec.host, rec.path) or rec.status in (429, 503):
            continue
        counts[f"{rec.host}{rec.path}"] += 1
    return counts


@SCRAPYS
def test_addon_crawl_is_polite_complete_and_ends(web: Web, tmp_path: Path, scrapy: str) -> None:
    oldest = on_oldest(scrapy)
    run = run_scrapy(web, tmp_path / "run", courtly_args(tmp_path / "state"), oldest=oldest)
    assert banner(oldest) in run.output
    records = web.records()
    report = judge(web, records)
    assert run.returncode == 0, run.output[-3000:]
    assert run.stats["finish_reason"] == "finished", run.output[-3000:]
    assert_polite_and_complete(web, records, report, PER_IP)
    assert run.stat("downloader/response_count") == len(records)
    # Scrapy's own throttles are off, courtly's stats are there, the engine was woken.
    assert run.stat("courtly/robots_fetches") == report.hosts
    assert run.stat("courtly/engine_wakeups") > 0
    assert run.stat("courtly/engine_wake_unavailable") == 0, "engine._slot.nextcall is gone"
    assert run.stat("courtly/start_lag_samples") > 0
    assert run.stat("courtly/left_queued") == 0
    assert run.stat("courtly/duplicates") > 0  # the spider yields many links twice


def test_a_full_disk_closes_the_spider_with_one_error_and_the_next_run_goes_on(
    web: Web, tmp_path: Path
) -> None:
    """The state's disk fills up mid-crawl (a file size limit on the spider's process: its
    SQLite WAL cannot grow): the spider closes at once, reason ``courtly_store_error``,
    with one error line that names the state file and no traceback (before: a traceback
    at every step of the scheduler's task while the spider ran on to its timeout, then
    another at close). The next run, without the limit, resumes the state and finishes
    the web politely."""
    state = tmp_path / "state"
    workdir = tmp_path / "full"
    workdir.mkdir()
    # 64 KiB: the state file is created whole (60 KiB); its WAL passes this at once
    command = with_file_limit(scrapy_command(web, workdir, courtly_args(state)), 64 * 1024)
    with (workdir / "scrapy.log").open("wb") as sink:
        proc = subprocess.run(
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": scrapy_path(False)},
            timeout=RUN_TIMEOUT_S + 30,
            check=False,
        )
    failed = finished(proc, workdir)
    assert failed.stats["finish_reason"] == "courtly_store_error", failed.output[-3000:]
    assert "Traceback" not in failed.output, failed.output[-3000:]
    assert failed.stat("log_count/ERROR") == 1, failed.output[-3000:]
    assert f"{state / 'frontier.sqlite3'}: the state file failed" in failed.output

    resumed = run_scrapy(web, tmp_path / "resumed", courtly_args(state))
    assert resumed.stats["finish_reason"] == "finished", resumed.output[-3000:]
    assert resumed.stat("courtly/resumed_queued") > 0
    report = judge(web, web.records())
    # Repeats: only what the failed run had fetched but not committed.
    assert report.violations == report.duplicate_fetches, report.summary()
    assert report.expected_fetched == report.expected_pages, report.summary()


@pytest.mark.parametrize("cause", ["redis_unreachable", "state_locked", "state_is_a_file"])
def test_a_frontier_that_cannot_be_opened_closes_the_spider_with_one_error(
    web: Web, tmp_path: Path, cause: str
) -> None:
    """A Redis store nobody answers at, a state directory another process holds, a file
    where the state directory should be: the spider closes at once, reason
    ``courtly_store_error``, with one error line that says why (the store's URL with its
    password masked), and no traceback. Before, Scrapy shut down half open ("Closing
    spider (shutdown)") with four tracebacks."""
    state = tmp_path / "state"
    extra = courtly_args(state)
    holder: SqliteStore | None = None
    if cause == "redis_unreachable":
        with socket.socket() as probe:  # a loopback port nothing listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        store = f"redis://:secret@127.0.0.1:{port}/0"
        extra += ["--set", f'COURTLY_STORE="{store}"', "--set", 'COURTLY_CRAWL_NAME="c"']
        expected = f"the Redis store redis://:***@127.0.0.1:{port}/0: "
    elif cause == "state_locked":
        state.mkdir()
        holder = SqliteStore(state / "frontier.sqlite3", QueueConfig())  # holds the lock
        expected = "the state file is in use by another process"
    else:
        state.write_text("not a directory\n", encoding="utf-8")
        expected = f"COURTLY_STATE {state}: File exists"
    try:
        run = run_scrapy(web, tmp_path / "run", extra)
    finally:
        if holder is not None:
            run_async(holder.aclose())
    assert run.stats["finish_reason"] == "courtly_store_error", run.output[-3000:]
    assert "Traceback" not in run.output, run.output[-3000:]
    errors = [line for line in run.output.splitlines() if "] ERROR: " in line]
    assert len(errors) == 1 and expected in errors[0], run.output[-3000:]
    assert "secret" not in run.output
    assert web.records() == []  # not one request


@SCRAPYS
def test_a_response_a_middleware_drops_frees_its_host_at_once(tmp_path: Path, scrapy: str) -> None:
    """A downloader middleware that turns a response into an exception (here Scrapy's
    redirect middleware with ``REDIRECT_MAX_TIMES=0``: every redirect is discarded with
    ``IgnoreRequest``) sends it to the request's errback, not to the spider, and no
    signal says so. The lease ends then: its host held it for the 30 s grace before,
    so a web with redirects ran into the time budget with leases completed late."""
    oldest = on_oldest(scrapy)
    web = Web(replace(SPEC, redirects=True), tmp_path / "web")
    try:
        extra = [*courtly_args(tmp_path / "state"), "--set", "REDIRECT_MAX_TIMES=0"]
        started = time.monotonic()
        run = run_scrapy(web, tmp_path / "run", extra, oldest=oldest)
        took_s = time.monotonic() - started
    finally:
        web.stop()
    records = web.records()
    assert run.returncode == 0, run.output[-3000:]
    assert run.stats["finish_reason"] == "finished", run.output[-3000:]
    truth = SandboxTruth(web.world)
    redirects = [
        r for r in records if 300 <= r.status < 400 and not truth.is_robots_path(r.host, r.path)
    ]
    dropped = run.stat("courtly/responses_dropped")
    assert dropped > 0 and dropped == len(redirects)  # each page redirect discarded
    assert run.stat("courtly/completed_late") == 0
    assert took_s < 30, took_s  # no lease waited out the 30 s grace
    report = judge(web, records)
    assert report.violations == 0, report.summary()
    assert report.duplicate_fetches == 0


@SCRAPYS
def test_answers_from_scrapys_cache_that_a_middleware_drops_free_their_hosts(
    tmp_path: Path, scrapy: str
) -> None:
    """With ``HTTPCACHE_ENABLED`` a second run is answered from the cache: no request
    reaches the downloader, so no signal fires, and a cached redirect that the redirect
    middleware discards (``REDIRECT_MAX_TIMES=0``) reaches only the errback. Its lease
    ends then; it held its host until the lease expired, and the run stalled."""
    oldest = on_oldest(scrapy)
    web = Web(replace(SPEC, redirects=True), tmp_path / "web")
    cache = json.dumps(str(tmp_path / "httpcache"))
    extra = ["--set", "REDIRECT_MAX_TIMES=0", "--set", "HTTPCACHE_ENABLED=true"]
    extra += ["--set", f"HTTPCACHE_DIR={cache}"]
    try:
        first = run_scrapy(
            web, tmp_path / "run1", [*courtly_args(tmp_path / "s1"), *extra], oldest=oldest
        )
        assert first.stats["finish_reason"] == "finished", first.output[-3000:]
        second_at = time.time()  # the server stamps requests on the wall clock
        started = time.monotonic()
        second = run_scrapy(
            web, tmp_path / "run2", [*courtly_args(tmp_path / "s2"), *extra], oldest=oldest
        )
        took_s = time.monotonic() - started
        truth = SandboxTruth(web.world)
        pages_served = [  # the first run's last lines may be logged after it ends
            r
            for r in web.records()
            if r.start_at >= second_at and not truth.is_robots_path(r.host, r.path)
        ]
    finally:
        web.stop()
    assert second.returncode == 0, second.output[-3000:]
    assert second.stats["finish_reason"] == "finished", second.output[-3000:]
    assert not pages_served, [(r.host, r.path, r.status) for r in pages_served]  # all cached
    assert second.stat("courtly/not_downloaded") >= first.stat("courtly/responses_dropped") > 0
    assert second.stat("courtly/left_queued") == 0
    assert took_s < 30, took_s


def test_stock_scrapy_fails_the_same_audit(web: Web, tmp_path: Path) -> None:
    """The negative control: per-domain concurrency 8 and no delay."""
    extra = [
        "--set",
        "CONCURRENT_REQUESTS_PER_DOMAIN=8",
        "--set",
        "DOWNLOAD_DELAY=0",
    ]
    run = run_scrapy(web, tmp_path / "run", extra)
    report = judge(web, web.records())
    assert run.returncode == 0, run.output[-3000:]
    # No delay: the next request to a host follows the end of the last one at once.
    assert report.gap_violations > 0, report.summary()
    assert report.violations >= report.gap_violations


@SCRAPYS
def test_resume_after_kill_repeats_only_what_was_in_flight(
    web: Web, tmp_path: Path, scrapy: str
) -> None:
    oldest = on_oldest(scrapy)
    state = tmp_path / "state"
    killed_at: list[float] = []

    def enough() -> bool:
        if web.requests_logged >= 30:
            killed_at.append(time.time())
            return True
        return False

    first = run_scrapy(
        web, tmp_path / "first", courtly_args(state), kill_when=enough, oldest=oldest
    )
    assert first.returncode == -signal.SIGKILL and killed_at, first.output[-3000:]
    held = held_at_kill(state)
    second = run_scrapy(web, tmp_path / "second", courtly_args(state), oldest=oldest)
    records = web.records()
    assert banner(oldest) in second.output
    assert second.returncode == 0, second.output[-3000:]
    assert second.stats["finish_reason"] == "finished", second.output[-3000:]
    assert second.stat("courtly/resumed_queued") > 0
    report = judge(web, records)
    # Politeness holds across the restart (the store holds every host for one minimum
    # delay after a resume: the killed process's last gap is kept).
    assert report.violations - report.duplicate_fetches == 0, report.summary()
    # Every page was fetched; a page fetched twice had not been completed when the first
    # run was killed: the state it left still queued its request (leased, or its
    # completion not committed yet), whenever the server had answered it.
    assert report.expected_fetched == report.expected_pages, report.summary()
    repeated = [url for url, n in page_counts(web, records).items() if n > 1]
    done = [url for url in repeated if unquote(url) not in held]
    assert done == [], f"fetched again although completed before the kill: {done}"
    assert len(repeated) <= 8, repeated  # at most CONCURRENT_REQUESTS were in flight


SHARED_SPEC = replace(SPEC, ips=1)
SHARED_PER_IP = 2
"""Every host on one address with two places at it: two processes that each kept their
own per-IP count would have up to four requests in flight there."""


@pytest.fixture
def one_address_web(tmp_path: Path) -> Iterator[Web]:
    served = Web(SHARED_SPEC, tmp_path / "web")
    yield served
    served.stop()


@pytest.mark.skipif(not have_redis_server(), reason="redis-server is not installed")
@pytest.mark.parametrize(
    ("scrapy", "redis"), [("newest", "standalone"), ("oldest", "standalone"), ("newest", "cluster")]
)
def test_two_processes_share_one_redis_frontier_politely(
    one_address_web: Web, tmp_path: Path, scrapy: str, redis: str
) -> None:
    """Two Scrapy processes, one crawl in Redis (one server, or a 3-master cluster):
    audited as one polite crawler.

    Shard affinity is off (``?affinity=0``), as in the test below: on a web of eight
    hosts, which process fetches most follows which owns their shards (a draw of the
    processes' ids), and "both fetched" would say nothing of the sharing under test."""
    web = one_address_web
    oldest = on_oldest(scrapy)
    cluster = RedisCluster().start() if redis == "cluster" else None
    url, server = (cluster.url, None) if cluster is not None else start_standalone()
    try:
        shared = [
            *courtly_args(tmp_path / "unused", per_ip=SHARED_PER_IP),
            "--set",
            "COURTLY_STATE=null",
            "--set",
            f"COURTLY_STORE={json.dumps(url + '?affinity=0')}",
            "--set",
            f"COURTLY_CRAWL_NAME={json.dumps(new_crawl_name('scrapy'))}",
        ]
        dirs = [tmp_path / "a", tmp_path / "b"]
        # Both queue their seeds once both are up: the one that started first would
        # otherwise crawl the small web alone while the other still imports Scrapy.
        together = [*shared, "--barrier", str(tmp_path / "barrier"), str(len(dirs))]
        # The spider's CONCURRENT_REQUESTS = 8 lets a process lease up to 16 hosts, all 8
        # of this web; it holds at most 4 at their one address (its 2 places and 2
        # waiting) and gives the rest back, so the other process has hosts to fetch.
        procs = [start_scrapy(web, workdir, together, oldest=oldest) for workdir in dirs]
        deadline = time.monotonic() + RUN_TIMEOUT_S + 30
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for other in procs:
                    other.kill()
                    other.wait()
                pytest.fail("Scrapy did not finish in time")
        runs = [finished(proc, workdir) for proc, workdir in zip(procs, dirs, strict=True)]
    finally:
        if server is not None:
            stop_server(server)
        if cluster is not None:
            cluster.stop()
    records = web.records()
    report = judge(web, records, per_ip=SHARED_PER_IP)
    for run in runs:
        assert banner(oldest) in run.output
        assert run.returncode == 0, run.output[-3000:]
        assert run.stats["finish_reason"] == "finished", run.output[-3000:]
        # Both processes fetched: the frontier was shared, not raced for.
        assert run.stat("downloader/response_count") > 0, run.output[-3000:]
    # The crawl's counts when the last process closed (the first may leave work to it).
    closed_at = [(workdir / "stats.json").stat().st_mtime for workdir in dirs]
    last = runs[closed_at.index(max(closed_at))]
    assert last.stat("courtly/left_queued") == 0
    # Across both processes.
    assert_polite_and_complete(web, records, report, SHARED_PER_IP)
    assert sum(run.stat("downloader/response_count") for run in runs) == len(records)
    # robots.txt once per host for the crawl: the second process reads the first's copy.
    assert sum(run.stat("courtly/robots_fetches") for run in runs) == report.hosts
    # Both processes enqueue every seed: the shared seen-set drops one copy of each
    # (and the links both processes found), whichever process came second.
    dropped = sum(run.stat("courtly/dropped/duplicates_resumed") for run in runs)
    assert dropped >= len(web.seeds), [run.stats for run in runs]


SLOW_ONE_ADDRESS_SPEC = replace(
    SPEC,
    pages_per_host=20,
    ips=1,
    robots_variants=("rules", "missing", "wildcard", "token_open"),
    slow_hosts=8,
    flaky_hosts=0,
)
"""Eight hosts on one address, each answering in 0.1 s: with 2 places there the address,
not the hosts' gaps, bounds the crawl, and most leased requests wait for a place."""
UNSTARVED_SHARE = 0.1
"""The least share of the responses each of two processes gets on that web (180 / 0
without the rule): neither is starved. The places of the address go to the processes in
turn (the store's queue of waiting processes per address; docs/distributed.md, *Hosts
behind one address*; ``test_redis_store.py`` checks strict alternation), but an even
split is not asserted: which process leases a host that comes due is a race, and a host
tends to stay with the process that fetched it last (that process knows its next time and
leases it ahead). 2 of 30 runs split the 8 hosts' 180 responses 44 / 136 (about two hosts
and six: docs/scrapy.md)."""


@pytest.mark.skipif(not have_redis_server(), reason="redis-server is not installed")
@SCRAPYS
def test_a_spider_whose_redis_store_dies_closes_at_its_time(tmp_path: Path, scrapy: str) -> None:
    """The Redis server goes away mid-crawl: the spider still closes at its
    ``CLOSESPIDER_TIMEOUT`` plus the scheduler's close (its store gives up retrying at
    the close, ``RidesOutages``), not after the store's calls have each retried their 60 s;
    its leases expire in Redis for the next run."""
    oldest = on_oldest(scrapy)
    web = Web(SLOW_ONE_ADDRESS_SPEC, tmp_path / "web")
    url, server = start_standalone()
    workdir = tmp_path / "a"
    try:
        args = [
            *courtly_args(tmp_path / "unused"),
            "--set",
            "COURTLY_STATE=null",
            "--set",
            f"COURTLY_STORE={json.dumps(url)}",
            "--set",
            f"COURTLY_CRAWL_NAME={json.dumps(new_crawl_name('scrapy'))}",
            "--set",
            "CLOSESPIDER_TIMEOUT=8",
        ]
        proc = start_scrapy(web, workdir, args, oldest=oldest)
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while time.monotonic() < deadline and web.requests_logged < 5:
            time.sleep(0.05)
        stop_server(server)
        killed_at = time.monotonic()
        try:
            proc.wait(RUN_TIMEOUT_S + 150)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail("Scrapy did not finish")
        after_outage_s = time.monotonic() - killed_at
        run = finished(proc, workdir)
    finally:
        stop_server(server)
        web.stop()
    print(f"closed {after_outage_s:.1f} s after the outage")
    assert banner(oldest) in run.output
    # the rest of its 8 s, the close's 5 s and Scrapy's own start and end, where each
    # store call at the close retried 60 s before: a bound 20 s from both
    assert after_outage_s < 45.0, (after_outage_s, run.output[-3000:])
    assert run.stats["finish_reason"] == "closespider_timeout", run.output[-3000:]
    assert "closed (closespider_timeout) with the Redis store unreachable (" in run.output
    assert "Traceback" not in run.output, run.output[-3000:]
    assert run.stat("courtly/store_errors") == 1


@pytest.mark.skipif(not have_redis_server(), reason="redis-server is not installed")
def test_two_processes_share_a_slow_one_address_web(tmp_path: Path) -> None:
    """Each process holds leases only for hosts it can start soon: neither keeps every
    host of the address while its requests wait there, and each gets a fair share
    (shard affinity off, ``?affinity=0``: see the test above)."""
    web = Web(SLOW_ONE_ADDRESS_SPEC, tmp_path / "web")
    url, server = start_standalone()
    try:
        args = [
            *courtly_args(tmp_path / "unused", per_ip=SHARED_PER_IP),
            "--set",
            "COURTLY_STATE=null",
            "--set",
            f"COURTLY_STORE={json.dumps(url + '?affinity=0')}",
            "--set",
            f"COURTLY_CRAWL_NAME={json.dumps(new_crawl_name('scrapy'))}",
            "--barrier",
            str(tmp_path / "barrier"),
            "2",
        ]
        dirs = [tmp_path / "a", tmp_path / "b"]
        procs = [start_scrapy(web, workdir, args) for workdir in dirs]
        deadline = time.monotonic() + RUN_TIMEOUT_S + 30
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for other in procs:
                    other.kill()
                    other.wait()
                pytest.fail("Scrapy did not finish in time")
        runs = [finished(proc, workdir) for proc, workdir in zip(procs, dirs, strict=True)]
        records = web.records()
    finally:
        stop_server(server)
        web.stop()
    report = judge(web, records, per_ip=SHARED_PER_IP)
    for run in runs:
        assert run.returncode == 0, run.output[-3000:]
        assert run.stats["finish_reason"] == "finished", run.output[-3000:]
    assert report.violations == 0, report.summary()
    assert report.max_in_flight_per_host == 1, report.summary()
    assert report.max_in_flight_per_ip <= SHARED_PER_IP, report.summary()
    assert report.coverage == 1.0, report.summary()
    responses = [run.stat("downloader/response_count") for run in runs]
    assert sum(responses) == len(records)
    assert min(responses) >= UNSTARVED_SHARE * sum(responses), (
        responses,
        [run.stat("courtly/address_busy") for run in runs],
    )

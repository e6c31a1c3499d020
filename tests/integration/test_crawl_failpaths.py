"""A crawl's failure paths: a stored bad seed, why fetches failed, a stop that hangs, a
blocked target, and what the command line reports.

The first crawls run on an in-memory fetcher over a real SQLite state directory; the
command-line ones crawl the sandbox web on loopback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner, Result

from courtly.archive.catalogue import CatalogueEntry
from courtly.cli import main as cli_main
from courtly.clock import StepWatch, SystemClock
from courtly.config import CrawlConfig
from courtly.crawl import Crawler
from courtly.errors import FetchError
from courtly.exit_codes import ExitCode, exit_code_for
from courtly.fetch import MemoryFetcher
from courtly.fetch.memory import Reply
from courtly.frontier.config import QueueConfig
from courtly.frontier.politeness import PolitenessConfig
from courtly.store.memory import MemoryStore
from courtly.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from tests.integration.conftest import LeapingClock, LiveWeb
else:  # tests/integration is no package: pytest imports its conftest as "conftest"
    from conftest import LeapingClock

UA = "mybot/1.0 (+https://example.org/bot)"
HTML = {"Content-Type": "text/html"}


def _config(state: Path, *seeds: str, **overrides: object) -> CrawlConfig:
    values: dict[str, object] = {
        "state_dir": state,
        "user_agent": UA,
        "seeds": seeds,
        "min_delay_s": 0.01,
        "delay_factor": 0.0,
        "concurrency": 4,
        "progress_interval_s": 0.1,
        "follow_sitemaps": False,
    }
    values.update(overrides)
    return CrawlConfig(**values)  # type: ignore[arg-type]


def _site(url: str) -> Reply:
    if url.endswith("/robots.txt"):
        return 404
    if url == "http://a.test/":
        links = '<a href="/ok">o</a> <a href="/gone">g</a> <a href="/refused">r</a>'
        return (200, HTML, f"<html><body>{links}</body></html>".encode())
    if url.endswith("/gone"):
        return (404, b"")
    if url.endswith("/refused"):
        raise FetchError("connect", f"{url}: connection refused")
    if url.startswith("http://busy.test/"):
        return (429, {"Retry-After": "3600"}, b"")
    return (200, HTML, b"<html><body>fine</body></html>")


async def _catalogue(state: Path) -> dict[str, CatalogueEntry]:
    store = SqliteStore(state / "frontier.sqlite3", QueueConfig())
    try:
        return {entry.url: entry async for entry in store.catalogue()}
    finally:
        await store.aclose()


MAX_TIME_S = 60.0
"""The crawl's ``max_time``: the test leaps to it once every URL has been answered."""
ANSWERED = ("http://a.test/ok ", "http://a.test/gone ", "http://a.test/refused ")


async def test_the_catalogue_says_why_each_fetch_failed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "S"
    config = _config(state, "http://a.test/", "http://busy.test/", max_time_s=MAX_TIME_S)
    clock = LeapingClock()
    fetcher = MemoryFetcher(_site, clock)

    def logged() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "courtly.crawl"]

    async def leap_once_answered() -> None:
        # busy.test stays throttled (Retry-After 3600 s): only max_time ends this crawl.
        # The crawl's log lines are the evidence, read as they come (no event to wait on).
        while not (  # noqa: ASYNC110
            all(any(line.startswith(url) for line in logged()) for url in ANSWERED)
            and any("http://busy.test/ 429" in line for line in logged())
        ):
            await asyncio.sleep(0.02)
        clock.leap(MAX_TIME_S)

    with caplog.at_level(logging.INFO, logger="courtly.crawl"):
        leaping = asyncio.create_task(leap_once_answered())
        snapshot = await Crawler(config, fetcher=fetcher, clock=clock).run()
    assert leaping.done(), "the crawl stopped before every URL was answered"
    entries = await _catalogue(state)
    assert entries["http://a.test/"].fail_reason is None
    assert entries["http://a.test/ok"].fail_reason is None
    assert entries["http://a.test/gone"].fail_reason == "http_404"
    assert entries["http://a.test/refused"].fail_reason == "connect"
    busy = entries["http://busy.test/"]
    assert (busy.status, busy.fail_reason) == (None, "http_429")  # throttled: not fetched yet
    assert snapshot.stop_reason == "max_time" and exit_code_for(snapshot) is ExitCode.LIMIT
    # -v: one line per URL asked for, saying what came of it
    lines = logged()
    for url in ANSWERED:
        assert any(line.startswith(url) for line in lines), (url, lines)
    assert any("http://busy.test/ 429" in line for line in lines)


async def test_a_stored_bad_seed_is_reported_and_skipped_on_resume(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An older courtly stored seeds unchecked: such a state resumes, without the bad seed."""
    state = tmp_path / "S"
    state.mkdir()
    store = SqliteStore(state / "frontier.sqlite3", QueueConfig())
    old = {"seeds": ["not a url", "http://a.test/", "http:///path"], "scope": "domain"}
    await store.put_blob("crawl", "config", json.dumps(old).encode())
    await store.aclose()
    config = _config(state)  # no seeds: resume what the state holds
    # /refused is retried max_attempts times: after 0.1 s and 0.2 s, not the default 5 s and 10 s
    quick = PolitenessConfig(min_delay_s=0.01, delay_factor=0.0, error_backoff_s=0.1)
    fetcher = MemoryFetcher(_site, SystemClock())
    with caplog.at_level(logging.WARNING, logger="courtly.crawl"):
        snapshot = await Crawler(config, fetcher=fetcher, politeness=quick).run()
    assert snapshot.skipped["invalid_seed"] == 2
    warned = [r.getMessage() for r in caplog.records if "stored seed" in r.getMessage()]
    assert len(warned) == 2 and any("'not a url'" in line for line in warned)
    assert snapshot.pages >= 2 and snapshot.stop_reason == "done"
    store = SqliteStore(state / "frontier.sqlite3", QueueConfig())
    stored = json.loads(await store.get_blob("crawl", "config") or b"{}")
    seeds = await store.seeds()
    await store.aclose()
    assert stored["seeds"] == ["http://a.test/"]  # the state is no longer poisoned
    assert stored["seeds_total"] == 1 and seeds == ["http://a.test/"]  # moved to the seed set


async def test_a_max_time_stop_ends_within_the_stop_grace(tmp_path: Path) -> None:
    """A request that never ends is abandoned at max_time + stop_grace, not waited for."""
    never = asyncio.Event()

    async def hang(url: str) -> Reply:
        if url == "http://hang.test/robots.txt":
            await never.wait()
        return _site(url)

    config = _config(tmp_path / "S", "http://hang.test/", max_time_s=2.0, stop_grace_s=0.2)
    fetcher = MemoryFetcher(hang, SystemClock())
    crawl = Crawler(config, fetcher=fetcher).run()
    snapshot = await asyncio.wait_for(crawl, timeout=60.0)  # a hang would never return
    assert snapshot.stop_reason == "max_time"
    assert fetcher.requests == ["http://hang.test/robots.txt"]  # in flight, then abandoned
    assert snapshot.robots_fetches == 0 and snapshot.in_flight == 0


async def test_a_max_pages_stop_waits_for_no_robots_txt(tmp_path: Path) -> None:
    """A robots.txt that never answers neither holds a unit of --max-pages (the other
    host's pages are made meanwhile) nor the stop: the stop grace is an hour, and the
    crawl ends once the pages are made, its lease released with its URL still queued."""
    never = asyncio.Event()
    asked = asyncio.Event()

    async def hang(url: str) -> Reply:
        if url == "http://hang.test/robots.txt":
            asked.set()
            await never.wait()
        return _site(url)

    seeds = ("http://hang.test/", "http://a.test/")
    config = _config(tmp_path / "S", *seeds, max_pages=2, stop_grace_s=3600.0, concurrency=2)
    store = MemoryStore()
    fetcher = MemoryFetcher(hang, SystemClock())
    began = SystemClock().now()
    crawl = Crawler(config, fetcher=fetcher, store=store).run()
    snapshot = await asyncio.wait_for(crawl, timeout=60.0)  # a hang would never return
    assert asked.is_set()  # the robots.txt was in flight when the pages were made
    assert (snapshot.stop_reason, snapshot.pages, snapshot.in_flight) == ("max_pages", 2, 0)
    counts = await store.counts(SystemClock().now())
    assert counts.leased == 0  # the abandoned robots.txt lease was given back
    assert (await store.host_state("hang.test")).requests_made == 0
    # the abandoned request is followed by its gap, as any (it began after `began`)
    assert (await store.host_state("hang.test")).next_allowed_at >= began + config.min_delay_s
    now = SystemClock().now()
    batch = await store.lease(now + 3600.0, 30.0, 8)
    assert "http://hang.test/" in {lease.url for lease in batch.leases}  # nothing lost


# -- the command line on the sandbox web ------------------------------------------------------


def _cli(*args: str) -> Result:
    return CliRunner().invoke(cli_main, list(args))


def test_a_blocked_target_says_so_and_exits_nothing_fetched(
    small_web: LiveWeb, tmp_path: Path
) -> None:
    """Loopback with the address guard on: the run ends with 5 and names the flag."""
    ip = small_web.server.world.layout.live_ips[0]
    state = tmp_path / "S"
    result = _cli(
        "crawl", f"http://{ip}:{small_web.server.port}/", "--state", str(state),
        "--user-agent", UA, "--max-time", "1.5", "--stop-grace", "0.2",
        "--summary-json", str(tmp_path / "summary.json"),
    )  # fmt: skip
    assert result.exit_code == ExitCode.NOTHING_FETCHED, result.output
    assert "--allow-private-networks" in result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["exit_code"] == ExitCode.NOTHING_FETCHED and summary["pages"] == 0
    assert summary["outcome"] == "nothing_fetched" and summary["config"]["seeds"]


def test_a_run_that_fetched_nothing_says_why_in_the_errors_own_words(tmp_path: Path) -> None:
    """A seed whose robots.txt cannot be read (nothing listens at its port; the same for a
    certificate refused or a name that does not resolve): the last line names the error
    in its own words, not only its count; the summary and ``courtly status`` keep one
    example per kind."""
    with socket.socket() as probe:  # a port nothing listens at
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    seed = f"http://127.0.0.1:{port}/"
    result = _cli(
        "crawl", seed, "--state", str(tmp_path / "S"), "--user-agent", UA,
        "--allow-private-networks", "--max-time", "1.5", "--stop-grace", "0.2",
        "--summary-json", str(tmp_path / "summary.json"),
    )  # fmt: skip
    assert result.exit_code == ExitCode.NOTHING_FETCHED, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("nothing fetched (robots_unreachable=1); robots_unreachable: "), last
    assert f"{seed}robots.txt" in last and "Connect call failed" in last, last
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["error_examples"]["robots_unreachable"] in last
    status = _cli("status", "--state", str(tmp_path / "S"))  # kept with the run's figures
    assert status.exit_code == 0, status.output
    assert "  e.g.     robots_unreachable: " in status.output
    assert "Connect call failed" in status.output


_TLS_SERVER = """
import http.server, ssl, sys
class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html><a href='/two'>two</a></html>" if self.path != "/robots.txt" else b""
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Page)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def test_no_verify_tls_crawls_a_server_whose_certificate_does_not_check_out(
    tmp_path: Path,
) -> None:
    """A self-signed certificate (an unknown authority, for another name): by default the
    robots.txt is unreachable and the run says the certificate was refused;
    ``--no-verify-tls`` (or ``verify-tls = false``) crawls the site."""
    import subprocess
    import sys

    import trustme

    issued = trustme.CA().issue_cert("elsewhere.test")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    (tmp_path / "hosts").write_text("127.0.0.1 tls.test\n")
    server = subprocess.Popen(
        [sys.executable, "-c", _TLS_SERVER, str(cert), str(key)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        seed = f"https://tls.test:{server.stdout.readline().strip()}/"
        hosts = str(tmp_path / "hosts")
        common: tuple[str, ...] = ("--user-agent", UA, "--allow-private-networks")
        common += ("--hosts-file", hosts, "--max-time", "4", "--stop-grace", "0.2")
        refused = _cli("crawl", seed, "--state", str(tmp_path / "A"), *common)
        assert refused.exit_code == ExitCode.NOTHING_FETCHED, refused.output
        assert "certificate verify failed" in refused.output.strip().splitlines()[-1]
        summary = tmp_path / "summary.json"
        crawled = _cli(
            "crawl", seed, "--state", str(tmp_path / "B"), *common, "--no-verify-tls",
            "--summary-json", str(summary),
        )  # fmt: skip
        assert crawled.exit_code == ExitCode.DONE, crawled.output
        data = json.loads(summary.read_text())
        assert data["pages"] == 2 and data["config"]["verify_tls"] is False
    finally:
        server.kill()
        server.communicate()  # reaped, its pipe closed


def test_quiet_prints_nothing_and_the_summary_json_matches_the_exit_code(
    small_web: LiveWeb, tmp_path: Path
) -> None:
    server = small_web.server
    out = tmp_path / "summary.json"
    result = _cli(
        "crawl", "--seeds-file", str(server.seeds_file), "--hosts-file", str(server.hosts_file),
        "--allow-private-networks", "--state", str(tmp_path / "S"), "--user-agent", UA,
        "--min-delay", "0.05", "--max-pages", "2", "--max-time", "60", "-q",
        "--summary-json", str(out),
        # two processes: --max-pages is one budget for the whole crawl, kept exactly
        "--processes", "2",
    )  # fmt: skip
    assert result.exit_code == ExitCode.LIMIT, result.output
    assert result.output == ""  # -q: no progress, no summary
    summary = json.loads(out.read_text())
    assert (summary["exit_code"], summary["stop_reason"]) == (ExitCode.LIMIT, "max_pages")
    assert summary["pages"] == 2 and summary["frontier"]["seen"] >= summary["pages"]
    assert summary["stop_words"] == "stopped by --max-pages"


async def test_a_deadline_passed_during_set_up_starts_no_fetch(tmp_path: Path) -> None:
    """``--max-time`` counts from the start of the run, set-up included (a crawl of many
    seeds takes seconds to queue them): a deadline that passed meanwhile stops the crawl
    before its first request, instead of starting fetches to abandon them after the stop
    grace."""
    asked: list[str] = []

    def site(url: str) -> Reply:
        asked.append(url)
        return _site(url)

    config = _config(tmp_path / "S", "http://a.test/", max_time_s=1e-6)
    snapshot = await Crawler(config, fetcher=MemoryFetcher(site, SystemClock())).run()
    assert asked == [] and snapshot.pages == 0 and snapshot.robots_fetches == 0
    assert snapshot.stop_reason == "max_time"
    assert exit_code_for(snapshot) is ExitCode.LIMIT


@pytest.mark.parametrize("max_depth", [None, 0])
async def test_a_seed_that_redirects_is_crawled_from_its_target(
    tmp_path: Path, max_depth: int | None
) -> None:
    """``http://a.test/`` answering with ``http://www.a.test/``: the target is a seed (its
    host joins a host scope, it is at depth 0), so the crawl goes on from there, and
    ``--max-depth 0`` fetches it too; it is stored with the seeds for a resume."""
    asked: list[str] = []

    def site(url: str) -> Reply:
        asked.append(url)
        if url.endswith("/robots.txt"):
            return 404
        if url == "http://a.test/":
            return (301, {"Location": "http://www.a.test/"}, b"")
        if url == "http://www.a.test/":
            links = '<a href="/p1">1</a> <a href="/p2">2</a> <a href="http://b.test/">b</a>'
            return (200, HTML, f"<html><body>{links}</body></html>".encode())
        return (200, HTML, b"<html><body>fine</body></html>")

    state = tmp_path / "S"
    config = _config(state, "http://a.test/", scope="host", max_depth=max_depth)
    snapshot = await Crawler(config, fetcher=MemoryFetcher(site, SystemClock())).run()
    pages = sorted(url for url in asked if not url.endswith("/robots.txt"))
    if max_depth is None:
        assert pages == [
            "http://a.test/",
            "http://www.a.test/",
            "http://www.a.test/p1",
            "http://www.a.test/p2",
        ]
        assert snapshot.skipped == {"out_of_scope": 1}  # b.test: the seeds' hosts only
    else:
        assert pages == ["http://a.test/", "http://www.a.test/"]
        assert snapshot.skipped == {"too_deep": 3}  # /p1, /p2, b.test (depth first)
    assert snapshot.stop_reason == "done"
    store = SqliteStore(state / "frontier.sqlite3", QueueConfig())
    seeds = await store.seeds()
    await store.aclose()
    assert sorted(seeds) == ["http://a.test/", "http://www.a.test/"]


async def test_a_step_of_the_system_clock_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The crawler's reporter looks at its :class:`StepWatch` at every progress tick and
    says a step (here one the watch reports: a test cannot step the machine's clock)."""
    steps = iter([3600.0])
    monkeypatch.setattr(StepWatch, "look", lambda self: next(steps, None))
    config = _config(tmp_path / "S", "http://busy.test/", max_time_s=0.5)
    fetcher = MemoryFetcher(_site, SystemClock())
    with caplog.at_level(logging.WARNING, logger="courtly.crawl"):
        await Crawler(config, fetcher=fetcher).run()
    stepped = [r.getMessage() for r in caplog.records if "system clock" in r.getMessage()]
    assert stepped == [
        "the system clock was stepped +3600.0 s: politeness waits run on it (a step forward "
        "lets each host's next request go up to that early, once; a step back holds every "
        "host that much longer)"
    ]

"""``courtly crawl --recrawl`` against the sandbox web with pages changing on its clock.

One host of the small sandbox also serves ``courtly.sandbox.changing`` pages (by the
server's own clock): an honest page that never changes, one changing every 2 s, one
with a new ETag on every response. The crawl runs in a subprocess; the test waits for
evidence in the site's log (the changing page fetched in three versions, the still
page answered 304 twice, the lying page fetched four times), then stops it with
SIGINT, and audits the sandbox's request log: no politeness violation of any kind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner
from tests.redis_servers import delete_crawl, have_redis_server, new_crawl_name, standalone_url

from courtly.cli import main as cli_main
from courtly.cli import run_async
from courtly.clock import SystemClock
from courtly.sandbox import SandboxSpec, audit
from courtly.sandbox.changing import ChangingPage, ChangingSite
from courtly.sandbox.world import SandboxWorld
from courtly.store.redis.address import connect

if TYPE_CHECKING:
    from tests.integration.conftest import MIN_DELAY_S, PER_IP, UA, LiveWeb
else:  # tests/integration is no package: pytest imports its conftest as "conftest"
    from conftest import MIN_DELAY_S, PER_IP, UA, LiveWeb

pytestmark = pytest.mark.integration

PAGES = (
    ChangingPage("/watch/still", 1e9),
    ChangingPage("/watch/fast", 2.0),
    ChangingPage("/watch/tags", 1e9, "etag_per_response"),
)
_WAIT_S = 60.0


@pytest.mark.parametrize("how", ["one-process", "partitioned", "redis"])
def test_recrawl_on_the_sandbox_is_polite_gets_304s_and_refetches_changes(
    tmp_path: Path, how: str
) -> None:
    """The same watch over one process, two partitions (the changing host is one's), and
    two fetchers sharing a Redis crawl (its rows and due sets in Redis)."""
    if how == "redis" and not have_redis_server():
        pytest.skip("redis-server is not installed")
    spec = SandboxSpec.small()
    probe = SandboxWorld(spec, 1)
    host = next(h.name for h in probe.layout.hosts if h.robots_variant == "missing" and not h.dead)
    clock = SystemClock()
    site = ChangingSite(PAGES, clock, start_at=clock.now())
    web = LiveWeb(spec, tmp_path / "web", clock=clock, changing={host: site})
    try:
        seeds = [f"http://{host}:{web.server.port}{p.path}" for p in PAGES]
        state = tmp_path / "state"
        command = [
            sys.executable, "-m", "courtly", "crawl", *seeds,
            "--user-agent", UA,
            "--hosts-file", str(web.server.hosts_file), "--allow-private-networks",
            "--min-delay", str(MIN_DELAY_S), "--per-ip", str(PER_IP), "--scope", "host",
            "--max-depth", "0", "--recrawl", "--recrawl-min-interval", "0.5",
            "--recrawl-max-interval", "4", "--max-time", str(_WAIT_S), "-q",
        ]  # fmt: skip
        states = [state]
        shared: list[str] = []
        if how == "one-process":
            command += ["--processes", "1"]
        elif how == "partitioned":
            command += ["--processes", "2"]
        else:
            shared = ["--store", standalone_url(), "--crawl-name", new_crawl_name()]
            command += shared
            states.append(tmp_path / "state2")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        crawls = [subprocess.Popen([*command, "--state", str(s)], env=env) for s in states]
        try:
            _wait_for(lambda: _enough(site), crawls, _WAIT_S)
        finally:
            for crawl in crawls:
                crawl.send_signal(signal.SIGINT)
            for crawl in crawls:
                crawl.wait(timeout=30)
    finally:
        records = web.records()
    report = audit(records, spec_or_truth=spec, min_delay_s=MIN_DELAY_S, per_ip_cap=PER_IP)
    assert report.host_overlaps == 0 and report.ip_over_cap == 0, report.summary()
    assert report.gap_violations == 0 and report.retry_after_violations == 0, report.summary()
    assert report.disallowed_fetches == 0, report.summary()
    assert _enough(site), "the crawl stopped before revisiting enough"
    tags = [r for r in site.log if r.url.endswith("/watch/tags")]
    assert "If-None-Match" not in tags[-1].headers  # a new ETag every time: no longer sent

    # The seeds' small crawler: `courtly crawl --recrawl` over a list, then `courtly changes`.
    where = shared or ["--state", str(state)]
    listed = CliRunner().invoke(cli_main, ["changes", *where])
    assert listed.exit_code == 0, listed.output
    events = [json.loads(line) for line in listed.stdout.splitlines()]
    assert events and {e["url"].rsplit("/", 1)[1] for e in events} == {"fast"}
    assert all(e["status_before"] == e["status"] == 200 for e in events)
    assert all(e["simhash_distance"] is not None and e["title"] is None for e in events)
    later = CliRunner().invoke(cli_main, ["changes", *where, "--since", str(events[-1]["at"])])
    assert later.exit_code == 0 and len(later.stdout.splitlines()) >= 1
    if shared:
        run_async(_drop(shared[1], shared[3]))


async def _drop(url: str, crawl: str) -> None:
    client = connect(url)
    try:
        await delete_crawl(client, crawl)
    finally:
        await client.aclose()


def _enough(site: ChangingSite) -> bool:
    """Three versions of the fast page fetched with 200, two 304s of the still page and
    four fetches of the page with a new ETag every time (two strikes, then not sent)."""
    fast = PAGES[1]
    versions = {site.version(fast, r.at) for r in site.log if r.url.endswith(fast.path)
                and r.status == 200}  # fmt: skip
    not_modified = sum(r.status == 304 for r in site.log if r.url.endswith("/watch/still"))
    tags = sum(r.url.endswith("/watch/tags") for r in site.log)
    return len(versions) >= 3 and not_modified >= 2 and tags >= 4


def _wait_for(
    done: Callable[[], bool], processes: list[subprocess.Popen[bytes]], limit_s: float
) -> None:
    """Poll the site's log (evidence, not time) until ``done`` or a crawl exits."""
    deadline = time.monotonic() + limit_s

    def running() -> bool:
        return all(p.poll() is None for p in processes)

    while not done() and running() and time.monotonic() < deadline:
        time.sleep(0.2)

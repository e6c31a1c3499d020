"""A real browser loads the dashboard of a sandbox crawl: Debian's chromium, headless.

No driver: ``--dump-dom`` prints the DOM once the page's own timers have run for a
virtual 5 s (polling mode: an open event stream would hold virtual time). The test
finds ``data-ready="1"`` (set after the first render), a host row whose reason reads
Crawl-delay, a "why waiting" bar named for each of the 7 delay sources, the queue depth
by priority level, 0 politeness violations, no console error and, in chromium's own network
log (``--log-net-log``), no request of the page and no connection of the browser to
anything but 127.0.0.1 (resolver rules fail every other name), then saves a screenshot
(an artefact in the test's temporary directory). ``.ci/run`` installs chromium where it
is missing; elsewhere the test is skipped without it (``apt-get install chromium``).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from tests.integration.conftest import LiveWeb, crawl_config

from courtly.crawl import Crawler
from courtly.observe.server import Dashboard
from courtly.observe.snapshot import DELAY_SOURCES
from courtly.observe.sources import FileSource
from courtly.sandbox import SandboxSpec

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Every name but the loopback address fails inside the browser: its own update,
    # account and time requests cannot reach the network (no DNS query, no connection).
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--enable-logging=stderr",
    "--window-size=1400,1500",
    "--virtual-time-budget=5000",
)


async def chromium(profile: Path, *args: str) -> tuple[str, str]:
    assert CHROMIUM is not None
    process = await asyncio.create_subprocess_exec(
        CHROMIUM,
        *_FLAGS,
        f"--user-data-dir={profile}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode(errors="replace")[-2000:]
    return out.decode(), err.decode(errors="replace")


@dataclass(frozen=True, slots=True)
class NetworkUse:
    """What chromium's network log (``--log-net-log``) shows it did."""

    page_hosts: frozenset[str]
    """Hosts of the URL requests of the page: the navigation and what it loaded."""
    browser_hosts: frozenset[str]
    """Hosts the browser asked for on its own (update checks, accounts, time)."""
    connected: frozenset[str]
    """Addresses of every TCP connection attempt."""
    dns_queries: int
    """Names looked up on the network (the resolver rules answer every other name)."""


def network_use(net_log: Path) -> NetworkUse:
    data = json.loads(net_log.read_text(encoding="utf-8"))
    names = {number: name for name, number in data["constants"]["logEventTypes"].items()}
    page: set[str] = set()
    browser: set[str] = set()
    connected: set[str] = set()
    dns = 0
    for event in data["events"]:
        kind, params = names.get(event["type"]), event.get("params", {})
        if kind == "URL_REQUEST_START_JOB" and "url" in params:
            host = urlsplit(params["url"]).hostname or ""
            own = params.get("initiator") == "not an origin"
            (browser if own and params.get("request_type") != "main frame" else page).add(host)
        elif kind == "TCP_CONNECT_ATTEMPT" and "address" in params:
            connected.add(params["address"].rsplit(":", 1)[0])
        elif kind == "DNS_TRANSACTION_QUERY":
            dns += 1
    return NetworkUse(frozenset(page), frozenset(browser), frozenset(connected), dns)


SOURCE_LABELS = {
    "min_delay": "min delay",
    "fetch_time": "k \u00d7 fetch time",
    "crawl_delay": "Crawl-delay",
    "retry_after": "Retry-After",
    "backoff": "back-off",
    "parked": "parked",
    "robots_unreachable": "robots.txt unreachable",
    "address_busy": "address busy",
    "resumed": "resumed after a crash",
}
"""What the page calls each delay source (its ``SOURCES``)."""

CRAWL_DELAY_S = 5.0
"""The Crawl-delay of the test web's crawl-delay host. A host's reason is the largest
term of its last delay: with the small web's 0.1 s, twice a fetch time of over 50 ms
(a loaded machine) read "k x fetch time", and the page had no Crawl-delay row to find.
That host is a hostile one (its big page takes long to read): 5 s holds against
fetches of up to 2.5 s."""


async def test_the_page_renders_in_a_browser(
    serve_web: Callable[[SandboxSpec], LiveWeb], tmp_path: Path
) -> None:
    web = serve_web(replace(SandboxSpec.small(), hang_s=3.0, crawl_delay_s=CRAWL_DELAY_S))
    config = crawl_config(web, tmp_path / "state", progress_interval_s=0.2, max_pages=120)
    final = await Crawler(config).run()
    assert final.pages > 0
    async with Dashboard(FileSource(config.state_dir)) as served:
        url = served.url + "?poll=1"
        net_log = tmp_path / "net-log.json"
        dom, log = await chromium(
            tmp_path / "profile-dom", f"--log-net-log={net_log}", "--dump-dom", url
        )
        (tmp_path / "dom.html").write_text(dom, encoding="utf-8")  # an artefact, as the shot
        shot = tmp_path / "dashboard.png"
        await chromium(tmp_path / "profile-shot", f"--screenshot={shot}", url)
    assert 'data-ready="1"' in dom
    assert re.search(r'<td class="reason" data-reason="crawl_delay">Crawl-delay</td>', dom)
    # why waiting: a bar for every delay source, by name, 0 included
    sources = re.search(r'<div class="bars" id="sources">(.*?)</div></section>', dom, re.S)
    assert sources is not None
    shown = re.findall(r'<span class="name">([^<]+)</span>', sources.group(1))
    assert shown == [SOURCE_LABELS[s] for s in DELAY_SOURCES]
    # queue depth by priority level: the front tier's levels, then the back tier
    assert "front level 0 (most urgent)" in dom and "back (per-host)" in dom
    tile = re.search(r'<div class="v">(\d+)</div><div class="l">politeness violations', dom)
    assert tile is not None and tile.group(1) == "0"
    console = [line for line in log.splitlines() if "CONSOLE" in line]
    assert [line for line in console if "error" in line.lower()] == []
    assert shot.stat().st_size > 10_000
    used = network_use(net_log)
    assert used.page_hosts == {"127.0.0.1"}, used  # the page loads nothing from elsewhere
    assert used.connected == {"127.0.0.1"}, used  # nor does the browser connect elsewhere
    assert used.dns_queries == 0, used

"""A real browser loads the dashboard of a sandbox crawl: Debian's chromium, headless.

No driver: ``--dump-dom`` prints the DOM once the page's own timers have run for a
virtual 5 s (polling mode: an open event stream would hold virtual time). The test
finds ``data-ready="1"`` (set after the first render), a host row whose reason reads
Crawl-delay, 0 politeness violations and no console error, then saves a screenshot
(an artefact in the test's temporary directory). Skipped where chromium is missing
(``apt-get install chromium``).
"""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest
from tests.integration.conftest import LiveWeb, crawl_config

from courtly.crawl import Crawler
from courtly.observe.server import Dashboard
from courtly.observe.sources import FileSource

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


async def test_the_page_renders_in_a_browser(small_web: LiveWeb, tmp_path: Path) -> None:
    config = crawl_config(small_web, tmp_path / "state", progress_interval_s=0.2, max_pages=120)
    final = await Crawler(config).run()
    assert final.pages > 0
    async with Dashboard(FileSource(config.state_dir)) as served:
        url = served.url + "?poll=1"
        dom, log = await chromium(tmp_path / "profile-dom", "--dump-dom", url)
        shot = tmp_path / "dashboard.png"
        await chromium(tmp_path / "profile-shot", f"--screenshot={shot}", url)
    assert 'data-ready="1"' in dom
    assert re.search(r'<td class="reason" data-reason="crawl_delay">Crawl-delay</td>', dom)
    tile = re.search(r'<div class="v">(\d+)</div><div class="l">politeness violations', dom)
    assert tile is not None and tile.group(1) == "0"
    console = [line for line in log.splitlines() if "CONSOLE" in line]
    assert [line for line in console if "error" in line.lower()] == []
    assert shot.stat().st_size > 10_000

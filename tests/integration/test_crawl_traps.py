"""The sandbox's calendar trap costs at most the template-walk bound per host."""

from __future__ import annotations

from pathlib import Path

import pytest

from courtly.cli import run_async
from courtly.clock import SystemClock
from courtly.config import CrawlConfig
from courtly.crawl import Crawler, CrawlSnapshot
from courtly.frontier.traps import WalkConfig
from courtly.sandbox import SandboxSpec, SandboxWorld
from courtly.sandbox.in_memory import world_fetcher
from courtly.sandbox.urls import split_url

pytestmark = pytest.mark.integration

UA = "courtly-test/1.0 (+https://courtly.invalid/bot)"
_TRAP_WEB = SandboxSpec(
    n_sites=1,
    hosts_per_site=3,
    pages_per_host=6,
    robots_variants=("missing",),
    slow_hosts=0,
    flaky_hosts=0,
    dead_hosts=0,
    trap_hosts=3,
    hostile_hosts=0,
    special_pages=False,
    redirects=False,
    sitemaps=False,
)


def test_a_calendar_costs_at_most_the_bound_per_host(tmp_path: Path) -> None:
    """The crawl runs until its frontier is empty (the bound ends every trap), so this
    holds "however long the crawl": without the bound it would never end."""
    world = SandboxWorld(_TRAP_WEB, 8080)
    fetcher = world_fetcher(world, SystemClock())
    config = CrawlConfig(
        state_dir=tmp_path / "state",
        user_agent=UA,
        seeds=world.seeds(),
        min_delay_s=0.0,
        delay_factor=0.0,
        store="memory",
        follow_sitemaps=False,
        scope="host",
        max_time_s=300.0,  # a safety net only: the crawl ends by itself
    )
    snapshot: CrawlSnapshot = run_async(Crawler(config, fetcher=fetcher).run())
    assert snapshot.stop_reason != "max_time"
    walks = WalkConfig()
    bound = 2 * walks.max_chain + 1  # one entry (the front page), both directions
    calendar: dict[str, int] = {}
    deep: dict[str, int] = {}
    for url in fetcher.requests:
        host, _, path = split_url(url)
        if path.startswith("/calendar/"):
            calendar[host] = calendar.get(host, 0) + 1
        if path.startswith("/deep/"):
            deep[host] = deep.get(host, 0) + 1
    assert set(calendar) == {h.name for h in world.hosts}  # every host has its trap
    assert all(0 < count <= bound for count in calendar.values()), calendar
    assert snapshot.skipped.get("template_chain", 0) >= len(calendar)
    # the ever-deeper path (two links a page): the tree up to walk_from, then the budget
    tree = 2 ** (walks.walk_from + 1) - 1
    assert all(0 < count <= tree + walks.max_walking for count in deep.values()), deep
    assert len(fetcher.requests) == len(set(fetcher.requests))

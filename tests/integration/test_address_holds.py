"""One process on a web of many hosts behind one address holds leases only for the
hosts it can start soon: its per-IP places and as many waiting, no more.

The leases held are read from the store (the frontier's ``leased`` count) each time
the dispatcher waits; the sandbox's request log is audited.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from courtly.crawl import Crawler
from courtly.event_loop import run_async
from courtly.fetch.address_holds import holds_per_address
from courtly.sandbox import SandboxSpec, audit

if TYPE_CHECKING:
    from tests.integration.conftest import (
        MIN_DELAY_S,
        PER_IP,
        LiveWeb,
        assert_polite,
        crawl_config,
    )
else:  # tests/integration is no package: pytest imports its conftest as "conftest"
    from conftest import MIN_DELAY_S, PER_IP, LiveWeb, assert_polite, crawl_config

pytestmark = pytest.mark.integration


def one_address_spec() -> SandboxSpec:
    """Eight slow hosts (20 ms an answer) behind one address: requests queue there."""
    return SandboxSpec(
        n_sites=2,
        hosts_per_site=4,
        pages_per_host=25,
        ips=1,
        robots_variants=("rules", "missing", "wildcard", "token_open"),
        slow_hosts=8,
        slow_s=0.02,
        flaky_hosts=0,
        dead_hosts=0,
        trap_hosts=0,
        hostile_hosts=0,
        special_pages=False,
        external_links=False,
    )


class _Watched(Crawler):
    """Reads the leases out in the store each time the dispatcher waits."""

    most_leased = 0
    samples = 0

    async def _idle(self, wait_s: float) -> None:
        if not self._stopping:
            counts = await self.frontier.counts()
            self.most_leased = max(self.most_leased, counts.leased)
            self.samples += 1
        await super()._idle(wait_s)


def test_one_process_holds_no_more_hosts_of_an_address_than_it_can_start(
    tmp_path: Path,
) -> None:
    web = LiveWeb(one_address_spec(), tmp_path / "web")
    try:
        # 16 fetchers: without the rule every ready host of the address is leased
        config = crawl_config(web, tmp_path / "state", concurrency=16, store="memory")
        crawler = _Watched(config)
        snapshot = run_async(crawler.run())
        records = web.records()
    finally:
        web.stop()
    report = audit(
        records,
        spec_or_truth=web.server.truth,
        min_delay_s=MIN_DELAY_S,
        per_ip_cap=PER_IP,
        user_agent_token="courtly",
        seeds=web.server.seeds,
    )
    print(report.summary())
    assert_polite(report)
    assert snapshot.stop_reason == "done"
    assert report.coverage == 1.0, report.summary()
    assert crawler.samples > 0
    # 8 hosts ready at once (the seeds) and 16 fetchers: the rule is what bounds it
    assert crawler.most_leased <= holds_per_address(PER_IP), crawler.most_leased
    assert crawler.addresses_busy > 0  # hosts were given back for their address

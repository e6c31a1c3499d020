"""Four ``courtly crawl`` processes on one crawl in the shared Redis Cluster.

The issue's politeness target for the cluster: with four fetcher processes, not one
violation of any kind in the sandbox's request log (one request in flight per host,
every gap, the per-IP cap of the whole crawl, robots.txt, no page twice), every
page reached, and nothing left queued or leased. The heavier run (a larger web, a
master killed mid-crawl) is ``benchmarks/redis_crawl.py cluster``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner
from tests.redis_servers import cluster_url, delete_crawl, have_redis_server, new_crawl_name

from courtly.cli import main as cli_main
from courtly.cli import run_async
from courtly.store.redis.address import connect

if TYPE_CHECKING:
    from tests.integration.conftest import LiveWeb, assert_polite, audit_web
    from tests.integration.test_redis_crawl import (
        COVERAGE_FLOOR,
        finite_spec,
        start_fetcher,
        wait_all,
    )
else:  # tests/integration is no package: pytest puts its directory on the path
    from test_redis_crawl import COVERAGE_FLOOR, finite_spec, start_fetcher, wait_all

    from conftest import LiveWeb, assert_polite, audit_web

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not have_redis_server(), reason="redis-server is not installed"),
]

FETCHERS = 4


async def _cleanup(store: str, crawl: str) -> None:
    client = connect(store)
    try:
        await delete_crawl(client, crawl)
    finally:
        await client.aclose()


def test_four_fetchers_on_the_cluster_crawl_with_no_violation(tmp_path: Path) -> None:
    store, crawl = cluster_url(), new_crawl_name("four")
    web = LiveWeb(finite_spec(), tmp_path / "web")
    try:
        fetchers = [start_fetcher(web, store, crawl, tmp_path / f"f{i}") for i in range(FETCHERS)]
        codes = wait_all(fetchers)
        logs = [(tmp_path / f"f{i}.log").read_text() for i in range(FETCHERS)]
        assert codes == [0] * FETCHERS, logs
        records = web.records()
        result = CliRunner().invoke(
            cli_main, ["status", "--store", store, "--crawl-name", crawl, "--json"]
        )
        assert result.exit_code == 0, result.output
        frontier = json.loads(result.output)["frontier"]
    finally:
        web.stop()
        run_async(_cleanup(store, crawl))
    report = audit_web(web, records)
    print(report.summary())
    assert_polite(report)
    robots = Counter(r.host for r in records if r.path == "/robots.txt")
    assert max(robots.values()) == 1, robots  # once per host for the whole crawl
    assert report.coverage >= COVERAGE_FLOOR, report.summary()
    assert frontier["queued"] == 0 and frontier["leased"] == 0, frontier

"""Three ``courtly crawl`` processes on a Redis Cluster that changes under them.

Mid-crawl a fourth master joins and shard slots move to it (``redis-cli --cluster
add-node`` and ``reshard``); then a master holding other shards is SIGKILLed and its
replica takes over. Audited from the sandbox's request log: before the kill, not one
violation of any kind (the move lost nothing and leased nothing twice); after it,
what asynchronous replication may cost (a lease, a completion or an ADD the dead
master acknowledged and never replicated) is counted, and it touches only the dead
master's hosts and addresses. Every page served is catalogued and nothing is left
queued or leased.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner
from redis.crc import key_slot
from tests.redis_servers import RedisCluster, have_redis_server

from courtly.cli import main as cli_main
from courtly.sandbox import AuditReport
from courtly.sandbox.request_log import RequestRecord
from courtly.store.redis.codec import shard_of, url_authority

if TYPE_CHECKING:
    from tests.integration.conftest import LiveWeb, audit_web
    from tests.integration.test_redis_crawl import (
        CONCURRENCY,
        COVERAGE_FLOOR,
        finite_spec,
        has_archived,
        start_fetcher,
        wait_all,
    )
else:  # tests/integration is no package: pytest puts its directory on the path
    from test_redis_crawl import (
        CONCURRENCY,
        COVERAGE_FLOOR,
        finite_spec,
        has_archived,
        start_fetcher,
        wait_all,
    )

    from conftest import LiveWeb, audit_web

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not have_redis_server(), reason="redis-server is not installed"),
]

FETCHERS = 3
SHARDS = 64
"""The layout a crawl gets by default (``RedisLayout``)."""
MOVED_SLOTS = 300
"""``reshard`` moves the lowest slots of the master holding slot 0: these many."""
MIN_DELAY_S = 0.5
"""Long enough that the crawl outlasts the move and the kill (10 pages a host)."""


def audited(web: LiveWeb, records: list[RequestRecord]) -> AuditReport:
    return audit_web(web, records, min_delay_s=MIN_DELAY_S)


def shard_slot(crawl: str, host_key: str) -> int:
    shard = shard_of(host_key, SHARDS)
    return int(key_slot(f"{crawl}:{{{crawl}.{shard}}}:m".encode()))


def ip_slot(crawl: str, ip: str) -> int:
    return int(key_slot(f"{crawl}:ip:{ip}".encode()))


def crawl_moving_a_host(hosts: list[str]) -> str:
    """A crawl name under which at least one host's shard is among the moved slots."""
    for _ in range(10_000):
        crawl = f"courtly-test-cluster-{uuid.uuid4().hex[:12]}"
        if any(shard_slot(crawl, host) < MOVED_SLOTS for host in hosts):
            return crawl
    raise LookupError("no crawl name moves a host")


def test_fetchers_crawl_through_a_reshard_and_a_master_failover(tmp_path: Path) -> None:
    spec = replace(finite_spec(), pages_per_host=10)
    web = LiveWeb(spec, tmp_path / "web")
    cluster = RedisCluster().start(masters=3, replicas=1)
    try:
        hosts = [url_authority(url) for url in web.server.base_urls.values()]
        crawl = crawl_moving_a_host(hosts)
        store = cluster.url
        fetchers = [
            start_fetcher(web, store, crawl, tmp_path / f"f{i}", MIN_DELAY_S)
            for i in range(FETCHERS)
        ]
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline and not any(
            has_archived(tmp_path / f"f{i}") for i in range(FETCHERS)
        ):
            time.sleep(0.05)
        source = cluster.owner_of(0)
        new = cluster.add_master()
        subprocess.run(
            cluster.reshard_command(source, new, MOVED_SLOTS),
            check=True,
            stdout=subprocess.DEVNULL,
            timeout=120,
        )
        moved = [h for h in hosts if shard_slot(crawl, h) < MOVED_SLOTS]
        assert moved and all(cluster.owner_of(shard_slot(crawl, h)) == new for h in moved)
        owners = Counter(cluster.owner_of(shard_slot(crawl, h)) for h in hosts)
        victim = max((port for port in owners if port != new), key=lambda port: owners[port])
        dead_hosts = {
            h.partition(":")[0] for h in hosts if cluster.owner_of(shard_slot(crawl, h)) == victim
        }
        dead_ips = {
            ip
            for ip in set(web.server.hosts.values())
            if cluster.owner_of(ip_slot(crawl, ip)) == victim
        }
        assert [f.poll() for f in fetchers] == [None] * FETCHERS, "the crawl ended too soon"
        cluster.kill(victim)
        killed_at = web.server.clock.now()
        codes = wait_all(fetchers)
        assert codes == [0] * FETCHERS, [(tmp_path / f"f{i}.log").read_text() for i in range(3)]
        records = web.records()
        runner = CliRunner()
        result = runner.invoke(
            cli_main, ["status", "--store", store, "--crawl-name", crawl, "--json"]
        )
        assert result.exit_code == 0, result.output
        frontier = json.loads(result.output)["frontier"]
        exported = tmp_path / "catalogue.jsonl"
        result = runner.invoke(
            cli_main, ["export", "--store", store, "--crawl-name", crawl, "-o", str(exported)]
        )
        assert result.exit_code == 0, result.output
    finally:
        web.stop()
        cluster.stop()

    before = audited(web, [r for r in records if r.end_at < killed_at])
    whole = audited(web, records)
    spared = audited(
        web,
        [r for r in records if r.host.partition(":")[0] not in dead_hosts and r.ip not in dead_ips],
    )
    after_kill = sorted(
        r.start_at - killed_at
        for r in records
        if r.start_at > killed_at and r.host.partition(":")[0] in dead_hosts
    )
    print("before the kill:", before.summary())
    print("whole crawl:", whole.summary())
    first = after_kill[0] if after_kill else float("nan")
    print(
        f"failover: {len(dead_hosts)} of {len(hosts)} hosts on the killed master; first "
        f"request to one of them {first:.1f} s after the kill"
    )
    # the move mid-crawl: not one violation of any kind, no page fetched twice
    assert before.violations == 0, before.summary()
    # the failover: what the dead master had not replicated costs only its own hosts
    assert spared.violations == 0, spared.summary()
    assert whole.duplicate_fetches <= FETCHERS * CONCURRENCY, whole.summary()
    assert whole.coverage >= COVERAGE_FLOOR, whole.summary()
    # nothing lost: every page served is catalogued, nothing is left queued or leased
    assert frontier["queued"] == 0 and frontier["leased"] == 0, frontier
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    catalogued = {(urlsplit(row["url"]).hostname, urlsplit(row["url"]).path) for row in rows}
    served = {
        (r.host.partition(":")[0], r.path) for r in records if not r.path.startswith("/robots")
    }
    assert served - catalogued == set()

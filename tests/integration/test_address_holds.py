"""One process on a web of many hosts behind one address holds leases only for the
hosts it can start soon: while its requests wait for a place at the address, no more
than its per-IP places and as many waiting.

Each lease the dispatcher starts is checked against the fetches out (every host is on
the one address) and the fetcher's count of requests waiting for a place; every fetch
that ends was held by that rule or given back untouched, those of the first lease
step (the address not yet resolved) included; the sandbox's request log is audited.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from courtly.crawl import Crawler
from courtly.event_loop import run_async
from courtly.fetch.address_holds import holds_per_address
from courtly.fetch.dns import DnsCache
from courtly.fetch.hosts import load_hosts_file
from courtly.frontier.records import Lease
from courtly.sandbox.audit import AuditReport

if TYPE_CHECKING:
    from tests.integration.conftest import (
        PER_IP,
        LiveWeb,
        assert_polite,
        audit_web,
        crawl_config,
        one_address_spec,
    )
else:  # tests/integration is no package: pytest imports its conftest as "conftest"
    from conftest import (
        PER_IP,
        LiveWeb,
        assert_polite,
        audit_web,
        crawl_config,
        one_address_spec,
    )

pytestmark = pytest.mark.integration


class _Watched(Crawler):
    """Checks each lease the dispatcher starts against the fetches it has out (all on
    the web's one address) and the requests waiting for a place there."""

    started = 0
    started_while_busy = 0
    """Leases started while this process had its places and as many more out at the
    address, and requests of its own waited there."""
    ended = 0
    ended_held = 0
    """Fetches that ended holding a place in the rule's count of their address."""
    given_back_by_fetches = 0
    """Leases a fetch gave back untouched: its address, unknown when it started, had no
    room once resolved."""

    def _fetch_ended(self, task: asyncio.Task[None]) -> None:
        self.ended += 1
        self.ended_held += task in self._held_at
        super()._fetch_ended(task)

    async def _release_busy(self, lease: Lease, ip: str, now: float) -> None:
        self.given_back_by_fetches += asyncio.current_task() in self._fetches.tasks
        await super()._release_busy(lease, ip, now)

    def _start_fetches(
        self, group: asyncio.TaskGroup, leases: Sequence[Lease], now: float
    ) -> tuple[list[Lease], list[tuple[Lease, str]]]:
        started: list[Lease] = []
        busy: list[tuple[Lease, str]] = []
        assert self._http is not None
        for lease in leases:
            out = self._in_flight
            waiting = self._http.waiting_for_ip
            one_started, one_busy = super()._start_fetches(group, [lease], now)
            if one_started:
                self.started += 1
                if out >= holds_per_address(PER_IP) and waiting > 0:
                    self.started_while_busy += 1
            started += one_started
            busy += one_busy
        return started, busy


def _crawl(
    tmp_path: Path, pages_per_host: int, kind: type[_Watched]
) -> tuple[_Watched, AuditReport]:
    """``kind`` crawls the one-address web with 16 fetchers (8 hosts: without the rule
    every ready host of the address is leased), politely and to its end."""
    web = LiveWeb(one_address_spec(pages_per_host), tmp_path / "web")
    try:
        config = crawl_config(web, tmp_path / "state", concurrency=16, store="memory")
        crawler = kind(config)
        snapshot = run_async(crawler.run())
        records = web.records()
    finally:
        web.stop()
    report = audit_web(web, records)
    print(report.summary())
    assert_polite(report)
    assert snapshot.stop_reason == "done"
    assert report.coverage == 1.0, report.summary()
    return crawler, report


def test_one_process_holds_no_more_hosts_of_an_address_than_it_can_start(
    tmp_path: Path,
) -> None:
    crawler, report = _crawl(tmp_path, 25, _Watched)
    assert crawler.started >= report.hosts  # the check saw the crawl's leases
    # 8 hosts and 16 fetchers: without the rule, every ready host is leased while the
    # requests out wait for the address
    assert crawler.started_while_busy == 0
    assert crawler.addresses_busy > 0  # hosts were given back for their address
    # every fetch that ended was held by the rule (the hosts file's addresses are known)
    assert crawler.ended == crawler.ended_held


class _Resolving(_Watched):
    """Resolves the web's names through a resolver, as on the real web, instead of the
    hosts file's fixed answers: no address is known before its first lookup."""

    async def _start(self) -> None:
        await super()._start()
        assert self._http is not None and self.config.hosts_file is not None
        names = load_hosts_file(self.config.hosts_file)

        async def resolve(host: str) -> list[str]:
            await asyncio.sleep(0.001)
            return list(names[host])

        self._http.dns = DnsCache(self._clock, resolver_fn=resolve)


def test_the_first_leases_of_an_unresolved_address_are_held_by_the_same_rule(
    tmp_path: Path,
) -> None:
    """The first lease step meets every address unresolved: each fetch resolves its
    address first and is held by the rule, or gives its lease back untouched."""
    crawler, _ = _crawl(tmp_path, 10, _Resolving)
    assert crawler.ended == crawler.ended_held + crawler.given_back_by_fetches
    # 16 fetchers, 8 hosts: the first step leased more than the rule holds
    assert crawler.given_back_by_fetches > 0

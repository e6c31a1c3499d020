"""Resuming a crawl reuses its state: seeds, robots.txt decisions, politeness across runs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from courtly.config import CrawlConfig
from courtly.crawl import Crawler
from courtly.sandbox import SandboxServer, SandboxSpec, audit, load_log

UA = "courtly/0.1 (+mailto:ops@example.org)"


@pytest.mark.integration
async def test_a_resumed_crawl_keeps_robots_decisions_and_politeness(tmp_path: Path) -> None:
    async with SandboxServer(SandboxSpec.small(), workdir=tmp_path / "web") as web:
        first = CrawlConfig(
            state_dir=tmp_path / "state",
            user_agent=UA,
            seeds=tuple(web.seeds),
            hosts_file=web.hosts_file,
            allow_private_networks=True,
            min_delay_s=0.05,
            max_time_s=3.0,
            concurrency=8,
            connect_timeout_s=1.0,
            total_timeout_s=2.0,
            progress_interval_s=0.5,
        )
        snapshot = await Crawler(first).run()
        assert snapshot.pages > 0
        split_at = time.time()
        # The same state directory, no seeds given: the crawl resumes from what it stored.
        second = first.with_overrides(seeds=(), max_time_s=3.0)
        resumed = await Crawler(second).run()
        records = load_log(web.log_path)
    assert resumed.pages > 0
    ok_before = {
        r.host
        for r in records
        if r.start_at < split_at and r.path == "/robots.txt" and r.status == 200
    }
    after = [r for r in records if r.start_at >= split_at]
    assert ok_before and after
    # Hosts whose robots.txt answered 200 are not asked again within the cache lifetime.
    asked_again = [r.host for r in after if r.path == "/robots.txt" and r.host in ok_before]
    assert asked_again == []
    assert {r.host for r in after} & ok_before, "the resumed run fetched from those hosts"
    report = audit(
        records,
        spec_or_truth=web.truth,
        min_delay_s=first.min_delay_s,
        per_ip_cap=first.per_ip,
        seeds=web.seeds,
    )
    assert report.violations == 0, report.summary()

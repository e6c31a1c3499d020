"""The dashboard beside a real crawl of the sandbox: /api/snapshot, /api/hosts, /metrics,
/events while it runs, and ``courtly dashboard --state`` on the finished crawl."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.integration.conftest import LiveWeb, crawl_config
from tests.redis_servers import delete_crawl, have_redis_server, new_crawl_name, standalone_url

from courtly.crawl import Crawler, Page
from courtly.events import Event, Tick
from courtly.frontier.config import QueueConfig
from courtly.observe.attach import DashboardSpec, serving
from courtly.observe.server import Dashboard
from courtly.observe.snapshot import DELAY_SOURCES, schema_errors
from courtly.observe.sources import FileSource
from courtly.store.redis.address import connect

LEVELS = QueueConfig().levels
"""A crawl's front-tier levels (the default)."""
_BOUNDED_LABELS = {"status_class", "state", "delay_source", "result", "kind", "tier", "level", "le"}


class _FirstTick:
    """Sets an event at the first tick: evidence that a snapshot is being served."""

    def __init__(self) -> None:
        self.seen = asyncio.Event()

    def notify(self, event: Event) -> None:
        if isinstance(event, Tick):
            self.seen.set()


def check_metrics(text: str) -> dict[str, Any]:
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for family in families.values():
        assert family.name.startswith("courtly_"), family.name
        if family.type == "counter":
            assert all(s.name.endswith("_total") for s in family.samples), family.name
        series = {(s.name, tuple(sorted(s.labels.items()))) for s in family.samples}
        for sample in family.samples:
            assert set(sample.labels) <= _BOUNDED_LABELS, (family.name, sample.labels)
        if family.type != "histogram":
            assert len(series) <= 10, (family.name, len(series))
    return families


async def first_sse_event(session: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with session.get(url + "events") as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        async for raw in response.content:
            line = raw.decode().rstrip("\n")
            if line.startswith("data: "):
                data: dict[str, Any] = json.loads(line[6:])
                return data
    raise AssertionError("the event stream ended without a snapshot")


async def test_dashboard_serves_a_live_crawl(small_web: LiveWeb, tmp_path: Path) -> None:
    config = crawl_config(small_web, tmp_path / "state", progress_interval_s=0.1, max_pages=120)
    seen_live: dict[str, Any] = {}
    first = _FirstTick()
    live: dict[str, Any] = {}  # the dashboard's address and a client session, once up

    async def on_page(page: Page) -> None:
        if seen_live:
            return
        seen_live["started"] = True
        await first.seen.wait()  # a tick has happened: the source holds a snapshot
        session, url = live["session"], live["url"]
        async with session.get(url + "api/snapshot") as r:
            assert r.status == 200
            seen_live["snapshot"] = await r.json()
        async with session.get(url + "api/hosts?sort=queued&n=5") as r:
            assert r.status == 200
            seen_live["hosts"] = (await r.json())["hosts"]
        async with session.get(url + "metrics") as r:
            seen_live["metrics"] = await r.text()
        seen_live["event"] = await first_sse_event(session, url)

    crawler = Crawler(config, on_page=on_page)
    spec = DashboardSpec("127.0.0.1", 0, None)
    spec.for_crawler(crawler)
    crawler.events.subscribe(first)

    async with serving(spec, lambda _: None) as dashboard, aiohttp.ClientSession() as session:
        url = dashboard.url
        live.update(session=session, url=url)
        final = await crawler.run()
        assert final.pages > 0
        async with session.get(url + "api/hosts?sort=delay&n=100") as r:
            final_hosts = (await r.json())["hosts"]
        async with session.get(url + "api/hosts?sort=nope") as r:
            assert r.status == 400
        async with session.get(url) as r:
            page = await r.text()
            assert 'data-ready="0"' in page
            # offline: nothing loaded from elsewhere (the w3.org names are XML namespaces)
            assert re.findall(r"https?://(?!www\.w3\.org/)", page) == []
            assert re.findall(r"<(?:script|link|img)[^>]+(?:src|href)=\"(?!data:)", page) == []

    assert schema_errors(seen_live["snapshot"]) == []
    assert schema_errors(seen_live["event"]) == []
    assert seen_live["snapshot"]["running"] is True
    assert len(seen_live["hosts"]) <= 5
    families = check_metrics(seen_live["metrics"])
    assert {"courtly_fetches", "courtly_fetch_duration_seconds", "courtly_hosts"} <= set(families)
    assert families["courtly_fetch_duration_seconds"].type == "histogram"
    # every host waited for a reason that has a name; the sandbox's Crawl-delay hosts show it
    assert {h["delay_source"] for h in final_hosts} <= set(DELAY_SOURCES)
    crawl_delayed = [h for h in final_hosts if h["crawl_delay_s"]]
    assert crawl_delayed and any(h["delay_source"] == "crawl_delay" for h in crawl_delayed)
    assert final.observed["violations"] == {"overlap": 0, "early": 0}

    # courtly dashboard --state DIR: the finished crawl, from its status.json
    async with Dashboard(FileSource(config.state_dir)) as served, aiohttp.ClientSession() as s:
        async with s.get(served.url + "api/snapshot") as r:
            snapshot = await r.json()
        async with s.get(served.url + "api/hosts?sort=errors&n=3") as r:
            assert len((await r.json())["hosts"]) <= 3
        async with s.get(served.url + "metrics") as r:
            check_metrics(await r.text())
    assert schema_errors(snapshot) == [] and snapshot["running"] is False
    assert snapshot["pages"] == final.pages


async def test_a_token_is_asked_for_when_given(tmp_path: Path) -> None:
    (tmp_path / "status.json").write_text("{}", encoding="utf-8")
    source = FileSource(tmp_path)
    async with Dashboard(source, token="s3cret") as served, aiohttp.ClientSession() as s:
        async with s.get(served.url + "api/hosts") as r:
            assert r.status == 401
        async with s.get(served.url + "api/hosts?token=s3cret") as r:
            assert r.status == 200
        headers = {"Authorization": "Bearer s3cret"}
        async with s.get(served.url + "api/snapshot", headers=headers) as r:
            assert r.status == 503  # authorised; no snapshot in that status.json


@pytest.mark.skipif(not have_redis_server(), reason="redis-server is not installed")
async def test_a_redis_crawl_charts_queue_depth_by_level(
    small_web: LiveWeb, tmp_path: Path
) -> None:
    """The Redis store's front depth per level reaches the live page and /metrics."""
    crawl_name = new_crawl_name("dash")
    config = crawl_config(
        small_web,
        tmp_path / "state",
        progress_interval_s=0.1,
        max_pages=60,
        store=standalone_url(),
        crawl_name=crawl_name,
    )
    seen: dict[str, Any] = {}
    first = _FirstTick()
    live: dict[str, Any] = {}

    async def on_page(page: Page) -> None:
        if seen:
            return
        seen["started"] = True
        await first.seen.wait()
        session, url = live["session"], live["url"]
        async with session.get(url + "api/snapshot") as r:
            seen["snapshot"] = await r.json()
        async with session.get(url + "metrics") as r:
            seen["metrics"] = await r.text()

    crawler = Crawler(config, on_page=on_page)
    spec = DashboardSpec("127.0.0.1", 0, None)
    spec.for_crawler(crawler)
    crawler.events.subscribe(first)
    try:
        async with serving(spec, lambda _: None) as dashboard, aiohttp.ClientSession() as s:
            live.update(session=s, url=dashboard.url)
            final = await crawler.run()
    finally:
        client = connect(standalone_url())
        try:
            await delete_crawl(client, crawl_name)
        finally:
            await client.aclose()
    assert final.pages > 0
    snap = seen["snapshot"]
    assert schema_errors(snap) == []
    levels = snap["front_queued_by_level"]
    assert len(levels) == LEVELS  # one count per level, from Redis
    assert sum(levels) == snap["frontier"]["front_queued"]  # the same atomic read
    family = check_metrics(seen["metrics"])["courtly_front_queue_urls"]
    assert sorted(s.labels["level"] for s in family.samples) == [str(i) for i in range(LEVELS)]
    assert final.observed["front_queued_by_level"] and final.observed["violations"] == {
        "overlap": 0,
        "early": 0,
    }

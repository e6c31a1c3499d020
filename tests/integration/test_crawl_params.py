"""Tracking parameters in a crawl: tagged duplicates fetched once, robots.txt checked
against the URL that is requested (the canonical one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from courtly.cli import run_async
from courtly.clock import SystemClock
from courtly.config import CrawlConfig
from courtly.crawl import Crawler, CrawlSnapshot
from courtly.fetch.memory import MemoryFetcher

pytestmark = pytest.mark.integration

UA = "courtly-test/1.0 (+https://courtly.invalid/bot)"
_HTML = {"Content-Type": "text/html"}
_FRONT = (
    b"<a href='/a?utm_source=news&utm_medium=mail'>a</a>"
    b"<a href='/a?fbclid=XYZ'>a again</a><a href='/a'>a once more</a>"
    b"<a href='/b?id=1&gclid=q'>b</a><a href='/b?id=1&keep=1&utm_campaign=c'>b2</a>"
    b"<a href='/private/p?utm_source=x'>private</a>"
    b"<a href='/tagged?x=1&utm_source=y'>only tagged urls are disallowed</a>"
)


def _handler(url: str) -> tuple[int, dict[str, str], bytes]:
    if url.endswith("/robots.txt"):
        return (
            200,
            {"Content-Type": "text/plain"},
            b"User-agent: *\nDisallow: /private\nDisallow: /*utm_source=\n",
        )
    if url == "http://a.test/":
        return (200, _HTML, _FRONT)
    return (200, _HTML, b"<p>leaf</p>")


def _crawl(tmp_path: Path, **values: object) -> tuple[CrawlSnapshot, list[str]]:
    config = CrawlConfig(
        state_dir=tmp_path / "state",
        user_agent=UA,
        seeds=("http://a.test/?utm_source=seed",),
        min_delay_s=0.0,
        delay_factor=0.0,
        store="memory",
        follow_sitemaps=False,
        max_time_s=60.0,
        **values,  # type: ignore[arg-type]
    )
    fetcher = MemoryFetcher(_handler, SystemClock())
    snapshot = run_async(Crawler(config, fetcher=fetcher).run())
    return snapshot, [u for u in fetcher.requests if not u.endswith("/robots.txt")]


def test_tagged_links_are_one_url_and_robots_judges_the_requested_url(tmp_path: Path) -> None:
    snapshot, fetched = _crawl(tmp_path)
    assert sorted(fetched) == [
        "http://a.test/",
        "http://a.test/a",
        "http://a.test/b?id=1",
        "http://a.test/b?id=1&keep=1",
        "http://a.test/tagged?x=1",  # requested untagged: the tag-only rule cannot match
    ]
    assert len(fetched) == len(set(fetched))
    assert snapshot.skipped.get("robots") == 1  # /private/p, its tag dropped


def test_keep_param_keeps_a_tag(tmp_path: Path) -> None:
    _, fetched = _crawl(tmp_path / "keep", keep_params=("fbclid",), drop_params=("keep",))
    assert "http://a.test/a?fbclid=XYZ" in fetched and "http://a.test/a" in fetched
    assert "http://a.test/b?id=1&keep=1" not in fetched

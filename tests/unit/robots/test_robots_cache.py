"""RobotsCache policy (pure time), authorities, and the single-flight helper."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.errors import InvalidURL
from courtly.fetch.records import FetchResult
from courtly.robots import (
    RobotsCache,
    RobotsFetchOutcome,
    authority_of,
    parse,
    robots_url_for,
)
from courtly.robots.authority import _authority_by_yarl
from courtly.url import canonicalize

A = ("https", "example.org", 443)
UA = "courtly/0.1"
T0 = 1_700_000_000.0
DAY_S = 86_400.0


def ok(
    text: str = "User-agent: *\nDisallow: /private\nCrawl-delay: 3\nSitemap: https://example.org/s.xml\n",
) -> RobotsFetchOutcome:
    return RobotsFetchOutcome("ok", parse(text), 200, "https://example.org/robots.txt", 0, None)


def unavailable() -> RobotsFetchOutcome:
    return RobotsFetchOutcome(
        "unavailable", None, 404, "https://example.org/robots.txt", 0, "HTTP 404"
    )


def unreachable(retry_after: str | None = None) -> RobotsFetchOutcome:
    headers = (("Retry-After", retry_after),) if retry_after is not None else ()
    result = FetchResult("https://example.org/robots.txt", 503, headers, b"", T0, T0)
    return RobotsFetchOutcome(
        "unreachable", None, 503, "https://example.org/robots.txt", 0, "HTTP 503", (result,)
    )


@pytest.mark.parametrize(
    ("url", "authority", "robots_url"),
    [
        (
            "https://example.org/a?b#c",
            ("https", "example.org", 443),
            "https://example.org/robots.txt",
        ),
        ("HTTP://Example.ORG:80/", ("http", "example.org", 80), "http://example.org/robots.txt"),
        (
            "http://example.org:8080/x",
            ("http", "example.org", 8080),
            "http://example.org:8080/robots.txt",
        ),
        ("http://[::1]:8080/x", ("http", "::1", 8080), "http://[::1]:8080/robots.txt"),
        (
            "https://b\u00fccher.de./x",
            ("https", "xn--bcher-kva.de", 443),
            "https://xn--bcher-kva.de/robots.txt",
        ),
    ],
)
def test_authority_and_robots_url(
    url: str, authority: tuple[str, str, int], robots_url: str
) -> None:
    assert authority_of(url) == authority
    assert robots_url_for(url) == robots_url
    assert robots_url_for(authority) == robots_url


@pytest.mark.parametrize("url", ["ftp://example.org/x", "/relative", "mailto:a@b.c", "http://"])
def test_authority_of_rejects_non_http_urls(url: str) -> None:
    with pytest.raises(InvalidURL):
        authority_of(url)


_urls = st.builds(
    "{}://{}{}{}{}".format,
    st.sampled_from(["http", "https", "HTTP", "Https", "ftp"]),
    st.sampled_from(["", "", "user@", "u:p@"]),
    st.one_of(
        st.from_regex(r"[a-zA-Z0-9_-]{1,8}(\.[a-zA-Z0-9_-]{1,8}){0,3}\.?", fullmatch=True),
        st.sampled_from(["b\u00fccher.de", "127.0.0.1", "127.000.0.1", "[::1]", "a b", "a..b", ""]),
    ),
    st.sampled_from(["", ":80", ":443", ":8080", ":08080", ":", ":65536", ":0"]),
    st.sampled_from(["", "/", "/x?q#f", "?q", "#f", "/a/../b"]),
)


def _canonical_or_same(url: str) -> str:
    try:
        return canonicalize(url)
    except InvalidURL:
        return url


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        _urls,
        _urls.map(_canonical_or_same),
        st.sampled_from(["http://a.b:65536/", "http://a b/", "http://a..b/", "https://-a.b:08/"]),
    )
)
def test_the_canonical_shortcut_reads_the_authority_yarl_reads(url: str) -> None:
    try:
        expected = _authority_by_yarl(url)
    except InvalidURL:
        with pytest.raises(InvalidURL):
            authority_of(url)
        return
    assert authority_of(url) == expected


def test_unknown_authority_needs_a_fetch() -> None:
    assert RobotsCache().lookup(A, T0) is None


def test_ok_copy_is_used_for_the_ttl_then_needs_a_refetch() -> None:
    cache = RobotsCache()
    stored = cache.store(A, ok(), T0)
    assert stored.kind == "ok"
    decision = cache.lookup(A, T0 + DAY_S - 1)
    assert decision is stored
    assert not decision.allowed("https://example.org/private", UA)
    assert decision.allowed("https://example.org/public", UA)
    assert cache.lookup(A, T0 + DAY_S) is None


def test_ttl_is_configurable() -> None:
    cache = RobotsCache(ttl_s=60.0)
    cache.store(A, ok(), T0)
    assert cache.lookup(A, T0 + 59) is not None
    assert cache.lookup(A, T0 + 60) is None


def test_decision_exposes_crawl_delay_and_sitemaps() -> None:
    decision = RobotsCache().store(A, ok(), T0)
    assert decision.crawl_delay_s(UA) == 3.0
    assert decision.sitemaps == ["https://example.org/s.xml"]
    assert decision.fetched_at == T0


def test_unavailable_allows_everything_for_the_ttl() -> None:
    cache = RobotsCache()
    decision = cache.store(A, unavailable(), T0)
    assert decision.kind == "unavailable"
    assert decision.allowed("/anything", UA)
    assert cache.lookup(A, T0 + DAY_S - 1) is decision
    assert cache.lookup(A, T0 + DAY_S) is None


def test_unreachable_without_a_copy_disallows_everything_and_retries_with_back_off() -> None:
    cache = RobotsCache(retry_initial_s=60.0, retry_max_s=600.0)
    now = T0
    expected_waits = [60.0, 120.0, 240.0, 480.0, 600.0, 600.0]
    for wait_s in expected_waits:
        decision = cache.store(A, unreachable(), now)
        assert decision.kind == "unreachable"
        assert not decision.allowed("/x", UA)
        assert decision.allowed("/robots.txt", UA)
        assert decision.valid_until_at == now + wait_s
        assert cache.lookup(A, now + wait_s - 1) is decision
        assert cache.lookup(A, now + wait_s) is None
        now += wait_s


def test_retry_delay_doubles_and_caps() -> None:
    cache = RobotsCache(retry_initial_s=60.0, retry_max_s=3_600.0)
    assert [cache.retry_delay_s(n) for n in (1, 2, 3, 7, 1_000)] == [
        60.0,
        120.0,
        240.0,
        3_600.0,
        3_600.0,
    ]


def test_retry_after_lengthens_the_wait_up_to_the_cap() -> None:
    cache = RobotsCache(retry_initial_s=60.0, retry_max_s=3_600.0)
    assert cache.store(A, unreachable("900"), T0).valid_until_at == T0 + 900
    assert cache.store(A, unreachable("999999"), T0 + 900).valid_until_at == T0 + 900 + 3_600


def test_unreachable_serves_the_last_good_copy_even_if_stale() -> None:
    cache = RobotsCache()
    cache.store(A, ok(), T0)
    later = T0 + 3 * DAY_S
    assert cache.lookup(A, later) is None
    decision = cache.store(A, unreachable(), later)
    assert decision.kind == "stale"
    assert decision.fetched_at == T0
    assert decision.allowed("/public", UA)
    assert not decision.allowed("/private", UA)
    again = cache.store(A, unreachable(), later + 60)
    assert again.kind == "stale"
    assert again.valid_until_at == later + 60 + 120


def test_good_copy_is_still_served_after_a_long_outage() -> None:
    cache = RobotsCache()
    cache.store(A, ok(), T0)
    decision = cache.store(A, unreachable(), T0 + 60 * DAY_S)
    assert decision.kind == "stale"


def test_long_outage_without_a_copy_becomes_allow_all() -> None:
    cache = RobotsCache(outage_allow_after_s=30 * DAY_S)
    first = cache.store(A, unreachable(), T0)
    assert first.kind == "unreachable"
    assert cache.store(A, unreachable(), T0 + 30 * DAY_S - 1).kind == "unreachable"
    decision = cache.store(A, unreachable(), T0 + 30 * DAY_S)
    assert decision.kind == "outage"
    assert decision.allowed("/anything", UA)


def test_a_404_is_not_a_good_copy_for_an_outage() -> None:
    cache = RobotsCache()
    cache.store(A, unavailable(), T0)
    decision = cache.store(A, unreachable(), T0 + 2 * DAY_S)
    assert decision.kind == "unreachable"
    assert not decision.allowed("/x", UA)


def test_recovery_ends_the_outage_and_resets_back_off() -> None:
    cache = RobotsCache(retry_initial_s=60.0)
    for step in range(4):
        cache.store(A, unreachable(), T0 + step)
    cache.store(A, ok(), T0 + 10)
    decision = cache.store(A, unreachable(), T0 + 10 + DAY_S)
    assert decision.kind == "stale"
    assert decision.valid_until_at == T0 + 10 + DAY_S + 60


def test_authorities_are_independent() -> None:
    cache = RobotsCache()
    other = ("http", "example.org", 80)
    cache.store(A, ok(), T0)
    assert cache.lookup(other, T0) is None
    assert A in cache and other not in cache
    assert len(cache) == 1
    cache.forget(A)
    assert len(cache) == 0


def test_prune_drops_long_stale_entries() -> None:
    cache = RobotsCache(ttl_s=100.0)
    cache.store(A, ok(), T0)
    cache.store(("http", "b", 80), ok(), T0 + 1_000)
    assert cache.prune(T0 + 1_000, keep_stale_s=500.0) == 1
    assert A not in cache and len(cache) == 1


def test_invalid_configuration_is_refused() -> None:
    with pytest.raises(ValueError):
        RobotsCache(ttl_s=0)
    with pytest.raises(ValueError):
        RobotsCache(retry_initial_s=100, retry_max_s=10)


async def test_get_or_fetch_coalesces_concurrent_callers() -> None:
    cache = RobotsCache()
    calls = 0
    gate = asyncio.Event()

    async def fetch() -> RobotsFetchOutcome:
        nonlocal calls
        calls += 1
        await gate.wait()
        return ok()

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(cache.get_or_fetch(A, fetch, T0)) for _ in range(20)]
        await asyncio.sleep(0)
        assert cache.is_fetching(A)
        gate.set()
    decisions = {id(task.result()) for task in tasks}
    assert calls == 1
    assert len(decisions) == 1
    assert not cache.is_fetching(A)
    assert await cache.get_or_fetch(A, fetch, T0 + 1) is tasks[0].result()
    assert calls == 1


async def test_get_or_fetch_refetches_when_stale() -> None:
    cache = RobotsCache(ttl_s=10.0)
    calls = 0

    async def fetch() -> RobotsFetchOutcome:
        nonlocal calls
        calls += 1
        return ok()

    await cache.get_or_fetch(A, fetch, T0)
    await cache.get_or_fetch(A, fetch, T0 + 5)
    await cache.get_or_fetch(A, fetch, T0 + 10)
    assert calls == 2


async def test_a_waiter_takes_over_when_the_fetching_caller_is_cancelled() -> None:
    cache = RobotsCache()
    started = asyncio.Event()

    async def hanging_fetch() -> RobotsFetchOutcome:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("never reached")

    async def quick_fetch() -> RobotsFetchOutcome:
        return unavailable()

    leader = asyncio.create_task(cache.get_or_fetch(A, hanging_fetch, T0))
    await started.wait()
    waiter = asyncio.create_task(cache.get_or_fetch(A, quick_fetch, T0))
    await asyncio.sleep(0)
    leader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await leader
    decision = await waiter
    assert decision.kind == "unavailable"
    assert not cache.is_fetching(A)


async def test_a_failing_fetch_raises_for_its_caller_only() -> None:
    cache = RobotsCache()

    async def broken_fetch() -> RobotsFetchOutcome:
        await asyncio.sleep(0)
        raise RuntimeError("bug")

    async def good_fetch() -> RobotsFetchOutcome:
        return ok()

    leader = asyncio.create_task(cache.get_or_fetch(A, broken_fetch, T0))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(cache.get_or_fetch(A, good_fetch, T0))
    with pytest.raises(RuntimeError):
        await leader
    assert (await waiter).kind == "ok"

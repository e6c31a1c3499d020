"""Leases taken ahead of a host's allowed time, and the dispatcher's own idle-while-ready
measure (fake clocks)."""

from __future__ import annotations

import asyncio
import itertools
import math
from collections import defaultdict
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from courtly.clock import FakeClock, SystemClock
from courtly.config import CrawlConfig
from courtly.crawl import Crawler, CrawlSnapshot
from courtly.crawl.dispatch import LEASE_AHEAD_S, ReadyWaits, timer_delay_s, wait_until
from courtly.events import HostStateChanged
from courtly.fetch.memory import MemoryFetcher
from courtly.fetch.records import FetchResult
from courtly.frontier.records import HostState, Lease

UA = "courtly/0.1 (+https://courtly.invalid/bot; tests@courtly.invalid)"


class _EarlyClock(FakeClock):
    """A fake clock whose sleeps return when only part of the delay has passed."""

    async def sleep(self, delay_s: float) -> None:
        await super().sleep(min(delay_s, max(delay_s * 0.3, 1e-4)))


def test_wait_until_never_returns_before_its_time_even_on_a_clock_that_wakes_early() -> None:
    clock = _EarlyClock()
    at = clock.now() + 0.5

    async def run() -> float:
        await wait_until(clock, at)
        return clock.now()

    assert asyncio.run(run()) >= at
    before = clock.now()
    asyncio.run(wait_until(clock, before - 1.0))  # already due: no sleep at all
    assert clock.now() == before


@given(
    now_s=st.floats(min_value=0.0, max_value=1e7, allow_nan=False),
    left_s=st.floats(min_value=0.0, max_value=120.0, allow_nan=False),
    started_late_ms=st.integers(min_value=0, max_value=3),
)
def test_the_timer_delay_fires_at_the_first_millisecond_at_or_after_the_target(
    now_s: float, left_s: float, started_late_ms: int
) -> None:
    """uvloop's timer as libuv runs it: started at the loop's time (the monotonic clock
    truncated to the millisecond, read when the timer starts: that many milliseconds
    later than ``now_s`` at most), it fires once the loop's time reaches the start plus
    the delay rounded to whole milliseconds. With the delay asked for, it fires at or
    after the target, and on time no more than a millisecond after it."""
    now_ms = now_s * 1000.0
    target_ms = now_ms + left_s * 1000.0
    start_ms = math.floor(now_ms) + started_late_ms
    fires_ms = start_ms + round(timer_delay_s(left_s, now_s) * 1000)
    assert fires_ms >= target_ms
    assert fires_ms - started_late_ms <= target_ms + 1.0


def test_wait_until_on_uvloop_never_returns_before_its_time() -> None:
    import uvloop

    async def run() -> list[float]:
        clock = SystemClock()
        early = []
        for i in range(20):
            at = clock.now() + 0.0003 * i + 0.0001
            await wait_until(clock, at)
            early.append(at - clock.now())
        return early

    assert all(gap <= 0.0 for gap in uvloop.run(run()))


class _Recorded(Crawler):
    """Records, for every lease, when its task began and the host's allowed time."""

    entered: list[tuple[str, float, float]]

    async def _process(self, lease: Lease) -> None:
        self.entered.append((lease.url, self._clock.now(), lease.host.next_allowed_at))
        await super()._process(lease)


def _crawl(
    tmp_path: Path, hosts: int, pages: int, fetchers: int, delay_s: float, elapsed_s: float
) -> tuple[CrawlSnapshot, list[tuple[str, float, float]], dict[str, list[tuple[float, float]]]]:
    """A fake-clock crawl of ``hosts`` chains of ``pages``; what each lease's task saw on
    entry (url, now, allowed) and each host's request (start, end) times."""
    clock = FakeClock()
    starts: dict[str, list[tuple[float, float]]] = defaultdict(list)

    async def handler(url: str) -> FetchResult:
        started = clock.now()
        await clock.sleep(elapsed_s)  # the exchange takes time on the fake clock
        now = clock.now()
        starts[url.split("/")[2]].append((started, now))
        if url.endswith("/robots.txt"):
            return FetchResult(url, 404, (), b"", started, now)
        n = int(url.rsplit("/p", 1)[-1]) if "/p" in url else 0
        link = f'<a href="/p{n + 1}">next</a>' if n + 1 < pages else ""
        body = f"<html><body>{link}</body></html>".encode()
        return FetchResult(url, 200, (("Content-Type", "text/html"),), body, started, now)

    async def crawl() -> tuple[CrawlSnapshot, _Recorded]:
        config = CrawlConfig(
            state_dir=tmp_path / f"s{hosts}-{pages}-{fetchers}-{delay_s}-{elapsed_s}",
            user_agent=UA,
            seeds=tuple(f"http://h{i}.test/" for i in range(hosts)),
            min_delay_s=delay_s,
            delay_factor=0.0,
            concurrency=fetchers,  # pinned: an autoscaler would sample the fake clock
            store="memory",
            follow_sitemaps=False,
            progress_interval_s=60.0,
        )
        fetcher = MemoryFetcher(handler, clock)
        crawler = _Recorded(config, clock=clock, fetcher=fetcher)
        crawler.entered = []
        return await crawler.run(), crawler

    snapshot, crawler = asyncio.run(crawl())
    assert snapshot.stop_reason == "done"
    assert snapshot.pages == hosts * pages
    return snapshot, crawler.entered, starts


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    hosts=st.integers(1, 8),
    pages=st.integers(2, 5),
    fetchers=st.integers(1, 9),
    delay_s=st.sampled_from([0.01, 0.05, 0.5]),
    elapsed_s=st.sampled_from([0.0, 0.003, 0.04]),
)
def test_a_lease_taken_ahead_never_starts_its_request_before_the_allowed_time(
    tmp_path: Path, hosts: int, pages: int, fetchers: int, delay_s: float, elapsed_s: float
) -> None:
    _, _, starts = _crawl(tmp_path, hosts, pages, fetchers, delay_s, elapsed_s)
    # No request to a host started before the end of its previous one plus the gap.
    for host, times in starts.items():
        for (_, end), (start, _) in itertools.pairwise(times):
            assert start >= end + delay_s - 1e-9, (host, times)


def test_with_fetchers_to_spare_hosts_are_leased_ahead_and_fetched_on_time(tmp_path: Path) -> None:
    _, entered, starts = _crawl(tmp_path, 2, 4, 4, 0.5, 0.0)
    ahead = [(url, at, allowed) for url, at, allowed in entered if at < allowed]
    assert ahead  # the dispatcher leased before the allowed time ...
    assert all(allowed - at <= LEASE_AHEAD_S + 1e-6 for _, at, allowed in ahead)  # not earlier
    for times in starts.values():  # ... and each request started at its allowed time
        for (_, end), (start, _) in itertools.pairwise(times):
            assert end + 0.5 - 1e-9 <= start


def _host(key: str, allowed: float, retired: str | None = None) -> HostState:
    return HostState(key, next_allowed_at=allowed, retired=retired)


def _lease(key: str, allowed: float) -> Lease:
    return Lease(
        1, key, f"http://{key}/", 0, allowed - LEASE_AHEAD_S, allowed + 60, _host(key, allowed)
    )


def test_ready_waits_counts_a_due_hosts_wait_only_while_a_fetcher_could_serve_it() -> None:
    waits = ReadyWaits()
    waits.note(0.0, 2)  # free from 0
    # the host's previous lease ended at 0.2; it was allowed again at 0.5
    waits.notify(HostStateChanged(0.2, _host("a", 0.5)))
    waits.note(1.0, 0)  # every fetcher busy from 1
    waits.note(2.0, 1)  # free again from 2
    waits.leased(_lease("a", 0.5), 2.2)
    waits.begun("a", 2.5)
    # 0.5-1 and 2-2.2 unleased with a free fetcher, 2.2-2.5 leased and not yet sent;
    # 1-2 every fetcher was busy: capacity, not idleness
    assert abs(waits.wait_s - 1.0) < 1e-9
    assert (waits.requests, waits.waited) == (1, 1)
    # requeued after it was allowed: due from the requeue; leased and begun at once
    waits.notify(HostStateChanged(3.0, _host("b", 2.9)))
    waits.leased(_lease("b", 2.9), 3.0)
    waits.begun("b", 3.0)
    assert (waits.requests, waits.waited) == (2, 1)
    # a first lease of the run (no previous end) is not measured; nor is a retired host
    waits.leased(_lease("c", 0.0), 4.0)
    waits.begun("c", 4.0)
    waits.notify(HostStateChanged(4.0, _host("b", 4.0)))
    waits.notify(HostStateChanged(4.1, _host("b", 4.1, retired="dead")))
    waits.leased(_lease("b", 4.1), 5.0)
    waits.begun("b", 5.0)
    assert waits.requests == 2
    summary = waits.summary()
    assert summary["fetchers_idle_while_ready_s"] == 1.0
    assert summary["requests_measured"] == 2


def test_ready_waits_shares_one_free_fetcher_among_the_hosts_due_at_once() -> None:
    waits = ReadyWaits()
    waits.note(0.0, 1)
    for key in ("a", "b", "c", "d"):
        waits.notify(HostStateChanged(0.0, _host(key, 1.0)))
    # one fetcher free from 1 to 3 while four hosts are due: 2 fetcher-seconds idle, not 8
    for key in ("a", "b", "c", "d"):
        waits.leased(_lease(key, 1.0), 3.0)
        waits.begun(key, 3.0)
    assert abs(waits.wait_s - 2.0) < 1e-9
    assert abs(waits.max_wait_s - 0.5) < 1e-9
    # more free fetchers than due hosts: each host's whole wait counts
    waits.note(3.0, 10)
    waits.notify(HostStateChanged(3.0, _host("a", 3.5)))
    waits.leased(_lease("a", 3.5), 4.0)
    waits.begun("a", 4.0)
    assert abs(waits.wait_s - 2.5) < 1e-9


def test_ready_waits_leaves_out_hosts_whose_queue_ran_empty_and_leases_taken_ahead() -> None:
    held = {"a": False, "b": True}
    waits = ReadyWaits(held.__getitem__)
    waits.note(0.0, 5)
    # a's queue ran empty at 0: not ready, though due at 0.5; its next URL comes in later
    waits.notify(HostStateChanged(0.0, _host("a", 0.5)))
    waits.leased(_lease("a", 0.5), 9.0)
    waits.begun("a", 9.0)
    assert waits.requests == 0
    # b leased 50 ms ahead of its time: the wait for its time is not idleness; a timer
    # firing 2 ms late is
    waits.notify(HostStateChanged(0.0, _host("b", 10.0)))
    waits.leased(_lease("b", 10.0), 10.0 - LEASE_AHEAD_S)
    waits.begun("b", 10.002)
    assert waits.requests == 1
    assert abs(waits.wait_s - 0.002) < 1e-9


def test_wait_until_on_the_system_clock_never_returns_early() -> None:
    clock = SystemClock()

    async def run() -> list[float]:
        late: list[float] = []
        for delay_s in (0.0004, 0.003, 0.0105, 0.02):
            at = clock.now() + delay_s
            await wait_until(clock, at)
            late.append(clock.now() - at)
        return late

    assert all(late >= 0 for late in asyncio.run(run()))

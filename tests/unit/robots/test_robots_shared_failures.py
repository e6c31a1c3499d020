"""An unreachable robots.txt's retry schedule is kept with the stored copies, so every
process of a shared crawl (and a resumed run) keeps to one schedule: the 60 s, doubling,
of ``RobotsCache``, counted across the processes that tried."""

from __future__ import annotations

import pytest

from courtly.clock import FakeClock
from courtly.errors import StateError
from courtly.fetch.records import FetchResult
from courtly.robots import RobotsCache, authority_of
from courtly.robots.fetch import RobotsFetchOutcome
from courtly.robots.parse import parse
from courtly.robots.persist import FailureRecord, failure_from_bytes, failure_to_bytes
from courtly.robots_lease import StoredRobots
from courtly.store.memory import MemoryStore

AUTHORITY = authority_of("http://a.test/")
DOWN = RobotsFetchOutcome("unreachable", None, None, "http://a.test/robots.txt", 0, "refused")
BODY = b"User-agent: *\nDisallow: /private\n"
EXCHANGE = FetchResult("http://a.test/robots.txt", 200, (), BODY, 999.0, 999.5)
UP = RobotsFetchOutcome("ok", parse(BODY), 200, "http://a.test/robots.txt", 0, None, (EXCHANGE,))


def test_a_failure_record_round_trips_and_a_bad_one_is_refused() -> None:
    record = FailureRecord(3, 1_000.0, 1_300.5, 1_060.25)
    assert failure_from_bytes(failure_to_bytes(record)) == record
    for bad in (b"", b"{", b'{"v": 9}', b'{"v": 1, "failures": "x"}', b"[1]"):
        with pytest.raises(StateError):
            failure_from_bytes(bad)


def processes(clock: FakeClock, n: int) -> list[StoredRobots]:
    """``n`` processes of one shared crawl, each with its own cache (the store is passed
    to each call)."""
    return [StoredRobots(RobotsCache(), clock, shared=True) for _ in range(n)]


async def test_the_retry_schedule_holds_across_the_processes_that_try() -> None:
    clock = FakeClock(1_000.0)
    store = MemoryStore()
    first, second = processes(clock, 2)
    down = await first.keep(store, AUTHORITY, DOWN, clock.now())
    assert down.kind == "unreachable" and down.valid_until_at == 1_060.0
    clock.advance(10.0)
    seen = await second.known(store, AUTHORITY)  # not tried again by the other process
    assert seen is not None and seen.kind == "unreachable" and seen.valid_until_at == 1_060.0
    assert not seen.allowed("http://a.test/page", "courtly")
    clock.advance(51.0)
    assert await second.known(store, AUTHORITY) is None  # due: the second try
    again = await second.keep(store, AUTHORITY, DOWN, clock.now())
    assert again.valid_until_at == clock.now() + 120.0  # the second failure: doubled
    clock.advance(1.0)
    third = await first.known(store, AUTHORITY)  # the first process learns of it
    assert third is not None and third.valid_until_at == again.valid_until_at


async def test_a_failure_keeps_the_last_good_copy_and_a_success_ends_it() -> None:
    clock = FakeClock(1_000.0)
    store = MemoryStore()
    first, second, third = processes(clock, 3)
    await first.keep(store, AUTHORITY, UP, clock.now())
    clock.advance(86_400.0 + 1.0)  # the copy is stale: refetched, and the server is down
    assert await first.known(store, AUTHORITY) is None
    await first.keep(store, AUTHORITY, DOWN, clock.now())
    clock.advance(1.0)
    stale = await second.known(store, AUTHORITY)
    assert stale is not None and stale.kind == "stale"  # the good rules, obeyed
    assert stale.allowed("http://a.test/page", "courtly")
    assert not stale.allowed("http://a.test/private", "courtly")
    clock.advance(60.0)
    assert await second.known(store, AUTHORITY) is None
    await second.keep(store, AUTHORITY, UP, clock.now())  # back up
    clock.advance(1.0)
    fresh = await third.known(store, AUTHORITY)  # the old failure record is out of date
    assert fresh is not None and fresh.kind == "ok"


async def test_a_resumed_run_keeps_to_the_schedule() -> None:
    clock = FakeClock(1_000.0)
    store = MemoryStore()
    before = StoredRobots(RobotsCache(), clock, shared=False)
    await before.keep(store, AUTHORITY, DOWN, clock.now())
    clock.advance(30.0)
    after = StoredRobots(RobotsCache(), clock, shared=False)  # a new run on the same state
    waiting = await after.known(store, AUTHORITY)
    assert waiting is not None and waiting.kind == "unreachable"
    assert waiting.valid_until_at == 1_060.0

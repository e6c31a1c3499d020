"""SqliteStore across close and reopen: everything but the leases comes back."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from pathlib import Path

import pytest

from courtly.archive.catalogue import CatalogueEntry
from courtly.errors import StateError
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import AddStatus, DelaySource, QueuedUrl
from courtly.store.sqlite import SqliteStore

T0 = 1_000.0
TTL_S = 30.0
NO_BUDGET = BudgetConfig(max_queued_per_host=None)
QUEUES = QueueConfig(levels=3, max_back_queues=2)


def url(host: str, path: str, level: int = 0) -> QueuedUrl:
    return QueuedUrl(f"http://{host}/{path}", host, level, 1)


def open_store(path: Path, **options: object) -> SqliteStore:
    return SqliteStore(path, QUEUES, rng=random.Random(3), **options)  # type: ignore[arg-type]


async def test_leases_are_void_after_reopen_and_tokens_keep_increasing(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    store = open_store(path)
    await store.add([url("a.test", f"p{i}") for i in range(3)], T0, NO_BUDGET)
    held = (await store.lease(T0, TTL_S, 1)).leases[0]
    await store.aclose()

    store = open_store(path)
    counts = await store.counts(T0)
    assert counts.leased == 0 and counts.queued == 3
    again = (await store.lease(T0, TTL_S, 1)).leases[0]
    assert again.url == held.url == "http://a.test/p0"
    assert again.token > held.token
    # a completion of the lease from before the restart is fenced
    assert await store.complete(held, held.host, (), T0, NO_BUDGET) is None
    await store.aclose()


async def test_host_keeps_its_next_allowed_time(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    store = open_store(path)
    await store.add([url("slow.test", "1"), url("slow.test", "2")], T0, NO_BUDGET)
    lease = (await store.lease(T0, TTL_S, 1)).leases[0]
    state = replace(lease.host, next_allowed_at=T0 + 50.0, requests_made=1)
    await store.complete(lease, state, (), T0, NO_BUDGET)
    await store.aclose()

    store = open_store(path)
    batch = await store.lease(T0 + 1.0, TTL_S, 4)
    assert batch.leases == () and batch.next_ready_at == T0 + 50.0
    assert (await store.host_state("slow.test")) == state
    assert [le.url for le in (await store.lease(T0 + 50.0, TTL_S, 4)).leases] == [
        "http://slow.test/2"
    ]
    await store.aclose()


async def test_resume_guard_holds_every_host(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    store = open_store(path)
    await store.add([url("a.test", "1"), url("b.test", "1")], T0, NO_BUDGET)
    await store.lease(T0, TTL_S, 1)
    await store.aclose()

    store = open_store(path, resume_guard_s=5.0)
    batch = await store.lease(T0 + 100.0, TTL_S, 4)
    assert batch.leases == () and batch.next_ready_at == T0 + 105.0
    assert len((await store.lease(T0 + 105.0, TTL_S, 4)).leases) == 2
    await store.aclose()


async def test_a_host_leased_at_a_crash_waits_as_after_a_failure(tmp_path: Path) -> None:
    """A 503 with Retry-After answered just before a kill -9 is lost with its step; the
    host that was leased at the crash is held ``resume_in_flight_s``, the others only
    the guard."""
    path = tmp_path / "frontier.db"
    store = open_store(path, commit_interval_s=3600.0)
    await store.add([url(h, str(i)) for h in ("a.test", "b.test") for i in (1, 2)], T0, NO_BUDGET)
    a, b = sorted((await store.lease(T0, TTL_S, 2)).leases, key=lambda le: le.host_key)
    await store.flush()  # the leases are committed (as at the end of their pass)
    await store.complete(b, replace(b.host, next_allowed_at=T0 + 1.0), (), T0, NO_BUDGET)
    await store.flush()  # b's answer is committed; a's below is not
    retry_after = replace(a.host, next_allowed_at=T0 + 30.0, delay_source=DelaySource.RETRY_AFTER)
    await store.complete(a, retry_after, (), T0 + 0.5, NO_BUDGET)
    store._cancel_timer()
    store._db.close()  # killed before a's completion was committed

    resumed_at = T0 + 2.0
    store = open_store(path, resume_guard_s=0.1, resume_in_flight_s=5.0)
    batch = await store.lease(resumed_at, TTL_S, 4)
    assert batch.leases == () and batch.next_ready_at == resumed_at + 0.1
    batch = await store.lease(resumed_at + 0.1, TTL_S, 4)
    assert [le.url for le in batch.leases] == ["http://b.test/2"]
    held = await store.host_state("a.test")
    assert held.next_allowed_at == resumed_at + 5.0
    assert held.delay_source is DelaySource.RESUMED
    assert (await store.lease(resumed_at + 4.9, TTL_S, 4)).leases == ()
    again = (await store.lease(resumed_at + 5.0, TTL_S, 4)).leases
    assert [le.url for le in again] == ["http://a.test/1"]  # its lost URL, at the head
    await store.aclose()


async def test_a_host_whose_lease_ended_before_the_crash_has_only_the_guard(
    tmp_path: Path,
) -> None:
    path = tmp_path / "frontier.db"
    store = open_store(path, commit_interval_s=3600.0)
    await store.add([url("a.test", "1"), url("a.test", "2")], T0, NO_BUDGET)
    lease = (await store.lease(T0, TTL_S, 1)).leases[0]
    await store.flush()
    await store.release(lease, lease.host, T0 + 0.1)
    await store.flush()
    store._db.close()

    store = open_store(path, resume_guard_s=0.1, resume_in_flight_s=5.0)
    assert (await store.lease(T0 + 2.0, TTL_S, 4)).leases == ()
    assert len((await store.lease(T0 + 2.1, TTL_S, 4)).leases) == 1
    assert (await store.host_state("a.test")).delay_source is not DelaySource.RESUMED
    await store.aclose()


async def test_an_expired_lease_is_written_as_ended(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    store = open_store(path, commit_interval_s=3600.0)
    await store.add([url("a.test", "1"), url("b.test", "1")], T0, NO_BUDGET)
    await store.lease(T0, 1.0, 1)
    await store.flush()
    await store.lease(T0 + 2.0, TTL_S, 0)  # reclaims the expired lease, leases nothing
    await store.flush()
    leased = store._db.execute("SELECT host_key FROM hosts WHERE leased = 1").fetchall()
    assert leased == []
    await store.aclose()


async def test_a_new_file_has_no_guard(tmp_path: Path) -> None:
    store = open_store(tmp_path / "frontier.db", resume_guard_s=5.0)
    await store.add([url("a.test", "1")], T0, NO_BUDGET)
    assert len((await store.lease(T0, TTL_S, 1)).leases) == 1
    await store.aclose()


@pytest.mark.parametrize("checkpoint_every", [1, 4, 1_000])
async def test_everything_else_survives(tmp_path: Path, checkpoint_every: int) -> None:
    path = tmp_path / "frontier.db"
    store = open_store(path, seen_checkpoint_urls=checkpoint_every)
    entries = [url(f"h{i % 4}.test", f"p{i}", level=i % 3) for i in range(40)]
    await store.add(entries, T0, NO_BUDGET)
    lease = (await store.lease(T0, TTL_S, 1)).leases[0]
    retired = replace(lease.host, retired="dead", requests_made=2)
    await store.complete(lease, retired, (), T0, NO_BUDGET, [CatalogueEntry(lease.url, 200)])
    await store.record([CatalogueEntry("http://skip.test/", skip_reason="robots")])
    await store.put_blob("robots", "h1.test", b"User-agent: *\n")
    before = await store.counts(T0)
    await store.aclose()

    store = open_store(path, seen_checkpoint_urls=checkpoint_every)
    assert await store.counts(T0) == before
    assert await store.add(entries, T0, NO_BUDGET) == [
        AddStatus.HOST_RETIRED if e.host_key == lease.host_key else AddStatus.SEEN for e in entries
    ]
    assert [e.url async for e in store.catalogue()] == [lease.url, "http://skip.test/"]
    assert await store.get_blob("robots", "h1.test") == b"User-agent: *\n"
    served: list[str] = []
    while batch := (await store.lease(T0, TTL_S, 4)).leases:
        for le in batch:
            served.append(le.url)
            await store.complete(le, le.host, (), T0, NO_BUDGET)
    live = [e for e in entries if e.host_key != lease.host_key]
    assert sorted(served) == sorted(e.url for e in live)
    for host in {e.host_key for e in live}:
        for level in range(3):
            expected = [e.url for e in live if e.host_key == host and e.level == level]
            assert [u for u in served if u in expected] == expected
    await store.aclose()


async def test_flush_then_reopen_without_close(tmp_path: Path) -> None:
    """What a kill -9 leaves after a flush: committed, readable by a new store."""
    path = tmp_path / "frontier.db"
    store = open_store(path, commit_interval_s=3600.0)
    await store.add([url("a.test", "1"), url("a.test", "2")], T0, NO_BUDGET)
    await store.flush()
    await store.add([url("a.test", "3")], T0, NO_BUDGET)  # never committed
    store._cancel_timer()
    store._db.close()  # drop the connection as a crash would, without committing

    store = open_store(path)
    counts = await store.counts(T0)
    assert counts.queued == 2 and counts.seen == 2
    assert await store.add([url("a.test", "3")], T0, NO_BUDGET) == [AddStatus.QUEUED]
    await store.aclose()


async def test_commit_timer_commits_within_the_interval(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    store = open_store(path, commit_interval_s=0.01)
    await store.add([url("a.test", "1")], T0, NO_BUDGET)
    assert store._in_tx
    await asyncio.sleep(0.05)
    assert not store._in_tx
    store._db.close()
    store = open_store(path)
    assert (await store.counts(T0)).queued == 1
    await store.aclose()


async def test_host_rows_are_evicted_and_reloaded(tmp_path: Path) -> None:
    store = open_store(tmp_path / "frontier.db", host_cache_size=10)
    budget = BudgetConfig(max_queued_per_host=2)
    first = [url(f"h{i}.test", f"p{j}") for i in range(50) for j in range(2)]
    assert set(await store.add(first, T0, budget)) == {AddStatus.QUEUED}
    await store.flush()
    assert len(store._rows.hosts) <= 10
    over = [url(f"h{i}.test", "p9") for i in range(50)]
    statuses = await store.add(over, T0, budget)
    # the hosts holding a back queue had their head URL moved, not dequeued: still 2 queued
    assert statuses == [AddStatus.OVER_HOST_BUDGET] * 50
    await store.aclose()


async def test_reopen_with_other_levels_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    store = open_store(path)
    await store.add([url("a.test", "1")], T0, NO_BUDGET)
    await store.aclose()
    with pytest.raises(StateError, match="levels"):
        SqliteStore(path, QueueConfig(levels=5))


async def test_second_open_of_the_same_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    store = open_store(path)
    with pytest.raises(StateError, match="in use"):
        open_store(path)
    await store.aclose()


async def test_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = open_store(tmp_path / "frontier.db")
    await store.aclose()
    await store.aclose()
    with pytest.raises(StateError, match="closed"):
        await store.counts(T0)


async def test_inactive_hosts_come_back_after_reopen(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    queues = QueueConfig(levels=3, max_back_queues=2, inactive_after_s=10.0)
    store = SqliteStore(path, queues, rng=random.Random(3))
    await store.add([url("park.test", "1"), url("a.test", "1")], T0, NO_BUDGET)
    lease = (await store.lease(T0, TTL_S, 1)).leases[0]
    assert lease.host_key == "park.test"
    await store.add([url("park.test", "2"), url("park.test", "3")], T0, NO_BUDGET)
    parked = replace(lease.host, next_allowed_at=T0 + 300.0, error_streak=1, requests_made=1)
    await store.complete(lease, parked, (), T0, NO_BUDGET)
    assert (await store.counts(T0)).hosts_inactive == 1
    await store.aclose()

    store = SqliteStore(path, queues, rng=random.Random(3))
    counts = await store.counts(T0 + 1)
    assert (counts.hosts_inactive, counts.back_queued, counts.front_queued) == (1, 2, 1)
    batch = await store.lease(T0 + 1, TTL_S, 4)
    assert [le.url for le in batch.leases] == ["http://a.test/1"]
    assert batch.next_ready_at == T0 + 300.0
    assert (await store.host_state("park.test")) == parked
    held = batch.leases[0]
    assert await store.complete(held, held.host, (), T0 + 1, NO_BUDGET) == []
    again = (await store.lease(T0 + 300.0, TTL_S, 4)).leases
    assert [le.url for le in again] == ["http://park.test/2"]
    await store.aclose()


async def test_a_urls_failed_attempts_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    store = open_store(path)
    await store.add([url("a.test", "p0"), url("a.test", "p1")], T0, NO_BUDGET)
    for _ in range(2):
        lease = (await store.lease(T0, TTL_S, 1)).leases[0]
        assert await store.release(lease, None, T0, failed=True)
    await store.aclose()

    store = open_store(path)
    again = (await store.lease(T0, TTL_S, 1)).leases[0]
    assert (again.url, again.attempts) == ("http://a.test/p0", 2)
    await store.aclose()


async def test_delay_source_and_last_status_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    store = open_store(path)
    await store.add([url("cd.test", "1"), url("cd.test", "2")], T0, NO_BUDGET)
    lease = (await store.lease(T0, TTL_S, 1)).leases[0]
    state = replace(
        lease.host,
        next_allowed_at=T0 + 9.0,
        crawl_delay_s=9.0,
        delay_source=DelaySource.CRAWL_DELAY,
        last_status=200,
        requests_made=1,
    )
    await store.complete(lease, state, (), T0, NO_BUDGET)
    await store.aclose()

    store = open_store(path)
    assert await store.host_state("cd.test") == state
    await store.aclose()


async def test_hosts_are_served_by_head_rank_after_reopen(tmp_path: Path) -> None:
    """A back queue's URLs per rank are counted again at open (one grouped read), so ready
    hosts are still leased best head first, a promoted URL's new rank included."""
    path = tmp_path / "frontier.db"
    queues = QueueConfig(levels=3, max_back_queues=4)
    store = SqliteStore(path, queues, rng=random.Random(3))
    await store.add([url("a.test", "x", 2), url("b.test", "x", 2)], T0, NO_BUDGET)
    for lease in (await store.lease(T0, TTL_S, 2)).leases:
        found = [url(lease.host_key, "y", 2), url(lease.host_key, "z", 2)]
        assert (
            await store.complete(lease, lease.host, found, T0, NO_BUDGET) == [AddStatus.QUEUED] * 2
        )
    # b.test's last URL moves up to level 0: its head is now the best of the two hosts
    assert await store.promote([url("b.test", "z", 0)], T0) == [True]
    await store.aclose()

    store = SqliteStore(path, queues, rng=random.Random(3), resume_guard_s=0.0)
    batch = await store.lease(T0 + 10, TTL_S, 2)
    assert [le.url for le in batch.leases] == ["http://b.test/z", "http://a.test/y"]
    for lease in batch.leases:
        await store.complete(lease, lease.host, (), T0 + 10, NO_BUDGET)
    rest = (await store.lease(T0 + 20, TTL_S, 2)).leases
    assert sorted(le.url for le in rest) == ["http://a.test/z", "http://b.test/y"]
    await store.aclose()

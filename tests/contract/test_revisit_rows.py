"""The recrawl rows contract (``courtly.store.revisit_rows``): every backend of
``tests.stores`` keeps the rows, finds due ones by their due time and queues them again
through the scheduler's rules (levels by lane, budgets, retired hosts), once per due
time; a crash keeps a noted visit only with the completion that follows it (SQLite)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from courtly.fetch.validators import Validators
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import AddStatus, QueuedUrl
from courtly.frontier.revisit import RevisitState
from courtly.store.base import FrontierStore
from courtly.store.revisit_rows import DueBatch, RevisitRow, RevisitRows
from courtly.store.sqlite import SqliteStore
from tests.contract.test_frontier_store import (
    NO_BUDGET,
    T0,
    TTL_S,
    MakeStore,
    drain,
    lease_one,
    make,
    url,
)

__all__ = ["make"]


def rows_of(store: FrontierStore) -> RevisitRows:
    assert isinstance(store, RevisitRows)
    return store


def row(
    host: str, path: str, due_at: float | None, *, lane: int = 1, **state: object
) -> RevisitRow:
    full = f"http://{host}/{path}"
    return RevisitRow(RevisitState(full, lane=lane, next_due_at=due_at, **state), host, 2)  # type: ignore[arg-type]


async def requeue(
    store: FrontierStore, now_at: float, *, budget: BudgetConfig = NO_BUDGET
) -> DueBatch:
    """Queue due rows again: news at level 0, ordinary at 1; refused rows due in 50 s, out
    rows lost after 1,000 s."""
    rows = rows_of(store)
    return await rows.requeue_due(
        now_at, 10, budget, levels=(0, 1), retry_s=50.0, lost_after_s=1_000.0
    )


async def test_rows_round_trip_every_field(make: MakeStore) -> None:
    store = make(QueueConfig(levels=2))
    state = RevisitState(
        "http://a.test/p",
        lane=0,
        visits=7,
        comparisons=6,
        changes=3,
        unchanged_s=12.5,
        changed_ring=(1.5, 2.0, 30.25),
        lm_changes=2,
        lm_observed_s=9.0,
        validators=Validators('W/"x"', "Tue, 01 Dec 2026 10:00:00 GMT", True, False, 2, 1),
        status=200,
        body_digest="sha1:ABC",
        text_digest=(1 << 64) - 5,
        simhash=(1 << 63) + 7,
        content_bytes=1234,
        last_fetch_at=T0 - 5,
        last_change_at=T0 - 50,
        change_rate_per_s=0.01,
        interval_s=60.0,
        floor_streak=2,
        next_due_at=T0 + 60,
        warc_record_id="urn:uuid:1",
        warc_date="2026-12-01T10:00:00Z",
        duplicate_of="http://a.test/q",
        near_duplicate_of="http://a.test/r",
        judged_at=T0 - 65,
    )
    written = RevisitRow(state, "a.test", 3)
    rows = rows_of(store)
    await rows.note_visits([written])
    got = await rows.revisit_states([("http://a.test/p", "a.test"), ("http://a.test/x", "a.test")])
    assert got == {"http://a.test/p": written}
    assert [r async for r in rows.revisit_rows()] == [written]
    assert await rows.next_revisit_at() == T0 + 60


async def test_due_rows_are_queued_again_earliest_first_once_per_due_time(
    make: MakeStore,
) -> None:
    store = make(QueueConfig(levels=2))
    rows = rows_of(store)
    assert (
        await store.add([url("a.test", p) for p in "abc"], T0, NO_BUDGET) == [AddStatus.QUEUED] * 3
    )
    assert await drain(store) == [f"http://a.test/{p}" for p in "abc"]
    await rows.note_visits([row("a.test", "c", T0 + 5), row("a.test", "a", T0 + 7)])
    await rows.note_visits([row("a.test", "b", T0 + 500)])
    assert (await requeue(store, T0 + 1)).queued == ()
    batch = await requeue(store, T0 + 10)
    assert batch.queued == ("http://a.test/c", "http://a.test/a")
    assert batch.refused == 0
    assert batch.next_due_at == T0 + 500
    # out: not queued again for this due time
    assert (await requeue(store, T0 + 20)).queued == ()
    got = await rows.revisit_states([("http://a.test/c", "a.test")])
    assert got["http://a.test/c"].out
    assert await drain(store, T0 + 20) == ["http://a.test/c", "http://a.test/a"]
    # the visit is noted: due again at its new time, not out
    await rows.note_visits([row("a.test", "c", T0 + 40)])
    got = await rows.revisit_states([("http://a.test/c", "a.test")])
    assert not got["http://a.test/c"].out
    assert (await requeue(store, T0 + 41)).queued == ("http://a.test/c",)


async def test_an_out_row_whose_visit_never_comes_is_due_after_the_lost_interval(
    make: MakeStore,
) -> None:
    store = make(QueueConfig(levels=2))
    await rows_of(store).note_visits([row("a.test", "p", T0)])
    assert (await requeue(store, T0)).queued == ("http://a.test/p",)
    assert (await requeue(store, T0 + 999)).queued == ()
    assert (await requeue(store, T0 + 1_000)).queued == ("http://a.test/p",)


async def test_a_row_written_out_is_not_queued_before_its_due_time(make: MakeStore) -> None:
    """A row written out (a failed fetch's retry waits in its host's queue) is never
    queued again while out; at its due time it is, as a lost one, unless a visit is
    noted first (which writes it back, not out)."""
    store = make(QueueConfig(levels=2))
    rows = rows_of(store)
    held = dataclasses.replace(row("a.test", "p", T0 + 100), out=True)
    await rows.note_visits([held, row("a.test", "q", T0 + 100)])
    got = await rows.revisit_states([("http://a.test/p", "a.test"), ("http://a.test/q", "a.test")])
    assert got["http://a.test/p"] == held and not got["http://a.test/q"].out
    assert await rows.next_revisit_at() == T0 + 100
    assert (await requeue(store, T0 + 99)).queued == ()
    assert set((await requeue(store, T0 + 100)).queued) == {"http://a.test/p", "http://a.test/q"}
    await rows.note_visits([held])
    await rows.note_visits([row("a.test", "p", T0 + 150)])  # its visit: back, not out
    assert not (await rows.revisit_states([("http://a.test/p", "a.test")]))["http://a.test/p"].out
    assert (await requeue(store, T0 + 150)).queued == ("http://a.test/p",)


async def test_news_rows_take_the_news_level_and_refusals_come_back_later(
    make: MakeStore,
) -> None:
    store = make(QueueConfig(levels=2))
    rows = rows_of(store)
    await rows.note_visits(
        [row("n.test", "hub", T0, lane=0), row("b.test", "1", T0), row("b.test", "2", T0)]
    )
    batch = await requeue(store, T0, budget=BudgetConfig(max_queued_per_host=1))
    assert sorted(batch.queued) == ["http://b.test/1", "http://n.test/hub"]
    assert batch.refused == 1
    refused = await rows.revisit_states([("http://b.test/2", "b.test")])
    assert refused["http://b.test/2"].state.next_due_at == T0 + 50
    assert not refused["http://b.test/2"].out
    assert (await store.counts(T0)).queued == 2
    assert (await requeue(store, T0 + 49, budget=BudgetConfig(max_queued_per_host=1))).queued == ()


async def test_a_due_news_row_goes_first_in_its_hosts_back_queue(make: MakeStore) -> None:
    store = make(QueueConfig(levels=2))
    rows = rows_of(store)
    assert await store.add([url("a.test", "seed")], T0, NO_BUDGET) == [AddStatus.QUEUED]
    seed = await lease_one(store)
    found = [url("a.test", f"p{i}", level=1) for i in range(3)]
    assert await store.complete(seed, seed.host, found, T0, NO_BUDGET) == [AddStatus.QUEUED] * 3
    await rows.note_visits([row("a.test", "seed", T0, lane=0), row("a.test", "old", T0)])
    assert sorted((await requeue(store, T0)).queued) == ["http://a.test/old", "http://a.test/seed"]
    served = await drain(store)
    assert served[0] == "http://a.test/seed"
    assert served[1:] == [*(f"http://a.test/p{i}" for i in range(3)), "http://a.test/old"]


async def test_a_retired_hosts_row_is_refused(make: MakeStore) -> None:
    store = make(QueueConfig(levels=1))
    assert await store.add([url("d.test", "p")], T0, NO_BUDGET) == [AddStatus.QUEUED]
    lease = await lease_one(store)
    retired = dataclasses.replace(lease.host, retired="dead")
    assert await store.complete(lease, retired, (), T0, NO_BUDGET) == []
    await rows_of(store).note_visits([row("d.test", "p", T0)])
    batch = await requeue(store, T0)
    assert (batch.queued, batch.refused) == ((), 1)


async def test_a_crash_keeps_a_noted_visit_only_with_the_completion_after_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "frontier.db"
    store = SqliteStore(path, QueueConfig(levels=1), commit_interval_s=0, resume_guard_s=0)
    page = QueuedUrl("http://a.test/p", "a.test", 0)
    assert await store.add([page], T0, NO_BUDGET) == [AddStatus.QUEUED]
    lease = await lease_one(store)
    await store.note_visits([row("a.test", "p", T0 + 60, visits=1)])
    store._db.close()  # a crash: the noted visit waited for its completion
    reopened = SqliteStore(path, QueueConfig(levels=1), commit_interval_s=0, resume_guard_s=0)
    assert await reopened.revisit_states([(page.url, "a.test")]) == {}
    lease = await lease_one(reopened)
    await reopened.note_visits([row("a.test", "p", T0 + 60, visits=1)])
    assert await reopened.complete(lease, lease.host, (), T0, NO_BUDGET) == []
    reopened._db.close()  # a crash after the completion's commit
    again = SqliteStore(path, QueueConfig(levels=1), commit_interval_s=0, resume_guard_s=0)
    got = await again.revisit_states([(page.url, "a.test")])
    assert got[page.url].state.visits == 1
    assert (await again.counts(T0)).queued == 0
    batch = await again.lease(T0, TTL_S, 1)
    assert batch.leases == ()
    await again.aclose()

"""``commit_per_pass``: the steps of one pass of the event loop share one commit, made
before the loop next waits; a crash can lose only the steps of the pass it cut short."""

from __future__ import annotations

import asyncio
from pathlib import Path

from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import AddStatus, QueuedUrl
from courtly.store.sqlite import SqliteStore

T0 = 1_000.0
BUDGET = BudgetConfig(max_queued_per_host=None)
QUEUES = QueueConfig(levels=1)


def _open(path: Path) -> SqliteStore:
    return SqliteStore(
        path, QUEUES, commit_interval_s=0, commit_per_pass=True, synchronous="normal"
    )


def _url(name: str) -> QueuedUrl:
    return QueuedUrl(f"http://a.test/{name}", "a.test", 0)


def _commits(store: SqliteStore) -> list[int]:
    """Count the store's commits (a commit with a transaction open)."""
    made = [0]
    inner = store._commit

    def counted() -> None:
        if store._in_tx:
            made[0] += 1
        inner()

    store._commit = counted  # type: ignore[method-assign]
    return made


async def test_steps_of_one_pass_share_a_commit_made_before_the_loop_waits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "frontier.db"
    store = _open(path)
    made = _commits(store)
    for name in ("a", "b", "c"):
        assert await store.add([_url(name)], T0, BUDGET) == [AddStatus.QUEUED]
    assert made[0] == 0  # no step waited: still the same pass
    await asyncio.sleep(0)
    assert made[0] == 1
    store._db.close()  # a crash after the pass: all three steps are kept
    reopened = _open(path)
    assert (await reopened.counts(T0)).queued == 3
    await reopened.aclose()


async def test_a_crash_inside_the_pass_loses_its_steps_whole(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    store = _open(path)
    assert await store.add([_url("a")], T0, BUDGET) == [AddStatus.QUEUED]
    await asyncio.sleep(0)  # committed
    assert await store.add([_url("b")], T0, BUDGET) == [AddStatus.QUEUED]
    store._db.close()  # a crash before the pass ended
    reopened = _open(path)
    assert (await reopened.counts(T0)).queued == 1
    assert await reopened.add([_url("b")], T0, BUDGET) == [AddStatus.QUEUED]  # not seen
    await reopened.aclose()


async def test_without_it_every_step_commits_at_once(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    store = SqliteStore(path, QUEUES, commit_interval_s=0, synchronous="normal")
    made = _commits(store)
    for name in ("a", "b"):
        assert await store.add([_url(name)], T0, BUDGET) == [AddStatus.QUEUED]
    assert made[0] == 2
    await store.aclose()

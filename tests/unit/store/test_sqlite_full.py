"""SqliteStore on a full disk: the step fails with a message that says so, so does every
step after it, and the file keeps its last commit (what a resume starts from)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from courtly.errors import CrawlFailed
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import AddStatus, QueuedUrl
from courtly.store.sqlite import SqliteStore
from courtly.write_failure import RESUME_HINT, write_failure

T0 = 1_000.0
NO_BUDGET = BudgetConfig(max_queued_per_host=None)
QUEUES = QueueConfig(levels=3, max_back_queues=2)


def url(host: str, path: str) -> QueuedUrl:
    return QueuedUrl(f"http://{host}/{path}", host, 0, 1)


async def test_a_full_disk_fails_every_step_from_then_on_and_keeps_the_last_commit(
    tmp_path: Path,
) -> None:
    path = tmp_path / "frontier.db"
    store = SqliteStore(path, QUEUES, rng=random.Random(3))
    await store.add([url("a.test", f"p{i}") for i in range(3)], T0, NO_BUDGET)
    await store.flush()
    # The file may not grow past its size now: SQLite answers SQLITE_FULL, as on a full disk.
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")
    added = 0
    with pytest.raises(CrawlFailed) as failed:
        for i in range(100_000):
            await store.add([url(f"h{i}.test", "x" * 200)], T0, NO_BUDGET)
            await store.flush()
            added += 1
    message = str(failed.value)
    assert message.startswith(f"{path}: ") and "the disk is full" in message, message
    assert message.endswith(RESUME_HINT), message
    with pytest.raises(CrawlFailed, match="the disk is full"):  # and every step after it
        await store.add([url("b.test", "1")], T0, NO_BUDGET)
    await store.aclose()

    store = SqliteStore(path, QUEUES, rng=random.Random(3))  # room again: the resume
    counts = await store.counts(T0)
    assert counts.queued == 3 + added  # every committed step, none of the failed one
    assert await store.add([url("b.test", "1")], T0, NO_BUDGET) == [AddStatus.QUEUED]
    await store.aclose()


def test_a_full_disk_is_named_whoever_saw_it() -> None:
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL
    assert write_failure(full) == "the disk is full: database or disk is full"
    assert write_failure(OSError(28, "No space left on device")) == (
        "the disk is full: No space left on device"
    )
    assert write_failure(OSError(5, "Input/output error")) == "Input/output error"
    assert write_failure(sqlite3.OperationalError("disk I/O error")) == "disk I/O error"


async def test_a_full_disk_at_the_closing_commit_is_the_same_failure(tmp_path: Path) -> None:
    """The last commit, at close, fails as a step's would (a partition asked to stop after
    another one's disk filled: its own close found the disk full too), not with SQLite's
    bare error (a traceback in the partition)."""
    path = tmp_path / "frontier.db"
    store = SqliteStore(path, QUEUES, rng=random.Random(3), commit_interval_s=3600.0)
    await store.add([url("a.test", "p0")], T0, NO_BUDGET)
    await store.flush()
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    await store.add([url(f"h{i}.test", "x" * 200) for i in range(2000)], T0, NO_BUDGET)
    store._db.execute(f"PRAGMA max_page_count = {pages}")  # the close must grow the file
    with pytest.raises(CrawlFailed, match="the disk is full"):
        await store.aclose()

    store = SqliteStore(path, QUEUES, rng=random.Random(3))
    assert (await store.counts(T0)).queued == 1  # the last commit before it
    await store.aclose()

"""The state file is versioned: foreign, corrupt and newer files are refused, older ones migrate."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from courtly.archive.catalogue import CatalogueEntry
from courtly.errors import StateError, StateLocked
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import DelaySource, HostState, QueuedUrl
from courtly.store.sqlite import SqliteStore
from courtly.store.sqlite_schema import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    open_database,
)

T0 = 1_000.0


def test_garbage_bytes_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    path.write_bytes(os.urandom(8192))
    with pytest.raises(StateError, match="not an SQLite database"):
        SqliteStore(path, QueueConfig())


def test_sqlite_header_then_garbage_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    path.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))
    with pytest.raises(StateError):
        SqliteStore(path, QueueConfig())


def test_a_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StateError, match="not a courtly state file"):
        SqliteStore(path, QueueConfig())
    assert path.read_bytes() == before, "a refused file is left untouched"


def test_another_applications_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1234")
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    with pytest.raises(StateError, match="another application"):
        SqliteStore(path, QueueConfig())


def _stamp(path: Path, version: int) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.close()


async def _make_current(path: Path) -> None:
    store = SqliteStore(path, QueueConfig())
    await store.add([QueuedUrl("http://a.test/", "a.test", 0)], T0, BudgetConfig())
    await store.aclose()


NEXT = SCHEMA_VERSION + 1


async def test_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    await _make_current(path)
    _stamp(path, SCHEMA_VERSION + 1)
    before = path.read_bytes()
    with pytest.raises(StateError, match="newer courtly"):
        SqliteStore(path, QueueConfig())
    assert path.read_bytes() == before, "a refused file is left untouched"


async def test_an_older_version_migrates_step_by_step(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    await _make_current(path)
    applied: list[int] = []

    def v1_to_v2(conn: sqlite3.Connection) -> None:
        applied.append(1)
        conn.execute("ALTER TABLE hosts ADD COLUMN note TEXT")

    def v2_to_v3(conn: sqlite3.Connection) -> None:
        applied.append(2)
        conn.execute("UPDATE hosts SET note = 'migrated'")

    steps = {**MIGRATIONS, SCHEMA_VERSION: v1_to_v2, NEXT: v2_to_v3}
    conn = open_database(path, version=NEXT + 1, migrations=steps)
    assert applied == [1, 2]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == NEXT + 1
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("SELECT note FROM hosts").fetchall() == [("migrated",)]
    conn.close()
    # this courtly reads up to SCHEMA_VERSION only: the migrated file is now "newer"
    with pytest.raises(StateError, match="newer courtly"):
        SqliteStore(path, QueueConfig())


async def test_a_failed_migration_leaves_the_old_version(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    await _make_current(path)

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE hosts ADD COLUMN note TEXT")
        raise RuntimeError("half way")

    with pytest.raises(RuntimeError):
        open_database(path, version=NEXT, migrations={**MIGRATIONS, SCHEMA_VERSION: broken})
    conn = open_database(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    columns = [row[1] for row in conn.execute("PRAGMA table_info(hosts)")]
    assert "note" not in columns
    conn.close()


async def test_a_missing_migration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    await _make_current(path)
    with pytest.raises(StateError, match="no migration"):
        open_database(path, version=NEXT, migrations=MIGRATIONS)


def test_a_new_file_is_stamped(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    conn = open_database(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


async def test_a_version_1_file_gains_the_fail_reason_column(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    conn = open_database(path, version=1)  # as the first courtly wrote it
    conn.execute(
        "INSERT INTO catalogue (url, status, depth, noindex, change_count) "
        "VALUES ('http://a.test/', 200, 0, 0, 0)"
    )
    conn.close()
    store = SqliteStore(path, QueueConfig())
    assert [e async for e in store.catalogue()] == [CatalogueEntry("http://a.test/", status=200)]
    await store.record([CatalogueEntry("http://a.test/x", status=503, fail_reason="http_503")])
    await store.aclose()
    store = SqliteStore(path, QueueConfig())
    entries = [e async for e in store.catalogue()]
    await store.aclose()
    assert [e.fail_reason for e in entries] == [None, "http_503"]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


async def test_a_version_2_host_row_reads_with_the_default_delay_source(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    conn = open_database(path, version=2)
    conn.execute("INSERT INTO hosts VALUES ('h.test', 5.0, 0.1, 0.1, 0.0, 0, 0, 1, 2.0, NULL, 0)")
    conn.close()
    store = SqliteStore(path, QueueConfig())
    state = await store.host_state("h.test")
    await store.aclose()
    assert state == HostState("h.test", 5.0, 0.1, 0.1, 0.0, 0, 0, 1, 2.0)
    assert (state.delay_source, state.last_status) == (DelaySource.MIN_DELAY, None)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data: b"", "empty"),
        (lambda data: data[:50], "truncated"),
        (lambda data: data[: len(data) // 2], "truncated"),
        (lambda data: os.urandom(len(data)), "not an SQLite database"),
    ],
    ids=["empty", "header-cut", "half", "random"],
)
async def test_a_damaged_file_is_refused_and_left_as_it_is(
    tmp_path: Path, damage: Callable[[bytes], bytes], message: str
) -> None:
    path = tmp_path / "frontier.sqlite3"
    await _make_current(path)
    store = SqliteStore(path, QueueConfig())  # a bigger file: a catalogue of some pages
    await store.record([CatalogueEntry(f"http://a.test/{i}", status=200) for i in range(2000)])
    await store.aclose()
    damaged = damage(path.read_bytes())
    path.write_bytes(damaged)
    with pytest.raises(StateError, match=message) as caught:
        SqliteStore(path, QueueConfig())
    assert str(path) in str(caught.value)
    assert "new crawl" in str(caught.value) or "not an SQLite" in str(caught.value)
    assert path.read_bytes() == damaged, "never re-created over"


def test_a_new_file_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    path = tmp_path / "frontier.sqlite3"
    (tmp_path / "frontier.sqlite3.new").write_bytes(b"left by an interrupted creation")
    open_database(path).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frontier.sqlite3"]


def test_a_file_in_use_is_refused_as_locked(tmp_path: Path) -> None:
    path = tmp_path / "frontier.sqlite3"
    holder = open_database(path)
    try:
        with pytest.raises(StateLocked, match="in use by another process"):
            open_database(path)
    finally:
        holder.close()


async def test_a_version_2_file_gains_the_attempts_column(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    conn = open_database(path, version=2)
    conn.execute(
        "INSERT INTO back (host_key, seq, depth, url) VALUES ('a.test', 0, 1, 'http://a.test/')"
    )
    conn.execute("INSERT INTO hosts VALUES ('a.test', 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 1)")
    conn.close()
    store = SqliteStore(path, QueueConfig())
    lease = (await store.lease(1_000.0, 30.0, 1)).leases[0]
    assert (lease.url, lease.depth, lease.attempts) == ("http://a.test/", 1, 0)
    await store.aclose()


async def test_a_version_6_file_gains_the_back_url_index_and_keeps_its_queue(
    tmp_path: Path,
) -> None:
    path = tmp_path / "frontier.db"
    conn = open_database(path, version=6)
    conn.executemany(
        "INSERT INTO back (host_key, seq, depth, url, rank) VALUES ('a.test', ?, 1, ?, 1)",
        [(0, "http://a.test/0"), (1, "http://a.test/1")],
    )
    conn.execute(
        "INSERT INTO hosts VALUES ('a.test', 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 2, NULL, NULL)"
    )
    conn.close()
    store = SqliteStore(path, QueueConfig())
    lease = (await store.lease(1_000.0, 30.0, 1)).leases[0]
    assert lease.url == "http://a.test/0"
    await store.aclose()
    conn = sqlite3.connect(path)
    indexes = {
        row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
    }
    assert "back_url" in indexes
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT rank, seq FROM back INDEXED BY back_url"
        " WHERE host_key = 'a.test' AND url = 'http://a.test/1' ORDER BY rank, seq LIMIT 1"
    ).fetchall()
    conn.close()
    assert any("back_url" in str(step) for step in plan)


async def test_a_version_7_file_gains_judged_at_from_its_last_fetch(tmp_path: Path) -> None:
    """Version 8 keeps a recrawl row's last judged fetch apart from its last attempt; a
    row written before takes its last fetch, and the row reads and queues as before."""
    from courtly.store.revisit_rows import RevisitRows

    path = tmp_path / "frontier.db"
    conn = open_database(path, version=7)
    columns = [row[1] for row in conn.execute("PRAGMA table_info(revisit)")]
    assert "judged_at" not in columns  # version 6's table, as version 7 kept it
    values: dict[str, object] = {name: 0 for name in columns}
    values.update(
        url="http://a.test/p",
        host_key="a.test",
        depth=1,
        due_at=T0,
        changed_ring="[]",
        status=200,
        last_fetch_at=T0 - 60,
        next_due_at=T0,
        etag=None,
        last_modified=None,
    )
    conn.execute(
        f"INSERT INTO revisit ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})",
        list(values.values()),
    )
    conn.commit()
    conn.close()
    store = SqliteStore(path, QueueConfig())
    assert isinstance(store, RevisitRows)
    row = (await store.revisit_states([("http://a.test/p", "a.test")]))["http://a.test/p"]
    assert row.state.judged_at == T0 - 60 == row.state.last_fetch_at
    batch = await store.requeue_due(
        T0, 10, BudgetConfig(), levels=(0, 1), retry_s=50.0, lost_after_s=1_000.0
    )
    assert batch.queued == ("http://a.test/p",)
    await store.aclose()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


async def test_a_version_8_file_gains_leased_and_resumes_with_the_guard_only(
    tmp_path: Path,
) -> None:
    """Version 9 records whether a host was leased; a row written before reads as not
    leased, so a resumed crawl holds its hosts for the guard only, as version 8 did."""
    path = tmp_path / "frontier.db"
    conn = open_database(path, version=8)
    conn.execute(
        "INSERT INTO back (host_key, seq, depth, url, rank) VALUES ('a.test', 0, 1, ?, 1)",
        ("http://a.test/0",),
    )
    conn.execute(
        "INSERT INTO hosts VALUES ('a.test', 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 1, NULL, NULL)"
    )
    conn.execute("INSERT INTO meta (key, value) VALUES ('levels', 4)")
    conn.close()
    store = SqliteStore(path, QueueConfig(), resume_guard_s=0.5, resume_in_flight_s=5.0)
    assert (await store.lease(1_000.0, 30.0, 1)).leases == ()
    lease = (await store.lease(1_000.5, 30.0, 1)).leases[0]
    assert lease.url == "http://a.test/0"
    await store.aclose()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT leased FROM hosts").fetchall() == [(1,)]  # leased at close
    conn.close()


async def test_a_version_9_file_is_keyed_by_rank_and_keeps_its_queues(tmp_path: Path) -> None:
    """Version 10 keys ``back`` by ``(host_key, rank, seq)`` and drops ``back_order``: the
    rows are copied as they were, served in the same order (rank, then arrival), a
    failed attempt's count is kept, and a promotion and a completion find their rows by
    the new key."""
    path = tmp_path / "frontier.db"
    conn = open_database(path, version=9)
    conn.executemany(
        "INSERT INTO back (host_key, seq, depth, url, rank, attempts) VALUES (?, ?, 1, ?, ?, ?)",
        [
            ("a.test", 0, "http://a.test/late", 3, 0),
            ("a.test", 1, "http://a.test/first", 1, 2),
            ("a.test", 2, "http://a.test/second", 2, 0),
            ("b.test", 0, "http://b.test/only", 2, 0),
        ],
    )
    conn.executemany(
        "INSERT INTO hosts VALUES (?, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, ?, NULL, NULL, 0)",
        [("a.test", 3), ("b.test", 1)],
    )
    conn.execute("INSERT INTO meta (key, value) VALUES ('levels', 4)")
    conn.close()

    await SqliteStore(path, QueueConfig(levels=4)).aclose()  # migrated at open
    conn = sqlite3.connect(path)
    indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    key = [row[2] for row in conn.execute("PRAGMA index_info('sqlite_autoindex_back_1')")]
    conn.close()
    assert "back_order" not in indexes and "back_url" in indexes
    assert key == ["host_key", "rank", "seq"]

    store = SqliteStore(path, QueueConfig(levels=4))
    first = (await store.lease(1_000.0, 30.0, 2)).leases
    by_host = {lease.host_key: lease for lease in first}
    assert (by_host["a.test"].url, by_host["a.test"].attempts) == ("http://a.test/first", 2)
    assert by_host["b.test"].url == "http://b.test/only"
    # the last URL of a.test's queue (rank 3) moves to rank 1, ahead of /second (rank 2)
    assert await store.promote([QueuedUrl("http://a.test/late", "a.test", 0)], 1_000.0) == [True]
    done = by_host["a.test"]
    await store.complete(done, HostState("a.test", 1_001.0), (), 1_000.5, BudgetConfig())
    await store.aclose()

    store = SqliteStore(path, QueueConfig(levels=4))
    served = []
    for at in (2_000.0, 3_000.0):
        lease = next(x for x in (await store.lease(at, 30.0, 2)).leases if x.host_key == "a.test")
        served.append(lease.url)
        await store.complete(lease, HostState("a.test", at + 1), (), at, BudgetConfig())
    await store.aclose()
    assert served == ["http://a.test/late", "http://a.test/second"]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM back WHERE host_key = 'a.test'").fetchone() == (0,)
    conn.close()


async def test_a_version_10_file_moves_its_seeds_to_the_seed_set(tmp_path: Path) -> None:
    """Version 11 keeps the seeds as a set (blob namespace ``seed``): a version 10 file's
    seeds, all in its configuration blob, move there, but for one that is no URL (an
    older courtly stored seeds unchecked: the crawl reports it at its start)."""
    path = tmp_path / "frontier.db"
    conn = open_database(path, version=10)
    seeds = ["http://b.test/", "not a url", "http://a.test/x", "http://b.test/"]
    config = {"seeds": seeds, "scope": "domain"}
    conn.execute(
        "INSERT INTO blobs (namespace, key, value) VALUES ('crawl', 'config', ?)",
        (json.dumps(config).encode(),),
    )
    conn.close()
    store = SqliteStore(path, QueueConfig())
    assert sorted(await store.seeds()) == ["http://a.test/x", "http://b.test/"]
    assert json.loads(await store.get_blob("crawl", "config") or b"") == config  # as it was
    await store.aclose()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 11
    conn.close()
    # a file with no configuration yet, or one this courtly wrote, has nothing to move
    for name, blob in (("empty.db", None), ("listed.db", {"seeds": ["x"], "seeds_total": 9})):
        conn = open_database(tmp_path / name, version=10)
        if blob is not None:
            conn.execute(
                "INSERT INTO blobs (namespace, key, value) VALUES ('crawl', 'config', ?)",
                (json.dumps(blob).encode(),),
            )
        conn.close()
        store = SqliteStore(tmp_path / name, QueueConfig())
        assert await store.seeds() == []
        await store.aclose()

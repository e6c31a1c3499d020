"""The state file is versioned: foreign, corrupt and newer files are refused, older ones migrate."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from courtly.errors import StateError
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import QueuedUrl
from courtly.store.sqlite import SqliteStore
from courtly.store.sqlite_schema import APPLICATION_ID, SCHEMA_VERSION, open_database

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


async def _make_v1(path: Path) -> None:
    store = SqliteStore(path, QueueConfig())
    await store.add([QueuedUrl("http://a.test/", "a.test", 0)], T0, BudgetConfig())
    await store.aclose()


async def test_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    await _make_v1(path)
    _stamp(path, SCHEMA_VERSION + 1)
    before = path.read_bytes()
    with pytest.raises(StateError, match="newer courtly"):
        SqliteStore(path, QueueConfig())
    assert path.read_bytes() == before, "a refused file is left untouched"


async def test_an_older_version_migrates_step_by_step(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    await _make_v1(path)
    applied: list[int] = []

    def v1_to_v2(conn: sqlite3.Connection) -> None:
        applied.append(1)
        conn.execute("ALTER TABLE hosts ADD COLUMN note TEXT")

    def v2_to_v3(conn: sqlite3.Connection) -> None:
        applied.append(2)
        conn.execute("UPDATE hosts SET note = 'migrated'")

    conn = open_database(path, version=3, migrations={1: v1_to_v2, 2: v2_to_v3})
    assert applied == [1, 2]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("SELECT note FROM hosts").fetchall() == [("migrated",)]
    conn.close()
    # this courtly reads version 1 only: the migrated file is now "newer"
    with pytest.raises(StateError, match="newer courtly"):
        SqliteStore(path, QueueConfig())


async def test_a_failed_migration_leaves_the_old_version(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    await _make_v1(path)

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE hosts ADD COLUMN note TEXT")
        raise RuntimeError("half way")

    with pytest.raises(RuntimeError):
        open_database(path, version=2, migrations={1: broken})
    conn = open_database(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    columns = [row[1] for row in conn.execute("PRAGMA table_info(hosts)")]
    assert "note" not in columns
    conn.close()


async def test_a_missing_migration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    await _make_v1(path)
    with pytest.raises(StateError, match="no migration"):
        open_database(path, version=2, migrations={})


def test_a_new_file_is_stamped(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    conn = open_database(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()

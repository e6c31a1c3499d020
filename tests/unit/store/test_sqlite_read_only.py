"""A state file opened to read only (``SqliteStore(read_only=True)``): what the reading
commands use where the state cannot be written. It reads what was stored, changes
nothing and creates nothing beside the file, and refuses a write."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from courtly.archive.catalogue import CatalogueEntry
from courtly.errors import StateError
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import QueuedUrl
from courtly.store.sqlite import SqliteStore
from courtly.store.sqlite_schema import SCHEMA_VERSION, open_database, open_read_only

T0 = 1_000.0


async def _a_stopped_crawl(path: Path) -> None:
    store = SqliteStore(path, QueueConfig())
    await store.record([CatalogueEntry(f"http://a.test/{i}", status=200) for i in range(300)])
    await store.add([QueuedUrl("http://b.test/", "b.test", 0)], T0, BudgetConfig())
    await store.put_blob("crawl", "config", b'{"seeds": ["http://a.test/"]}')
    await store.aclose()


def _digest(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in directory.iterdir()}


async def test_a_read_only_store_reads_what_was_stored_and_changes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "frontier.sqlite3"
    await _a_stopped_crawl(path)
    before = _digest(tmp_path)
    store = SqliteStore(path, QueueConfig(), read_only=True)
    urls = [entry.url async for entry in store.catalogue()]
    assert len(urls) == 300 and "http://a.test/299" in urls
    assert await store.get_blob("crawl", "config") == b'{"seeds": ["http://a.test/"]}'
    assert (await store.counts(T0)).queued == 1
    await store.aclose()
    assert _digest(tmp_path) == before  # no byte changed, no -wal or -shm left beside it


async def test_a_read_only_store_refuses_a_write_and_keeps_the_file(tmp_path: Path) -> None:
    path = tmp_path / "frontier.sqlite3"
    await _a_stopped_crawl(path)
    before = _digest(tmp_path)
    store = SqliteStore(path, QueueConfig(), read_only=True)
    with pytest.raises(StateError, match="opened read-only"):
        await store.record([CatalogueEntry("http://c.test/", status=200)])
    with pytest.raises(StateError, match="opened read-only"):
        await store.put_blob("crawl", "config", b"{}")
    await store.aclose()
    assert _digest(tmp_path) == before


def test_a_file_of_an_older_courtly_is_not_upgraded_read_only(tmp_path: Path) -> None:
    path = tmp_path / "frontier.sqlite3"
    open_database(path, version=SCHEMA_VERSION - 1).close()
    before = _digest(tmp_path)
    with pytest.raises(StateError, match=r"older courtly .* copy the state directory"):
        open_read_only(path)
    assert _digest(tmp_path) == before


def test_a_missing_or_foreign_file_is_refused_read_only(tmp_path: Path) -> None:
    with pytest.raises(StateError, match="missing"):
        open_read_only(tmp_path / "frontier.sqlite3")
    (tmp_path / "other.db").write_bytes(b"")
    with pytest.raises(StateError, match="empty"):
        open_read_only(tmp_path / "other.db")

"""The SQLite store's recrawl rows: the ``revisit`` table (schema version 6, ``judged_at``
since version 8), one row per
URL with its :class:`~courtly.frontier.revisit.RevisitState` spread over columns, found
due by the ``revisit_due`` index on ``due_at`` (never by a scan)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, Final

from courtly.store.revisit_rows import (
    STATE_COLUMNS,
    RevisitRow,
    state_from_values,
    state_values,
)

__all__ = ["REVISIT_TABLE", "REVISIT_V8", "SqliteRevisitRows"]

REVISIT_TABLE: Final = """
CREATE TABLE revisit (
    url               TEXT PRIMARY KEY,
    host_key          TEXT    NOT NULL,
    depth             INTEGER NOT NULL,
    out               INTEGER NOT NULL,
    due_at            REAL,
    lane              INTEGER NOT NULL,
    visits            INTEGER NOT NULL,
    comparisons       INTEGER NOT NULL,
    changes           INTEGER NOT NULL,
    unchanged_s       REAL    NOT NULL,
    changed_ring      TEXT    NOT NULL,
    lm_changes        INTEGER NOT NULL,
    lm_observed_s     REAL    NOT NULL,
    status            INTEGER,
    body_digest       TEXT,
    text_digest       INTEGER,
    simhash           INTEGER,
    content_bytes     INTEGER,
    last_fetch_at     REAL,
    last_change_at    REAL,
    change_rate_per_s REAL    NOT NULL,
    interval_s        REAL,
    floor_streak      INTEGER NOT NULL,
    next_due_at       REAL,
    warc_record_id    TEXT,
    warc_date         TEXT,
    duplicate_of      TEXT,
    near_duplicate_of TEXT,
    etag              TEXT,
    last_modified     TEXT,
    etag_unreliable   INTEGER NOT NULL,
    lm_unreliable     INTEGER NOT NULL,
    etag_strikes      INTEGER NOT NULL,
    lm_strikes        INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX revisit_due ON revisit (due_at)
"""
"""Version 6's table and index (``due_at`` is the row's due time: its state's
``next_due_at``, or when an out row is given up as lost). Version 8 adds
``judged_at`` (:data:`REVISIT_V8`)."""

REVISIT_V8: Final = """
ALTER TABLE revisit ADD COLUMN judged_at REAL;
UPDATE revisit SET judged_at = last_fetch_at WHERE status IS NOT NULL
"""
"""Version 8: the last judged fetch of each row (``RevisitState.judged_at``), apart from
the last attempt; a row written before takes its last fetch (the best known: a failed
attempt then was not told apart)."""

_COLUMNS: Final = ("host_key", "depth", "out", "due_at", *STATE_COLUMNS)
_UPSERT: Final = (
    f"INSERT OR REPLACE INTO revisit ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_COLUMNS))})"
)
_SELECT: Final = f"SELECT {', '.join(_COLUMNS)} FROM revisit"
_HASHES: Final = tuple(_COLUMNS.index(name) for name in ("text_digest", "simhash"))
_U64: Final = 1 << 64
_PAGE: Final = 1_000


def _signed(value: int | None) -> int | None:
    if value is None:
        return None
    value &= _U64 - 1
    return value - _U64 if value >= 1 << 63 else value


def _values(row: RevisitRow, due_at: float | None) -> list[Any]:
    values = [row.host_key, row.depth, int(row.out), due_at, *state_values(row.state)]
    for i in _HASHES:
        values[i] = _signed(values[i])
    return values


def _row(values: Sequence[Any]) -> RevisitRow:
    values = list(values)
    for i in _HASHES:
        if values[i] is not None:
            values[i] &= _U64 - 1
    return RevisitRow(state_from_values(values[4:]), values[0], int(values[1]), bool(values[2]))


class SqliteRevisitRows:
    """:class:`~courtly.store.revisit_rows.DueRows` over the ``revisit`` table; ``begin(n)``
    opens the store's transaction and counts ``n`` row writes."""

    def __init__(self, db: sqlite3.Connection, begin: Callable[[int], None]) -> None:
        self._db = db
        self._begin = begin

    def get(self, urls: Sequence[str]) -> dict[str, RevisitRow]:
        found: dict[str, RevisitRow] = {}
        for start in range(0, len(urls), 500):
            chunk = urls[start : start + 500]
            sql = f"{_SELECT} WHERE url IN ({', '.join('?' * len(chunk))})"
            for values in self._db.execute(sql, chunk):
                row = _row(values)
                found[row.url] = row
        return found

    def put(self, rows: Sequence[RevisitRow]) -> None:
        if rows:
            self._begin(len(rows))
            self._db.executemany(_UPSERT, [_values(r, r.state.next_due_at) for r in rows])

    def due(self, now_at: float, limit: int) -> list[RevisitRow]:
        sql = f"{_SELECT} WHERE due_at <= ? ORDER BY due_at LIMIT ?"
        return [_row(values) for values in self._db.execute(sql, (now_at, limit))]

    def set_due(self, url: str, due_at: float, *, out: bool) -> None:
        self._begin(1)
        if out:
            sql = "UPDATE revisit SET out = 1, due_at = ? WHERE url = ?"
            self._db.execute(sql, (due_at, url))
        else:
            sql = "UPDATE revisit SET out = 0, due_at = ?, next_due_at = ? WHERE url = ?"
            self._db.execute(sql, (due_at, due_at, url))

    def next_due_at(self) -> float | None:
        value = self._db.execute("SELECT min(due_at) FROM revisit").fetchone()[0]
        return None if value is None else float(value)

    def page(self, after: str, limit: int = _PAGE) -> list[RevisitRow]:
        """Up to ``limit`` rows by URL order after ``after`` (iteration in pages)."""
        sql = f"{_SELECT} WHERE url > ? ORDER BY url LIMIT ?"
        return [_row(values) for values in self._db.execute(sql, (after, limit))]

"""The SQLite state file: schema, version checks and migrations.

A courtly state file is an SQLite database in WAL mode marked with
``PRAGMA application_id`` = :data:`APPLICATION_ID` and ``PRAGMA user_version`` =
the schema version. :func:`open_database` opens one and refuses, with a
:class:`~courtly.errors.StateError`, a file that is not SQLite, that belongs to
another application, that was written by a newer courtly, or that is locked by
another process. An older version is migrated in place, one step at a time,
each step in its own transaction (:data:`MIGRATIONS`).

Tables (version 1):

``meta``       key/value: counters, the token ceiling, the Bloom checkpoint;
``front``      front queues, ``(level, id)`` ordered: FIFO per level;
``back``       back queues, ``(host_key, seq)`` ordered: FIFO per host;
``hosts``      per-host politeness state and the number of queued URLs;
``seen_tail``  URLs added to the seen-set since its last checkpoint;
``catalogue``  one row per URL, ``seq`` keeps the order first written;
``blobs``      small opaque values by ``(namespace, key)``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, Literal

from courtly.errors import StateError

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Migration",
    "open_database",
]

APPLICATION_ID: Final = 0x4352544C
"""``PRAGMA application_id`` of a courtly state file (ASCII ``CRTL``)."""

SCHEMA_VERSION: Final = 1
"""The schema version this courtly writes (``PRAGMA user_version``)."""

Migration = Callable[[sqlite3.Connection], None]
"""Upgrades a database from version N to N+1 inside an open transaction."""

MIGRATIONS: Final[Mapping[int, Migration]] = {}
"""``from_version -> migration`` to ``from_version + 1``. Empty until version 2 ships."""

_SQLITE_MAGIC: Final = b"SQLite format 3\x00"

_SCHEMA_V1: Final = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value
) WITHOUT ROWID;

CREATE TABLE front (
    level    INTEGER NOT NULL,
    id       INTEGER NOT NULL,
    host_key TEXT    NOT NULL,
    depth    INTEGER NOT NULL,
    url      TEXT    NOT NULL,
    PRIMARY KEY (level, id)
) WITHOUT ROWID;

CREATE TABLE back (
    host_key TEXT    NOT NULL,
    seq      INTEGER NOT NULL,
    depth    INTEGER NOT NULL,
    url      TEXT    NOT NULL,
    PRIMARY KEY (host_key, seq)
) WITHOUT ROWID;

CREATE TABLE hosts (
    host_key           TEXT PRIMARY KEY,
    next_allowed_at    REAL    NOT NULL,
    last_fetch_s       REAL    NOT NULL,
    latency_baseline_s REAL    NOT NULL,
    backoff_s          REAL    NOT NULL,
    error_streak       INTEGER NOT NULL,
    parks              INTEGER NOT NULL,
    requests_made      INTEGER NOT NULL,
    crawl_delay_s      REAL,
    retired            TEXT,
    queued             INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE seen_tail (
    url TEXT NOT NULL
);

CREATE TABLE catalogue (
    seq           INTEGER PRIMARY KEY,
    url           TEXT NOT NULL UNIQUE,
    status        INTEGER,
    fetched_at    REAL,
    depth         INTEGER NOT NULL,
    referrer      TEXT,
    skip_reason   TEXT,
    content_type  TEXT,
    content_hash  INTEGER,
    simhash       INTEGER,
    content_bytes INTEGER,
    raw_bytes     INTEGER,
    elapsed_s     REAL,
    warc_file     TEXT,
    warc_offset   INTEGER,
    warc_length   INTEGER,
    redirect_to   TEXT,
    canonical     TEXT,
    title         TEXT,
    noindex       INTEGER NOT NULL,
    etag          TEXT,
    last_modified TEXT,
    change_count  INTEGER NOT NULL
);

CREATE TABLE blobs (
    namespace TEXT NOT NULL,
    key       TEXT NOT NULL,
    value     BLOB NOT NULL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
"""


def open_database(
    path: Path,
    *,
    synchronous: Literal["normal", "full"] = "full",
    cache_bytes: int = 64 << 20,
    version: int = SCHEMA_VERSION,
    migrations: Mapping[int, Migration] = MIGRATIONS,
) -> sqlite3.Connection:
    """Open (creating if absent) the state file at ``path``, at schema ``version``.

    The connection is in autocommit mode (the caller runs its own
    transactions), WAL journal, exclusive locking (one process owns the file
    while it is open), ``synchronous`` as given. ``version``/``migrations`` are
    parameters so that tests can simulate an upgrade; leave the defaults.

    Raises :class:`StateError` for a file that is not SQLite or is corrupt, a
    foreign database, a newer schema version, an older one with no migration
    path, or a file locked by another process.
    """
    _check_header(path)
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=0.05)
    except sqlite3.Error as exc:
        raise StateError(f"{path}: cannot open the state file ({exc})") from exc
    try:
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        found = _inspect(conn, path, version)  # reads only: a refused file is left as it was
        _configure(conn, synchronous, cache_bytes)
        if found == 0:
            _create(conn, version, migrations)
        else:
            _upgrade(conn, path, found, version, migrations)
    except sqlite3.OperationalError as exc:
        conn.close()
        if "locked" in str(exc) or "busy" in str(exc):
            raise StateError(f"{path}: the state file is in use by another process") from exc
        raise StateError(f"{path}: cannot use the state file ({exc})") from exc
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StateError(f"{path}: the state file is corrupt or not a database ({exc})") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _check_header(path: Path) -> None:
    """Reject a non-empty file that does not start with the SQLite magic string."""
    try:
        with path.open("rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StateError(f"{path}: cannot read the state file ({exc})") from exc
    if head and head != _SQLITE_MAGIC:
        raise StateError(f"{path}: not a courtly state file (not an SQLite database)")


def _configure(conn: sqlite3.Connection, synchronous: str, cache_bytes: int) -> None:
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise sqlite3.OperationalError(f"cannot switch to WAL (journal mode {mode})")
    conn.execute(f"PRAGMA synchronous = {'FULL' if synchronous == 'full' else 'NORMAL'}")
    conn.execute(f"PRAGMA cache_size = {-max(1, cache_bytes // 1024)}")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA wal_autocheckpoint = 4000")
    # take the exclusive lock now, so a second process fails at open, not mid-crawl
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("COMMIT")


def _inspect(conn: sqlite3.Connection, path: Path, version: int) -> int:
    """The schema version of the file (0: a new, empty file); StateError if unusable."""
    app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if app_id == 0 and found == 0:
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if tables:
            raise StateError(f"{path}: an SQLite database that is not a courtly state file")
        return 0
    if app_id != APPLICATION_ID:
        raise StateError(
            f"{path}: an SQLite database of another application (application_id {app_id:#x})"
        )
    if found > version:
        raise StateError(
            f"{path}: written by a newer courtly (state version {found}, this one reads "
            f"up to {version}); upgrade courtly to resume this crawl"
        )
    if found < 1:
        raise StateError(f"{path}: invalid state version {found}")
    return found


def _upgrade(
    conn: sqlite3.Connection,
    path: Path,
    found: int,
    version: int,
    migrations: Mapping[int, Migration],
) -> None:
    """Run the migrations from ``found`` to ``version``, one transaction per step."""
    for step in range(found, version):
        migrate = migrations.get(step)
        if migrate is None:
            raise StateError(f"{path}: no migration from state version {step} to {step + 1}")
        conn.execute("BEGIN IMMEDIATE")
        try:
            migrate(conn)
            conn.execute(f"PRAGMA user_version = {step + 1}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def _create(conn: sqlite3.Connection, version: int, migrations: Mapping[int, Migration]) -> None:
    """A new file: version 1 tables, then the migrations up to ``version``, one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA_V1.split(";"):
            if statement.strip():
                conn.execute(statement)
        for step in range(1, version):
            migrations[step](conn)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {version}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")

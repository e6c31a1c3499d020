"""The SQLite state file: schema, version checks and migrations.

A courtly state file is an SQLite database in WAL mode marked with
``PRAGMA application_id`` = :data:`APPLICATION_ID` and ``PRAGMA user_version`` =
the schema version. :func:`open_database` opens one and refuses, with a
:class:`~courtly.errors.StateError` whose message names the file and what to do,
a file that is empty, truncated, not SQLite, corrupt, an SQLite database without
courtly's marks, one that belongs to another application, or one written by a
newer courtly; and, with :class:`~courtly.errors.StateLocked`, a file locked by
another process (a running crawl). A refused file is never written to. An older
version is migrated in place, one step at a time, each step in its own
transaction (:data:`MIGRATIONS`).

A new file is created whole beside its final name (``frontier.sqlite3.new``) and
renamed into place once stamped, so a state file that exists always holds a
complete schema: an existing file is never re-created, whatever is in it.

Tables (version 1; version 2 adds ``catalogue.fail_reason``, version 3
``back.attempts``, version 4 ``hosts.delay_source`` and ``hosts.last_status``,
version 5 ``back.rank`` and the ``back_order`` index, version 6 the ``revisit`` table
and its ``revisit_due`` index, version 7 the ``back_url`` index, version 8
``revisit.judged_at``, version 9 ``hosts.leased``, version 10 keys ``back`` by
``(host_key, rank, seq)`` and drops ``back_order``, version 11 keeps the seeds in the
blob namespace ``seed``):

``meta``       key/value: counters, the token ceiling, the Bloom checkpoint;
``front``      front queues, ``(level, id)`` ordered: FIFO per level;
``back``       back queues, ``(host_key, rank, seq)`` ordered: by rank, then FIFO;
``hosts``      per-host politeness state, the number of queued URLs, whether leased;
``seen_tail``  URLs added to the seen-set since its last checkpoint;
``catalogue``  one row per URL, ``seq`` keeps the order first written;
``blobs``      small opaque values by ``(namespace, key)``; the crawl's seeds are the
               keys of namespace ``seed`` (empty values);
``revisit``    a ``--recrawl`` crawl's per-URL history and next due time
               (:mod:`courtly.store.revisit_sqlite`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Final, Literal

from courtly.errors import InvalidURL, StateError, StateLocked
from courtly.store.revisit_sqlite import REVISIT_TABLE, REVISIT_V8
from courtly.url import canonicalize

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Migration",
    "open_database",
    "open_read_only",
    "read_only_part",
]

APPLICATION_ID: Final = 0x4352544C
"""``PRAGMA application_id`` of a courtly state file (ASCII ``CRTL``)."""

SCHEMA_VERSION: Final = 11
"""The schema version this courtly writes (``PRAGMA user_version``)."""

log = logging.getLogger(__name__)

Migration = Callable[[sqlite3.Connection], None]
"""Upgrades a database from version N to N+1 inside an open transaction."""


def _v1_to_v2(conn: sqlite3.Connection) -> None:
    """Version 2: the catalogue says why a fetch failed (``fail_reason``)."""
    conn.execute("ALTER TABLE catalogue ADD COLUMN fail_reason TEXT")


def _v2_to_v3(conn: sqlite3.Connection) -> None:
    """Version 3: a back-queue URL keeps its count of failed attempts (``attempts``)."""
    conn.execute("ALTER TABLE back ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0")


def _v3_to_v4(conn: sqlite3.Connection) -> None:
    """Version 4: each host says which term set its next allowed time, and its last status."""
    conn.execute("ALTER TABLE hosts ADD COLUMN delay_source TEXT")
    conn.execute("ALTER TABLE hosts ADD COLUMN last_status INTEGER")


def _v4_to_v5(conn: sqlite3.Connection) -> None:
    """Version 5: a back queue is ordered by rank (the news lane, then the level), then
    arrival. URLs queued before keep their order, at the rank of level 0."""
    conn.execute("ALTER TABLE back ADD COLUMN rank INTEGER NOT NULL DEFAULT 1")
    conn.execute("CREATE INDEX back_order ON back (host_key, rank, seq)")


def _v5_to_v6(conn: sqlite3.Connection) -> None:
    """Version 6: the recrawl rows (one per URL of a ``--recrawl`` crawl) and their due
    index. A crawl's older revisit blob is moved into them when it resumes with
    ``--recrawl`` (it needs the crawl's host keys)."""
    for statement in REVISIT_TABLE.split(";"):
        if statement.strip():
            conn.execute(statement)


def _v6_to_v7(conn: sqlite3.Connection) -> None:
    """Version 7: the index ``back_url`` finds a URL in its host's back queue (a promotion
    to a better level) without reading the whole queue."""
    conn.execute("CREATE INDEX back_url ON back (host_key, url)")


def _v7_to_v8(conn: sqlite3.Connection) -> None:
    """Version 8: a recrawl row keeps its last judged fetch (``revisit.judged_at``) apart
    from its last attempt, a transient failure included."""
    for statement in REVISIT_V8.split(";"):
        if statement.strip():
            conn.execute(statement)


def _v8_to_v9(conn: sqlite3.Connection) -> None:
    """Version 9: a host row says whether the host had a lease when it was written
    (``hosts.leased``): after a crash, those hosts' last answers may be lost."""
    conn.execute("ALTER TABLE hosts ADD COLUMN leased INTEGER NOT NULL DEFAULT 0")


def _v9_to_v10(conn: sqlite3.Connection) -> None:
    """Version 10: ``back`` is keyed by ``(host_key, rank, seq)``, the order a host's queue
    is served in, so the ``back_order`` index (the same columns) goes: each back-queue
    row is one b-tree entry less to write, and ``back_url`` covers a promotion's lookup.
    The rows are copied as they are (``(host_key, seq)`` was unique, so the new key is):
    about 2.3 s per million queued URLs on a 2-CPU machine; the old table's pages stay
    in the file as free pages, reused as the crawl goes on."""
    conn.execute(
        "CREATE TABLE back_v10 ("
        " host_key TEXT NOT NULL, rank INTEGER NOT NULL, seq INTEGER NOT NULL,"
        " depth INTEGER NOT NULL, url TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,"
        " PRIMARY KEY (host_key, rank, seq)) WITHOUT ROWID"
    )
    conn.execute(
        "INSERT INTO back_v10 (host_key, rank, seq, depth, url, attempts)"
        " SELECT host_key, rank, seq, depth, url, attempts FROM back"
    )
    conn.execute("DROP TABLE back")  # and its indexes, back_order and back_url
    conn.execute("ALTER TABLE back_v10 RENAME TO back")
    conn.execute("CREATE INDEX back_url ON back (host_key, url)")


def _v10_to_v11(conn: sqlite3.Connection) -> None:
    """Version 11: the crawl's seeds are a set, the keys of blob namespace ``seed``
    (:meth:`courtly.store.base.FrontierStore.add_seeds`), and the configuration blob
    lists only the first ones: the seeds of the blob move there (those that are no
    crawlable URL, stored unchecked by an older courtly, stay behind, and the crawl
    reports them at its start). The blob is left as it was; an older courtly, which
    would read only the listing, refuses the file by its version."""
    row = conn.execute(
        "SELECT value FROM blobs WHERE namespace = 'crawl' AND key = 'config'"
    ).fetchone()
    if row is None:
        return
    try:
        config = json.loads(bytes(row[0]))
    except ValueError:
        return  # unreadable: the crawl refuses it at its start, as before
    seeds = config.get("seeds") if isinstance(config, dict) else None
    if not isinstance(seeds, list) or "seeds_total" in config:
        return
    kept: list[tuple[str]] = []
    for seed in seeds:
        if isinstance(seed, str):
            with contextlib.suppress(InvalidURL):
                canonicalize(seed)
                kept.append((seed,))
    conn.executemany(
        "INSERT OR IGNORE INTO blobs (namespace, key, value) VALUES ('seed', ?, x'')", kept
    )


MIGRATIONS: Final[Mapping[int, Migration]] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
    3: _v3_to_v4,
    4: _v4_to_v5,
    5: _v5_to_v6,
    6: _v6_to_v7,
    7: _v7_to_v8,
    8: _v8_to_v9,
    9: _v9_to_v10,
    10: _v10_to_v11,
}
"""``from_version -> migration`` to ``from_version + 1``."""

_WHAT_TO_DO: Final = (
    "restore it from a backup, or move it (and the warc/ directory) away to start a new crawl"
)

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

    Raises :class:`StateError` for a file that is empty, truncated, not SQLite
    or corrupt, a foreign database, a newer schema version, an older one with no
    migration path; :class:`StateLocked` for a file locked by another process.
    Only an absent file is created (whole, then renamed into place).
    """
    if not os.path.lexists(path):
        _create_file(path, version, migrations)
    _check_file(path)
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=0.05)
    except sqlite3.Error as exc:
        raise StateError(f"{path}: cannot open the state file ({exc})") from exc

    def unusable(exc: sqlite3.OperationalError) -> StateError:
        if read_only := read_only_part(path):
            return StateError(
                f"{path}: cannot use the state file: {read_only} is read-only ({exc}); a "
                "crawl writes its state: make it writable, or copy the state directory "
                "somewhere writable and give --state the copy"
            )
        return StateError(f"{path}: cannot use the state file ({exc}); {_WHAT_TO_DO}")

    with _checked(conn, path, unusable):
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        found = _inspect(conn, path, version)  # reads only: a refused file is left as it was
        _configure(conn, synchronous, cache_bytes)
        _upgrade(conn, path, found, version, migrations)
    return conn


@contextlib.contextmanager
def _checked(
    conn: sqlite3.Connection,
    path: Path,
    unusable: Callable[[sqlite3.OperationalError], StateError],
) -> Iterator[None]:
    """Run the checks of the state file just opened on ``conn``; if they fail, close it
    and say why: :class:`StateLocked` for a file another process holds, ``unusable``'s
    error for another operational error, corrupt for any other SQLite error."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        conn.close()
        if "locked" in str(exc) or "busy" in str(exc):
            raise StateLocked(
                f"{path}: the state file is in use by another process (a crawl is running "
                "on it; wait for it to end, or stop it with Ctrl-C or SIGTERM)"
            ) from exc
        raise unusable(exc) from exc
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StateError(
            f"{path}: the state file is corrupt or not a database ({exc}); {_WHAT_TO_DO}"
        ) from exc
    except BaseException:
        conn.close()
        raise


def _create_file(path: Path, version: int, migrations: Mapping[int, Migration]) -> None:
    """Create a stamped state file at ``path``: built beside it, then renamed into place."""
    building = path.with_name(path.name + ".new")
    for leftover in (building, *(building.with_name(building.name + s) for s in _SIDE_FILES)):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()  # an interrupted creation: it never held a crawl
    try:
        conn = sqlite3.connect(building, isolation_level=None)
    except sqlite3.Error as exc:
        raise StateError(f"{path}: cannot create the state file ({exc})") from exc
    try:
        _create(conn, version, migrations)
    finally:
        conn.close()
    try:
        os.link(building, path)  # fails if a state file appeared meanwhile: never replaced
    except FileExistsError:
        pass
    finally:
        building.unlink()
    _fsync_dir(path.parent)


_SIDE_FILES: Final = ("-journal", "-wal", "-shm")


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _check_file(path: Path) -> None:
    """Refuse a file that is missing, empty, truncated or does not start with SQLite's magic."""
    try:
        with path.open("rb") as f:
            head = f.read(100)
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        raise StateError(f"{path}: the state file is missing") from None
    except OSError as exc:
        raise StateError(f"{path}: cannot read the state file ({exc})") from exc
    if not head:
        raise StateError(f"{path}: the state file is empty (0 bytes); {_WHAT_TO_DO}")
    if head[: len(_SQLITE_MAGIC)] != _SQLITE_MAGIC:
        raise StateError(f"{path}: not a courtly state file (not an SQLite database)")
    if len(head) < 100:
        raise StateError(f"{path}: the state file is truncated ({size} bytes); {_WHAT_TO_DO}")
    wal = path.with_name(path.name + "-wal")
    size_valid = head[24:28] == head[92:96]  # the in-header size is valid (SQLite >= 3.7)
    if size_valid and not wal.exists():  # with a WAL, pages may live there: the header runs ahead
        page_size = int.from_bytes(head[16:18], "big")
        page_size = 65_536 if page_size == 1 else page_size
        pages = int.from_bytes(head[28:32], "big")
        if page_size >= 512 and pages * page_size > size:
            raise StateError(
                f"{path}: the state file is truncated ({size} bytes of "
                f"{pages * page_size}); {_WHAT_TO_DO}"
            )


def read_only_part(path: Path) -> Path | None:
    """The state file or its directory if this process may not write it (a read-only
    mount, permissions), else ``None``."""
    for candidate in (path.parent, path):
        if not os.access(candidate, os.W_OK):
            return candidate
    return None


def open_read_only(path: Path, *, version: int = SCHEMA_VERSION) -> sqlite3.Connection:
    """Open the state file at ``path`` to read it only, where it cannot be written.

    For the reading commands on a state directory that is read-only (a read-only mount,
    another user's crawl): :func:`open_database` takes a write lock and a journal beside
    the file, which such a directory refuses. A file closed cleanly (no ``-wal`` beside
    it) is opened ``immutable``: no lock and no journal, as nothing can change it while
    its directory is read-only. A file with a ``-wal`` (a crawl killed, or one running
    where this process may not write) is opened read-only through its journal, which
    SQLite can do where the ``-shm`` beside it exists; where it cannot, the error says
    to copy the state somewhere writable. Nothing is created or changed, not even to
    upgrade a file of an older courtly: that is refused with the same advice.

    Raises :class:`StateError` (:class:`StateLocked` while a crawl holds the file).
    """
    _check_file(path)
    wal = os.path.lexists(path.with_name(path.name + "-wal"))
    uri = f"{path.resolve().as_uri()}?mode=ro{'' if wal else '&immutable=1'}"
    copy_it = "copy the state directory somewhere writable and give --state the copy"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=0.05)
    except sqlite3.Error as exc:
        raise StateError(f"{path}: cannot open the state file read-only ({exc})") from exc

    def unusable(exc: sqlite3.OperationalError) -> StateError:
        return StateError(
            f"{path}: cannot read the state file where it is read-only ({exc}); its crawl "
            f"did not end cleanly and its journal cannot be read here: {copy_it}"
        )

    with _checked(conn, path, unusable):
        found = _inspect(conn, path, version)
        if found < version:
            raise StateError(
                f"{path}: written by an older courtly (state version {found}); reading it "
                f"upgrades it, which a read-only state cannot be: {copy_it}"
            )
        conn.execute("SELECT count(*) FROM meta").fetchone()  # the journal, if any, reads
    return conn


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
    """The schema version of the file; StateError if unusable."""
    app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if app_id == 0 and found == 0:
        raise StateError(f"{path}: an SQLite database that is not a courtly state file")
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
        log.info("%s: upgrading the state file from version %d to %d", path, step, step + 1)
        conn.execute("BEGIN IMMEDIATE")
        try:
            migrate(conn)
            conn.execute(f"PRAGMA user_version = {step + 1}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def _create(conn: sqlite3.Connection, version: int, migrations: Mapping[int, Migration]) -> None:
    """A new database: version 1 tables, then the migrations up to ``version``, one
    transaction."""
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

"""The SQLite store: the scheduler's rows on disk, crash-safe and resumable.

The state machine is :class:`~courtly.store.scheduler.Scheduler`, shared with
:class:`~courtly.store.memory.MemoryStore` (the contract suite and the property
tests run against both); this store keeps its rows in one SQLite file (schema in
:mod:`courtly.store.sqlite_schema`), and RAM stays bounded whatever the number
of queued URLs:

* **front queues**: rows of the ``front`` table ordered by ``(level, id)``; in
  RAM only the per-level counts (the selector draws a level, as
  :class:`~courtly.frontier.front.FrontQueues` does) and a small read-ahead
  buffer of each level's head rows;
* **back queues**: rows of the ``back`` table keyed and ordered by ``(host_key,
  rank, seq)`` (schema 10); in RAM only, per held host (active or inactive), its
  row count and next sequence number. A leased URL keeps its row until
  ``complete`` deletes it (by its key, which the row's handle packs:
  :func:`_handle`), so ``release``, expiry and a crash all leave it exactly where
  it was: at the head of its rank; a promotion is one ``UPDATE`` of the URL's
  rank and ``seq`` among its host's rows, found through the covering index
  ``back_url``;
* **ready and wake heaps**, **leases**: in RAM only (the scheduler's);
* **hosts**: a write-back cache of the ``hosts`` table (politeness state and
  queued-URL count per host), bounded by ``host_cache_size`` clean entries
  beyond the held hosts;
* **seen-set**: a :class:`~courtly.frontier.seen.BloomSeenSet` in RAM,
  checkpointed into ``meta`` every ``seen_checkpoint_urls`` new URLs; the URLs
  added since the checkpoint are kept in ``seen_tail`` and replayed at open, so
  the restored filter is the one of the last commit, bit for bit.

Durability. All writes of a step go into one open transaction (row inserts are
buffered within the step and written before it ends, or before a read that
needs them); the store commits it at most ``commit_interval_s`` after the first
uncommitted step (a timer on the running event loop), or at once past
``commit_max_ops`` rows, at :meth:`SqliteStore.flush` and at
:meth:`SqliteStore.aclose`. A commit only ever happens between two steps, so
the file always holds the state after some step: a crash loses at most the
steps of the last commit window, whole. With ``synchronous="full"`` (the
default) a commit survives a power cut too; with ``"normal"`` it survives a
process crash (``kill -9``) but a power cut may roll back the last commits
(never corrupt the file). See ``docs/state.md``.

Resume. Opening an existing file restores everything but the leases: they are
void, and their URLs are still at the head of their back queues. Every host
with a back queue starts inactive and takes a slot when it is due, whatever it
was before (active or inactive is not stored: it follows from the next allowed
time). Fencing tokens are reserved in blocks (the ceiling is committed before a
token above it is handed out) and a reopened store starts above the last
ceiling, so tokens keep increasing across restarts. A host may have been
fetched in the last commit window without its new ``next_allowed_at`` being
committed, so after a resume no host is served before ``first now_at seen +
resume_guard_s``: pass the crawl's minimum politeness delay.

A host's row also says whether it was leased when written (``hosts.leased``): a
lease marks its host's row changed, and the end or expiry of the lease marks it
again. A host whose committed row still says leased may have been answered in
the lost window, and that answer may have asked for a longer pause (a 429/503
with ``Retry-After``, an error's back-off) that nothing kept: after a resume it
waits ``resume_in_flight_s`` from the first ``now_at`` seen (pass the crawl's
:func:`~courtly.frontier.politeness.lost_answer_hold_s`), its delay source
``resumed``. With ``commit_per_pass`` the lease's commit is made at the end of
the pass that leased, before the request can be sent; with a commit interval a
lease may go uncommitted for up to that interval, and a crash in it leaves its
host only ``resume_guard_s``.
"""

from __future__ import annotations

import asyncio
import json
import operator
import random
import sqlite3
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Final, Literal

from courtly.archive.catalogue import CatalogueEntry
from courtly.errors import CrawlFailed, StateError
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.front import LevelSelector
from courtly.frontier.records import (
    AddStatus,
    DelaySource,
    FrontierCounts,
    HostState,
    Lease,
    QueuedUrl,
)
from courtly.frontier.seen import BloomSeenSet
from courtly.store.base import LeaseBatch
from courtly.store.revisit_rows import DueBatch, RevisitRow, requeue
from courtly.store.revisit_sqlite import SqliteRevisitRows
from courtly.store.scheduler import HostRow, Scheduler, back_ranks
from courtly.store.sqlite_schema import open_database, open_read_only
from courtly.write_failure import RESUME_HINT, write_failure

__all__ = ["SqliteStore"]

_TOKEN_BLOCK: Final = 100_000
"""Fencing tokens reserved per committed ceiling."""
_FRONT_READ_AHEAD: Final = 256
"""Head rows of one front-queue level read per query."""
_SEQ_BITS: Final = 40
"""A back-queue row's handle is ``rank << _SEQ_BITS | seq`` (:func:`_handle`): a host's
``seq`` counts its appends and promotions, far below 2**40."""


def _handle(rank: int, seq: int) -> int:
    """The handle of the back-queue row keyed ``(host, rank, seq)``: both parts in one int."""
    return rank << _SEQ_BITS | seq


def _key_of(handle: int) -> tuple[int, int]:
    """``(rank, seq)`` of the row ``handle`` names (:func:`_handle` undone)."""
    return handle >> _SEQ_BITS, handle & ((1 << _SEQ_BITS) - 1)


_SEED_NAMESPACE: Final = "seed"
"""The blob namespace whose keys are the crawl's seeds (values empty)."""
_CATALOGUE_PAGE: Final = 512
_U64: Final = 1 << 64
_I64_MAX: Final = (1 << 63) - 1
_HASH_FIELDS: Final = frozenset({"content_hash", "simhash"})
_CATALOGUE_FIELDS: Final = tuple(spec.name for spec in fields(CatalogueEntry))
_CATALOGUE_UPSERT: Final = (
    f"INSERT INTO catalogue ({', '.join(_CATALOGUE_FIELDS)}) "
    f"VALUES ({', '.join('?' * len(_CATALOGUE_FIELDS))}) "
    "ON CONFLICT (url) DO UPDATE SET "
    + ", ".join(
        f"{name} = COALESCE(catalogue.{name}, excluded.{name})"
        if name == "referrer"
        else f"{name} = excluded.{name}"
        for name in _CATALOGUE_FIELDS[1:]
    )
    # courtly.archive.catalogue.replaces: a refusal never replaces a fetched page's entry
    + " WHERE NOT (catalogue.status IS NOT NULL AND excluded.status IS NULL"
    " AND excluded.skip_reason IS NOT NULL AND excluded.fail_reason IS NULL)"
)
_CATALOGUE_DISCOVERED: Final = (
    "INSERT INTO catalogue (url, depth, referrer, noindex, change_count) "
    "VALUES (?, ?, ?, 0, 0) ON CONFLICT (url) DO NOTHING"
)
_CATALOGUE_SELECT: Final = (
    f"SELECT seq, {', '.join(_CATALOGUE_FIELDS)} FROM catalogue WHERE seq > ? ORDER BY seq LIMIT ?"
)
_FRONT_INSERT: Final = "INSERT INTO front (level, id, host_key, depth, url) VALUES (?, ?, ?, ?, ?)"
_HOST_UPSERT: Final = (
    "INSERT OR REPLACE INTO hosts (host_key, next_allowed_at, last_fetch_s, latency_baseline_s, "
    "backoff_s, error_streak, parks, requests_made, crawl_delay_s, retired, queued, "
    "delay_source, last_status, leased) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_HOST_SELECT: Final = (
    "SELECT next_allowed_at, last_fetch_s, latency_baseline_s, backoff_s, error_streak, parks, "
    "requests_made, crawl_delay_s, retired, queued, delay_source, last_status "
    "FROM hosts WHERE host_key = ?"
)


class _LevelSelector:
    """Front-queue level counts and the shared :class:`LevelSelector` draw over them.

    The rows live on disk; only how many each level holds is needed to draw.
    """

    __slots__ = ("_counts", "_selector", "size")

    def __init__(
        self, weights: tuple[float, ...], rng: random.Random, max_skips: int, counts: list[int]
    ) -> None:
        self._selector = LevelSelector(weights, rng, max_skips=max_skips)
        self._counts = counts
        self.size = sum(counts)

    @property
    def counts(self) -> list[int]:
        return self._counts

    def clamp(self, level: int) -> int:
        return 0 if level < 0 else min(level, len(self._counts) - 1)

    def push(self, level: int) -> None:
        self._counts[level] += 1
        self.size += 1

    def pop(self) -> int | None:
        """Draw the level of the next pop (weighted, with ageing) and count it out."""
        chosen = self._selector.take(self._counts)
        if chosen is None:
            return None
        self._counts[chosen] -= 1
        self.size -= 1
        return chosen


def _signed64(value: int | None) -> int | None:
    if value is None:
        return None
    value &= _U64 - 1
    return value - _U64 if value > _I64_MAX else value


def _unsigned64(value: int | None) -> int | None:
    return None if value is None else value & (_U64 - 1)


_CATALOGUE_VALUES: Final = operator.attrgetter(*_CATALOGUE_FIELDS)
_CONVERTED: Final = tuple(
    (i, name)
    for i, name in enumerate(_CATALOGUE_FIELDS)
    if name in _HASH_FIELDS or name == "noindex"
)


def _catalogue_row(entry: CatalogueEntry) -> tuple[Any, ...]:
    """The catalogue row of ``entry``, in :data:`_CATALOGUE_FIELDS` order: hashes as signed
    64-bit integers, ``noindex`` as 0 or 1."""
    row = list(_CATALOGUE_VALUES(entry))
    for i, name in _CONVERTED:
        row[i] = int(row[i]) if name == "noindex" else _signed64(row[i])
    return tuple(row)


def _catalogue_entry(row: Sequence[Any]) -> CatalogueEntry:
    values = dict(zip(_CATALOGUE_FIELDS, row, strict=True))
    for name in _HASH_FIELDS:
        values[name] = _unsigned64(values[name])
    values["noindex"] = bool(values["noindex"])
    return CatalogueEntry(**values)


class _SqliteRows:
    """:class:`~courtly.store.scheduler.QueueRows` over the state file.

    Inserts are buffered and written by :meth:`write_pending` (before the step
    ends, and before any read that needs them); ``begin(n)`` opens the step's
    transaction and counts ``n`` row writes.
    """

    def __init__(
        self,
        db: sqlite3.Connection,
        begin: Callable[[int], None],
        levels: _LevelSelector,
        seen: BloomSeenSet,
        next_front_id: int,
    ) -> None:
        self._db = db
        self._begin = begin
        self.levels = levels
        self.seen = seen
        self.seen_tail = 0
        self.next_front_id = next_front_id
        n = len(levels.counts)
        self._front_buf: list[deque[tuple[int, str, int, str]]] = [deque() for _ in range(n)]
        self._front_after = [-1] * n
        self._front_inserts: list[tuple[int, int, str, int, str]] = []
        self._front_deletes: list[tuple[int, int]] = []
        self._back_inserts: list[tuple[str, int, int, int, str]] = []
        self._tail_inserts: list[tuple[str]] = []
        self.back: dict[str, list[int]] = {}
        """``host_key -> [rows, next seq]`` of each back queue."""
        self.hosts: dict[str, HostRow] = {}
        self.dirty: set[str] = set()

    # -- front tier --

    def front_len(self) -> int:
        return self.levels.size

    def front_push(self, level: int, host_key: str, depth: int, url: str) -> None:
        level = self.levels.clamp(level)
        self.levels.push(level)
        self._front_inserts.append((level, self.next_front_id, host_key, depth, url))
        self.next_front_id += 1

    def front_pop(self) -> tuple[str, int, int, str] | None:
        level = self.levels.pop()
        if level is None:
            return None
        buf = self._front_buf[level]
        if not buf:
            self._read_ahead(level)
        fid, host, depth, url = buf.popleft()
        self._front_deletes.append((level, fid))
        return host, level, depth, url

    def front_best_level(self) -> int | None:
        if self.levels.size:
            for level, n in enumerate(self.levels.counts):
                if n:
                    return level
        return None

    def _read_ahead(self, level: int) -> None:
        self.write_pending()
        rows = self._db.execute(
            "SELECT id, host_key, depth, url FROM front WHERE level = ? AND id > ? "
            "ORDER BY id LIMIT ?",
            (level, self._front_after[level], _FRONT_READ_AHEAD),
        ).fetchall()
        if not rows:
            raise sqlite3.DatabaseError(f"front queue level {level} is shorter than its count")
        self._front_buf[level].extend(rows)
        self._front_after[level] = rows[-1][0]

    # -- back queues --

    def back_append(self, host_key: str, rank: int, depth: int, url: str) -> None:
        span = self.back.get(host_key)
        if span is None:
            span = self.back[host_key] = [0, 0]
        self._back_inserts.append((host_key, rank, span[1], depth, url))
        span[0] += 1
        span[1] += 1

    def back_head(self, host_key: str) -> tuple[int, str, int, int]:
        if self._back_inserts:
            self.write_pending()
        row = self._db.execute(
            "SELECT depth, url, attempts, rank, seq FROM back WHERE host_key = ? "
            "ORDER BY rank, seq LIMIT 1",
            (host_key,),
        ).fetchone()
        if row is None:
            raise sqlite3.DatabaseError(f"back queue of {host_key} lost its head row")
        return int(row[0]), str(row[1]), int(row[2]), _handle(int(row[3]), int(row[4]))

    def back_retry(self, host_key: str, handle: int) -> None:
        if self._back_inserts:
            self.write_pending()
        self._begin(1)
        self._db.execute(
            "UPDATE back SET attempts = attempts + 1 WHERE host_key = ? AND rank = ? AND seq = ?",
            (host_key, *_key_of(handle)),
        )

    def back_pop(self, host_key: str, handle: int) -> None:
        if self._back_inserts:
            self.write_pending()
        span = self.back[host_key]
        self._begin(1)
        self._db.execute(
            "DELETE FROM back WHERE host_key = ? AND rank = ? AND seq = ?",
            (host_key, *_key_of(handle)),
        )
        span[0] -= 1
        if span[0] == 0:
            del self.back[host_key]

    def back_promote(self, host_key: str, url: str, rank: int, pinned: int | None) -> int | None:
        span = self.back.get(host_key)
        if span is None:
            return None
        if self._back_inserts:
            self.write_pending()
        pinned_seq = -1 if pinned is None else _key_of(pinned)[1]  # seq is unique in a host
        found = self._db.execute(
            "SELECT rank, seq FROM back INDEXED BY back_url"
            " WHERE host_key = ? AND url = ? AND rank > ? AND seq != ? ORDER BY rank, seq LIMIT 1",
            (host_key, url, rank, pinned_seq),
        ).fetchone()
        if found is None:
            return None
        self._begin(1)
        self._db.execute(
            "UPDATE back SET rank = ?, seq = ? WHERE host_key = ? AND rank = ? AND seq = ?",
            (rank, span[1], host_key, found[0], found[1]),
        )
        span[1] += 1
        return int(found[0])

    def back_clear(self, host_key: str) -> list[tuple[int, str]]:
        self.write_pending()
        if self.back.pop(host_key, None) is None:
            return []
        found = self._db.execute(
            "SELECT depth, url FROM back WHERE host_key = ? ORDER BY rank, seq", (host_key,)
        ).fetchall()
        self._begin(len(found))
        self._db.execute("DELETE FROM back WHERE host_key = ?", (host_key,))
        return [(int(depth), str(url)) for depth, url in found]

    # -- host rows --

    def host(self, host_key: str) -> HostRow:
        row = self.hosts.get(host_key)
        if row is not None:
            return row
        found = self._db.execute(_HOST_SELECT, (host_key,)).fetchone()
        if found is None:
            row = HostRow(HostState(host_key))
        else:
            source = DelaySource(found[10]) if found[10] else DelaySource.MIN_DELAY
            state = HostState(
                host_key,
                next_allowed_at=found[0],
                last_fetch_s=found[1],
                latency_baseline_s=found[2],
                backoff_s=found[3],
                error_streak=found[4],
                parks=found[5],
                requests_made=found[6],
                crawl_delay_s=found[7],
                retired=found[8],
                delay_source=source,
                last_status=found[11],
            )
            row = HostRow(state, found[9])
        self.hosts[host_key] = row
        return row

    def host_changed(self, host_key: str) -> None:
        self._begin(0)
        self.dirty.add(host_key)

    # -- seen-set, catalogue --

    def seen_add(self, url: str) -> bool:
        if not self.seen.add(url):
            return False
        self._tail_inserts.append((url,))
        return True

    def record(self, entries: Sequence[CatalogueEntry]) -> None:
        if entries:
            self._begin(len(entries))
            self._db.executemany(_CATALOGUE_UPSERT, [_catalogue_row(e) for e in entries])

    def record_found(self, referrer: str, found: Sequence[tuple[str, int]]) -> None:
        self._begin(len(found))
        self._db.executemany(
            _CATALOGUE_DISCOVERED, [(url, depth, referrer) for url, depth in found]
        )

    # -- writing --

    def write_pending(self) -> None:
        """Write the buffered row inserts and front deletes of this step, in that order."""
        db = self._db
        for sql, rows in (
            (_FRONT_INSERT, self._front_inserts),
            ("INSERT INTO seen_tail (url) VALUES (?)", self._tail_inserts),
            (
                "INSERT INTO back (host_key, rank, seq, depth, url) VALUES (?, ?, ?, ?, ?)",
                self._back_inserts,
            ),
            ("DELETE FROM front WHERE level = ? AND id = ?", self._front_deletes),
        ):
            if rows:
                self._begin(len(rows))
                db.executemany(sql, rows)
                if rows is self._tail_inserts:
                    self.seen_tail += len(rows)
                rows.clear()

    def write_hosts(self, leased: Callable[[str], bool]) -> None:
        """Write the changed host rows; ``leased(key)``: whether the host has a lease now."""
        if not self.dirty:
            return
        hosts = self.hosts
        rows = []
        for key in self.dirty:
            row = hosts[key]
            s = row.state
            rows.append(
                (
                    key,
                    s.next_allowed_at,
                    s.last_fetch_s,
                    s.latency_baseline_s,
                    s.backoff_s,
                    s.error_streak,
                    s.parks,
                    s.requests_made,
                    s.crawl_delay_s,
                    s.retired,
                    row.queued,
                    s.delay_source.value,
                    s.last_status,
                    leased(key),
                )
            )
        self._db.executemany(_HOST_UPSERT, rows)
        self.dirty.clear()

    def evict_hosts(self, cap: int, pinned: Callable[[str], bool]) -> None:
        """Drop clean cached host rows that are not ``pinned`` once past ``cap``."""
        hosts = self.hosts
        if len(hosts) <= cap:
            return
        excess = len(hosts) - cap * 3 // 4
        for key in list(hosts):
            if excess <= 0:
                break
            if pinned(key) or key in self.dirty:
                continue
            del hosts[key]
            excess -= 1


class SqliteStore:
    """A :class:`~courtly.store.base.FrontierStore` in an SQLite file (see the module doc).

    ``path`` is the state file (created if absent, resumed if present; one
    process at a time). ``rng`` drives the front-queue selector.
    ``seen_capacity``/``seen_error_rate`` size the Bloom seen-set of a new file
    (a resumed one keeps its own). ``commit_interval_s`` bounds how long a
    completed step may stay uncommitted (0: commit after every step);
    ``commit_max_ops`` commits sooner after that many row writes.
    ``commit_per_pass`` (with ``commit_interval_s == 0`` only): the steps made in one
    pass of the running event loop share one commit, made at the end of that pass
    (``loop.call_soon``) instead of after each step: a step is committed before the
    loop next waits for I/O or timers, so a crash can lose only the steps of the pass
    it cut short (outside a running loop, every step commits at once).
    ``synchronous`` is ``"full"`` (survives power loss) or ``"normal"``
    (survives process crashes). ``resume_guard_s``: after a resume, no host is
    leased before the first ``now_at`` seen plus this many seconds;
    ``resume_in_flight_s``: nor a host that had a lease at the crash before that
    ``now_at`` plus this many (see the module doc).
    ``host_cache_size`` bounds the cached host rows beyond the held hosts;
    ``cache_bytes`` is SQLite's page cache. ``read_only``: open an existing file
    where it cannot be written, for reading only
    (:func:`~courtly.store.sqlite_schema.open_read_only`); a step that would write
    raises :class:`~courtly.errors.StateError`.

    Raises :class:`~courtly.errors.StateError` if the file is not a usable
    courtly state file, or was made with another number of front-queue levels.
    """

    def __init__(
        self,
        path: Path,
        queues: QueueConfig | None = None,
        *,
        rng: random.Random | None = None,
        seen_capacity: int = 1_000_000,
        seen_error_rate: float = 1e-3,
        commit_interval_s: float = 0.2,
        commit_max_ops: int = 200_000,
        commit_per_pass: bool = False,
        synchronous: Literal["normal", "full"] = "full",
        resume_guard_s: float = 0.0,
        resume_in_flight_s: float = 0.0,
        host_cache_size: int = 100_000,
        seen_checkpoint_urls: int = 500_000,
        cache_bytes: int = 64 << 20,
        read_only: bool = False,
    ) -> None:
        if min(commit_interval_s, resume_guard_s, resume_in_flight_s) < 0:
            raise ValueError(
                "commit_interval_s, resume_guard_s and resume_in_flight_s must be >= 0"
            )
        self._path = Path(path)
        self._cfg = queues or QueueConfig()
        self._commit_interval_s = commit_interval_s
        self._commit_max_ops = max(1, commit_max_ops)
        self._commit_per_pass = commit_per_pass and commit_interval_s == 0
        self._resume_guard_s = resume_guard_s
        self._resume_in_flight_s = resume_in_flight_s
        self._in_flight_at_crash: list[str] = []
        self._host_cache_size = max(1, host_cache_size)
        self._seen_checkpoint_urls = max(1, seen_checkpoint_urls)
        self._read_only = read_only
        self._db = (
            open_read_only(self._path)
            if read_only
            else open_database(self._path, synchronous=synchronous, cache_bytes=cache_bytes)
        )
        self._in_tx = False
        self._ops = 0
        self._hold = False
        self._timer: asyncio.Handle | None = None
        self._broken: BaseException | None = None
        self._closed = False
        self._floor_pending = False
        self._token_ceiling = 0
        self._meta_written: dict[str, Any] = {}  # meta as last written (see _write_meta)
        self._rows: _SqliteRows
        self._sched: Scheduler
        try:
            self._load(rng or random.Random(0), seen_capacity, seen_error_rate)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StateError(f"{self._path}: the state file is corrupt ({exc})") from exc
        except BaseException:
            self._db.close()
            raise

    # -- the seam ---------------------------------------------------------

    async def add(
        self, entries: Sequence[QueuedUrl], now_at: float, budget: BudgetConfig
    ) -> list[AddStatus]:
        with self._step(now_at):
            return self._sched.add(entries, budget)

    async def revisit(
        self, entries: Sequence[QueuedUrl], now_at: float, budget: BudgetConfig
    ) -> list[AddStatus]:
        with self._step(now_at):
            return self._sched.add(entries, budget, known=True)

    async def promote(self, entries: Sequence[QueuedUrl], now_at: float) -> list[bool]:
        with self._step(now_at):
            return self._sched.promote(entries)

    async def lease(
        self, now_at: float, ttl_s: float, max_leases: int, *, ahead_s: float = 0.0
    ) -> LeaseBatch:
        asked_at = now_at + max(0.0, ahead_s)
        with self._step(asked_at):
            self._reserve_tokens(max_leases)
            leases, next_ready_at = self._sched.lease(asked_at, ttl_s, max_leases)
            return LeaseBatch(tuple(leases), next_ready_at)

    async def complete(
        self,
        lease: Lease,
        host: HostState,
        discovered: Sequence[QueuedUrl],
        now_at: float,
        budget: BudgetConfig,
        records: Sequence[CatalogueEntry] = (),
    ) -> list[AddStatus] | None:
        with self._step(now_at):
            if not self._sched.end_lease(lease, host):
                return None
            statuses = self._sched.complete(lease, discovered, now_at, budget)
            self._rows.record(records)
            return statuses

    async def release(
        self, lease: Lease, host: HostState | None, now_at: float, *, failed: bool = False
    ) -> bool:
        with self._step(now_at):
            if not self._sched.end_lease(lease, host):
                return False
            self._sched.release(lease, now_at, failed=failed)
            return True

    async def record(self, records: Sequence[CatalogueEntry]) -> None:
        with self._step(None):
            self._rows.record(records)

    async def catalogue(self) -> AsyncIterator[CatalogueEntry]:
        after = -1
        while True:
            with self._step(None):
                rows = self._db.execute(_CATALOGUE_SELECT, (after, _CATALOGUE_PAGE)).fetchall()
            for row in rows:
                yield _catalogue_entry(row[1:])
            if len(rows) < _CATALOGUE_PAGE:
                return
            after = rows[-1][0]

    async def get_blob(self, namespace: str, key: str) -> bytes | None:
        with self._step(None):
            row = self._db.execute(
                "SELECT value FROM blobs WHERE namespace = ? AND key = ?", (namespace, key)
            ).fetchone()
            return None if row is None else bytes(row[0])

    async def put_blob(self, namespace: str, key: str, value: bytes) -> None:
        with self._step(None):
            self._write()
            self._db.execute(
                "INSERT OR REPLACE INTO blobs (namespace, key, value) VALUES (?, ?, ?)",
                (namespace, key, bytes(value)),
            )

    # -- recrawl rows (courtly.store.revisit_rows) --

    async def revisit_states(self, keys: Sequence[tuple[str, str]]) -> dict[str, RevisitRow]:
        with self._step(None):
            return self._revisits.get([url for url, _ in keys])

    async def note_visits(self, rows: Sequence[RevisitRow]) -> None:
        with self._step(None):
            self._revisits.put(rows)
            self._hold = True  # committed with the next step: the page's completion

    async def requeue_due(
        self,
        now_at: float,
        limit: int,
        budget: BudgetConfig,
        *,
        levels: Sequence[int],
        retry_s: float,
        lost_after_s: float,
    ) -> DueBatch:
        with self._step(now_at):
            rows = self._revisits
            queued, refused = requeue(
                rows, self._sched, now_at, limit, budget,
                levels=levels, retry_s=retry_s, lost_after_s=lost_after_s,
            )  # fmt: skip
            return DueBatch(queued, refused, rows.next_due_at())

    async def next_revisit_at(self) -> float | None:
        with self._step(None):
            return self._revisits.next_due_at()

    async def revisit_rows(self) -> AsyncIterator[RevisitRow]:
        after = ""
        while True:
            with self._step(None):
                page = self._revisits.page(after)
            for row in page:
                yield row
            if not page:
                return
            after = page[-1].url

    async def get_blobs(self, namespace: str, keys: Sequence[str]) -> list[bytes | None]:
        with self._step(None):
            execute = self._db.execute
            out: list[bytes | None] = []
            for key in keys:
                row = execute(
                    "SELECT value FROM blobs WHERE namespace = ? AND key = ?", (namespace, key)
                ).fetchone()
                out.append(None if row is None else bytes(row[0]))
            return out

    async def put_blobs(self, namespace: str, items: Sequence[tuple[str, bytes]]) -> None:
        if not items:
            return
        with self._step(None):
            self._write(len(items))
            self._db.executemany(
                "INSERT OR REPLACE INTO blobs (namespace, key, value) VALUES (?, ?, ?)",
                [(namespace, key, bytes(value)) for key, value in items],
            )

    async def add_seeds(self, seeds: Sequence[str]) -> None:
        if not seeds:
            return
        with self._step(None):
            self._write(len(seeds))
            self._db.executemany(
                "INSERT OR IGNORE INTO blobs (namespace, key, value) VALUES (?, ?, x'')",
                [(_SEED_NAMESPACE, seed) for seed in seeds],
            )

    async def seeds(self) -> list[str]:
        with self._step(None):
            rows = self._db.execute(
                "SELECT key FROM blobs WHERE namespace = ?", (_SEED_NAMESPACE,)
            ).fetchall()
            return [str(row[0]) for row in rows]

    async def seed_count(self) -> int:
        with self._step(None):
            row = self._db.execute(
                "SELECT count(*) FROM blobs WHERE namespace = ?", (_SEED_NAMESPACE,)
            ).fetchone()
            return int(row[0])

    def queued_of(self, host_key: str) -> int | None:
        """URLs queued for a host, from the rows in memory (no I/O; ``None`` if not cached).
        For the dashboard's top-N table: see :class:`courtly.store.base.QueuedCounts`."""
        row = self._rows.hosts.get(host_key)
        return None if row is None else row.queued

    def holds(self, host_key: str) -> bool:
        """True while the host has URLs in a back queue or a lease out (no I/O). For the
        crawler's idle-while-ready measure: see :class:`courtly.store.base.HeldHosts`."""
        return self._sched.holds(host_key)

    def front_by_level(self) -> tuple[int, ...]:
        """URLs waiting in each front-queue level, from the counts kept in memory (no I/O).
        For the dashboard's queue depth by priority level: see
        :class:`courtly.store.base.FrontDepths`."""
        return tuple(self._rows.levels.counts)

    async def host_state(self, host_key: str) -> HostState:
        with self._step(None):
            return self._rows.host(host_key).state

    async def counts(self, now_at: float) -> FrontierCounts:
        with self._step(now_at):
            return self._sched.counts(now_at, self._rows.levels.size, len(self._rows.seen))

    async def flush(self) -> None:
        """Commit every step made so far (durable on return). Call it before
        reporting progress or results that depend on the state."""
        with self._step(None):
            self._commit()

    async def aclose(self) -> None:
        """Checkpoint the seen-set, commit, checkpoint the WAL and close the file.

        Leases still held are void at the next open (their URLs stay at the head
        of their back queues).
        """
        if self._closed:
            return
        self._closed = True
        self._cancel_timer()
        try:
            if self._broken is None and not self._read_only:
                if self._rows.seen_tail:
                    self._write()
                    self._checkpoint_seen()
                self._commit()
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:  # a full disk at the last commit: as in a step
            self._fail(exc)
            raise self._failure(exc) from exc
        finally:
            self._db.close()

    # -- transactions -----------------------------------------------------------

    @contextmanager
    def _step(self, now_at: float | None) -> Iterator[None]:
        """Run one step: refuse if closed or broken; afterwards, commit or arm the timer.

        An SQLite error in a step leaves RAM and file out of step: the store
        rolls back to the last commit and refuses further use.
        """
        if self._closed:
            raise StateError(f"{self._path}: the store is closed")
        if self._broken is not None:
            raise self._failure(self._broken)
        if now_at is not None and self._floor_pending:
            self._apply_resume_floor(now_at)
        self._hold = False  # a noted visit's hold ends with this step
        try:
            yield
            self._rows.write_pending()
            if self._in_tx and not self._hold:
                if self._ops >= self._commit_max_ops:
                    self._commit()
                elif self._commit_interval_s == 0:
                    if not self._commit_per_pass:
                        self._commit()
                    elif self._timer is None:
                        self._timer = self._pass_end()
                elif self._timer is None:
                    loop = asyncio.get_running_loop()
                    self._timer = loop.call_later(self._commit_interval_s, self._on_timer)
        except sqlite3.Error as exc:
            self._fail(exc)
            raise self._failure(exc) from exc

    def _write(self, rows: int = 1) -> None:
        """Open the step's transaction if none is open; count ``rows`` writes."""
        if not self._in_tx:
            if self._read_only:
                raise StateError(f"{self._path}: opened read-only, the state cannot change")
            self._db.execute("BEGIN")
            self._in_tx = True
        self._ops += rows

    def _commit(self) -> None:
        self._cancel_timer()
        if not self._in_tx:
            return
        rows = self._rows
        rows.write_pending()
        if rows.seen_tail >= self._seen_checkpoint_urls:
            self._checkpoint_seen()
        rows.write_hosts(self._sched.leased)
        self._write_meta()
        self._db.execute("COMMIT")
        self._in_tx = False
        self._ops = 0
        self._hold = False
        rows.evict_hosts(self._host_cache_size, self._sched.holds)

    def _pass_end(self) -> asyncio.Handle | None:
        """A commit at the end of the running loop's pass; ``None`` (committed now) outside one."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._commit()
            return None
        return loop.call_soon(self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._closed or self._broken is not None:
            return
        if self._hold and self._commit_interval_s == 0:
            return  # the step that ends the hold (the page's completion) commits both
        if self._hold:  # a noted visit waits for its completion: commit them together
            self._timer = asyncio.get_running_loop().call_later(
                self._commit_interval_s, self._on_timer
            )
            return
        try:
            self._commit()
        except sqlite3.Error as exc:
            self._fail(exc)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _failure(self, exc: BaseException) -> CrawlFailed:
        """What a step raises once a write failed (then, and at every step after it)."""
        return CrawlFailed(
            f"{self._path}: the state file failed ({write_failure(exc)}); {RESUME_HINT}"
        )

    def _fail(self, exc: BaseException) -> None:
        self._broken = exc
        self._cancel_timer()
        if self._in_tx:
            with suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            self._in_tx = False

    def _write_meta(self) -> None:
        """Write the meta values that differ from the ones this store last wrote (every
        one at the first commit after opening): most commits change one or two."""
        rows, sched, written = self._rows, self._sched, self._meta_written
        values: tuple[tuple[str, Any], ...] = (
            ("levels", self._cfg.levels),
            ("level_counts", rows.levels.counts),
            ("next_front_id", rows.next_front_id),
            ("token_ceiling", self._token_ceiling),
            ("requests_made", sched.requests_made),
            ("hosts_retired", sched.hosts_retired),
        )
        changed = [(k, v) for k, v in values if written.get(k) != v]
        if not changed:
            return
        self._db.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [(k, json.dumps(v) if k == "level_counts" else v) for k, v in changed],
        )
        for key, value in changed:
            written[key] = list(value) if key == "level_counts" else value

    def _checkpoint_seen(self) -> None:
        """Save the Bloom filter and forget the tail it now covers (inside the transaction)."""
        rows = self._rows
        rows.write_pending()
        self._db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('seen', ?)", (rows.seen.to_bytes(),)
        )
        self._db.execute("DELETE FROM seen_tail")
        rows.seen_tail = 0

    def _reserve_tokens(self, wanted: int) -> None:
        """Make sure ``wanted`` tokens are below a committed ceiling (commits if not)."""
        token = self._sched.token
        if token + max(0, wanted) <= self._token_ceiling:
            return
        self._token_ceiling = token + max(0, wanted) + _TOKEN_BLOCK
        self._write()
        self._commit()

    # -- open / resume ------------------------------------------------------------

    def _load(self, rng: random.Random, seen_capacity: int, seen_error_rate: float) -> None:
        db = self._db
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        levels = self._cfg.levels
        stored_levels = meta.get("levels")
        if stored_levels is not None and stored_levels != levels:
            raise StateError(
                f"{self._path}: the crawl was started with {stored_levels} front-queue levels, "
                f"not {levels}; resume it with the same queue configuration"
            )
        counts = [0] * levels
        if "level_counts" in meta:
            counts = [int(n) for n in json.loads(meta["level_counts"])]
            if len(counts) != levels:
                raise StateError(f"{self._path}: inconsistent level counts")
        blob = meta.get("seen")
        seen = (
            BloomSeenSet.from_bytes(bytes(blob))
            if blob is not None
            else BloomSeenSet(seen_capacity, seen_error_rate)
        )
        rows = self._rows = _SqliteRows(
            db,
            self._write,
            _LevelSelector(self._cfg.weights, rng, self._cfg.max_skips, counts),
            seen,
            int(meta.get("next_front_id", 0)),
        )
        sched = self._sched = Scheduler(rows, self._cfg)
        self._revisits = SqliteRevisitRows(db, self._write)
        self._token_ceiling = int(meta.get("token_ceiling", 0))
        sched.token = self._token_ceiling
        sched.requests_made = int(meta.get("requests_made", 0))
        sched.hosts_retired = int(meta.get("hosts_retired", 0))

        add = seen.add
        for (url,) in db.execute("SELECT url FROM seen_tail"):
            add(url)
            rows.seen_tail += 1

        # one pass over back's key: rows per rank and last seq per host
        ranks: dict[str, list[int]] = {}
        last_seq: dict[str, int] = {}
        for host, rank, length, last in db.execute(
            "SELECT host_key, rank, count(*), max(seq) FROM back GROUP BY host_key, rank"
        ).fetchall():
            counts = ranks.setdefault(host, [0] * back_ranks(self._cfg.levels))
            counts[min(int(rank), len(counts) - 1)] += int(length)
            last_seq[host] = max(last_seq.get(host, -1), int(last))
        for host, counts in ranks.items():
            rows.back[host] = [sum(counts), last_seq[host] + 1]
            sched.restore(host, counts, rows.host(host).state.next_allowed_at)
        if self._resume_in_flight_s > 0:
            self._in_flight_at_crash = [
                key for (key,) in db.execute("SELECT host_key FROM hosts WHERE leased = 1")
            ]
        self._floor_pending = bool(meta) and (
            self._resume_guard_s > 0 or bool(self._in_flight_at_crash)
        )

    def _apply_resume_floor(self, now_at: float) -> None:
        """After a resume, hold every host until ``now_at + resume_guard_s``, and each
        host leased at the crash until ``now_at + resume_in_flight_s``."""
        self._floor_pending = False
        rows, until = self._rows, now_at + self._resume_in_flight_s
        held: dict[str, float] = {}
        for key in self._in_flight_at_crash:
            row = rows.host(key)
            if row.state.retired is None and row.state.next_allowed_at < until:
                row.state = replace(
                    row.state, next_allowed_at=until, delay_source=DelaySource.RESUMED
                )
                held[key] = until
            rows.host_changed(key)  # written again, no longer leased
        self._in_flight_at_crash = []
        self._sched.hold_until(now_at + self._resume_guard_s, held)

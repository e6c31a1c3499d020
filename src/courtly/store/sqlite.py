"""The SQLite store: the two tiers on disk, crash-safe and resumable.

Same semantics as :class:`~courtly.store.memory.MemoryStore` (the contract suite
and the property tests run against both); the state lives in one SQLite file
(schema in :mod:`courtly.store.sqlite_schema`) and RAM stays bounded whatever
the number of queued URLs:

* **front queues**: rows of the ``front`` table ordered by ``(level, id)``; in
  RAM only the per-level counts (the selector draws a level, as
  :class:`~courtly.frontier.front.FrontQueues` does) and a small read-ahead
  buffer of each level's head rows;
* **back queues**: rows of the ``back`` table ordered by ``(host_key, seq)``;
  in RAM only, per host holding a back queue (at most ``max_back_queues``), the
  head and tail sequence numbers;
* **ready heap** and **leases**: in RAM only (at most ``max_back_queues``
  entries). A leased URL keeps its row at the head of its back queue until
  ``complete`` deletes it, so ``release``, expiry and a crash all leave it
  exactly where it was: at the head;
* **hosts**: a write-back cache of the ``hosts`` table (politeness state and
  queued-URL count per host), bounded by ``host_cache_size`` clean entries;
* **seen-set**: a :class:`~courtly.frontier.seen.BloomSeenSet` in RAM,
  checkpointed into ``meta`` every ``seen_checkpoint_urls`` new URLs; the URLs
  added since the checkpoint are kept in ``seen_tail`` and replayed at open, so
  the restored filter is the one of the last commit, bit for bit.

Durability. All writes of a step go into one open transaction; the store
commits it at most ``commit_interval_s`` after the first uncommitted step (a
timer on the running event loop), or at once past ``commit_max_ops`` rows, at
:meth:`SqliteStore.flush` and at :meth:`SqliteStore.aclose`. A commit only ever
happens between two steps, so the file always holds the state after some step:
a crash loses at most the steps of the last commit window, whole. With
``synchronous="full"`` (the default) a commit survives a power cut too; with
``"normal"`` it survives a process crash (``kill -9``) but a power cut may roll
back the last commits (never corrupt the file). See ``docs/state.md``.

Resume. Opening an existing file restores everything but the leases: they are
void, and their URLs are still at the head of their back queues. Fencing tokens
are reserved in blocks (the ceiling is committed before a token above it is
handed out) and a reopened store starts above the last ceiling, so tokens keep
increasing across restarts. A host may have been fetched in the last commit
window without its new ``next_allowed_at`` being committed, so after a resume
no host is served before ``first now_at seen + resume_guard_s``: pass the
crawl's minimum politeness delay.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import math
import random
import sqlite3
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import fields
from pathlib import Path
from typing import Any, Final, Literal

from courtly.archive.catalogue import CatalogueEntry
from courtly.errors import StateError
from courtly.frontier.budget import BudgetConfig, is_over_queue_budget
from courtly.frontier.config import QueueConfig
from courtly.frontier.front import LevelSelector
from courtly.frontier.records import AddStatus, FrontierCounts, HostState, Lease, QueuedUrl
from courtly.frontier.seen import BloomSeenSet
from courtly.store.base import LeaseBatch
from courtly.store.sqlite_schema import open_database

__all__ = ["SqliteStore"]

_TOKEN_BLOCK: Final = 100_000
"""Fencing tokens reserved per committed ceiling."""
_FRONT_READ_AHEAD: Final = 256
"""Head rows of one front-queue level read per query."""
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
)
_CATALOGUE_DISCOVERED: Final = (
    "INSERT INTO catalogue (url, depth, referrer, noindex, change_count) "
    "VALUES (?, ?, ?, 0, 0) ON CONFLICT (url) DO NOTHING"
)
_CATALOGUE_SELECT: Final = (
    f"SELECT seq, {', '.join(_CATALOGUE_FIELDS)} FROM catalogue WHERE seq > ? ORDER BY seq LIMIT ?"
)
_HOST_UPSERT: Final = (
    "INSERT OR REPLACE INTO hosts (host_key, next_allowed_at, last_fetch_s, latency_baseline_s, "
    "backoff_s, error_streak, parks, requests_made, crawl_delay_s, retired, queued) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_HOST_SELECT: Final = (
    "SELECT next_allowed_at, last_fetch_s, latency_baseline_s, backoff_s, error_streak, parks, "
    "requests_made, crawl_delay_s, retired, queued FROM hosts WHERE host_key = ?"
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


class _Back:
    """A back queue: rows ``head <= seq < tail`` of ``back`` for one host; the head
    row stays in place while it is leased."""

    __slots__ = ("head", "leased", "tail")

    def __init__(self, head: int, tail: int) -> None:
        self.head = head
        self.tail = tail
        self.leased = False


class _HostRow:
    """A cached ``hosts`` row: politeness state and URLs queued (front + back, leased included)."""

    __slots__ = ("queued", "state")

    def __init__(self, state: HostState, queued: int) -> None:
        self.state = state
        self.queued = queued


def _signed64(value: int | None) -> int | None:
    if value is None:
        return None
    value &= _U64 - 1
    return value - _U64 if value > _I64_MAX else value


def _unsigned64(value: int | None) -> int | None:
    return None if value is None else value & (_U64 - 1)


def _catalogue_row(entry: CatalogueEntry) -> tuple[Any, ...]:
    row: list[Any] = []
    for name in _CATALOGUE_FIELDS:
        value = getattr(entry, name)
        if name in _HASH_FIELDS:
            value = _signed64(value)
        elif name == "noindex":
            value = int(value)
        row.append(value)
    return tuple(row)


def _catalogue_entry(row: Sequence[Any]) -> CatalogueEntry:
    values = dict(zip(_CATALOGUE_FIELDS, row, strict=True))
    for name in _HASH_FIELDS:
        values[name] = _unsigned64(values[name])
    values["noindex"] = bool(values["noindex"])
    return CatalogueEntry(**values)


class SqliteStore:
    """A :class:`~courtly.store.base.FrontierStore` in an SQLite file (see the module doc).

    ``path`` is the state file (created if absent, resumed if present; one
    process at a time). ``rng`` drives the front-queue selector.
    ``seen_capacity``/``seen_error_rate`` size the Bloom seen-set of a new file
    (a resumed one keeps its own). ``commit_interval_s`` bounds how long a
    completed step may stay uncommitted (0: commit after every step);
    ``commit_max_ops`` commits sooner after that many row writes.
    ``synchronous`` is ``"full"`` (survives power loss) or ``"normal"``
    (survives process crashes). ``resume_guard_s``: after a resume, no host is
    leased before the first ``now_at`` seen plus this many seconds.
    ``host_cache_size`` bounds the cached host rows beyond those with a back
    queue; ``cache_bytes`` is SQLite's page cache.

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
        synchronous: Literal["normal", "full"] = "full",
        resume_guard_s: float = 0.0,
        host_cache_size: int = 100_000,
        seen_checkpoint_urls: int = 500_000,
        cache_bytes: int = 64 << 20,
    ) -> None:
        if commit_interval_s < 0 or resume_guard_s < 0:
            raise ValueError("commit_interval_s and resume_guard_s must be >= 0")
        self._path = Path(path)
        self._cfg = queues or QueueConfig()
        self._commit_interval_s = commit_interval_s
        self._commit_max_ops = max(1, commit_max_ops)
        self._resume_guard_s = resume_guard_s
        self._host_cache_size = max(1, host_cache_size)
        self._seen_checkpoint_urls = max(1, seen_checkpoint_urls)
        self._db = open_database(self._path, synchronous=synchronous, cache_bytes=cache_bytes)
        self._in_tx = False
        self._ops = 0
        self._timer: asyncio.TimerHandle | None = None
        self._broken: BaseException | None = None
        self._closed = False

        levels = self._cfg.levels
        self._front_buf: list[deque[tuple[int, str, int, str]]] = [deque() for _ in range(levels)]
        self._front_after = [-1] * levels
        self._front_deletes: list[tuple[int, int]] = []
        self._back: dict[str, _Back] = {}
        self._back_size = 0
        self._heap: list[tuple[float, int, str]] = []
        self._seq = 0
        self._leases: dict[str, Lease] = {}
        self._expiry: list[tuple[float, int, str]] = []
        self._hosts: dict[str, _HostRow] = {}
        self._dirty: set[str] = set()
        self._floor_at = -math.inf
        self._floor_pending = False
        self._levels: _LevelSelector
        self._seen: BloomSeenSet
        self._seen_tail = 0
        self._next_front_id = 0
        self._token = 0
        self._token_ceiling = 0
        self._requests = 0
        self._retired = 0
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
            statuses = self._add(entries, budget)
            self._refill()
            return statuses

    async def lease(self, now_at: float, ttl_s: float, max_leases: int) -> LeaseBatch:
        with self._step(now_at):
            self._reserve_tokens(max_leases)
            self._reclaim(now_at)
            self._refill()
            heap = self._heap
            out: list[Lease] = []
            read = self._db.execute
            while heap and len(out) < max_leases and heap[0][0] <= now_at:
                _, _, host = heapq.heappop(heap)
                queue = self._back[host]
                row = read(
                    "SELECT depth, url FROM back WHERE host_key = ? AND seq = ?", (host, queue.head)
                ).fetchone()
                if row is None:
                    raise sqlite3.DatabaseError(f"back queue of {host} lost its head row")
                queue.leased = True
                self._back_size -= 1
                self._token += 1
                expires_at = now_at + ttl_s
                state = self._host_row(host).state
                lease = Lease(self._token, host, row[1], row[0], now_at, expires_at, state)
                self._leases[host] = lease
                heapq.heappush(self._expiry, (expires_at, self._token, host))
                out.append(lease)
            return LeaseBatch(tuple(out), heap[0][0] if heap else None)

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
            if not self._end_lease(lease, host):
                return None
            key = lease.host_key
            queue = self._back[key]
            self._write()
            self._db.execute("DELETE FROM back WHERE host_key = ? AND seq = ?", (key, queue.head))
            queue.head += 1
            self._host_row(key).queued -= 1
            self._dirty.add(key)
            statuses = self._add(discovered, budget)
            self._record(records)
            new = [
                (entry.url, entry.depth, lease.url)
                for entry, status in zip(discovered, statuses, strict=True)
                if status is AddStatus.QUEUED
            ]
            if new:
                self._write(len(new))
                self._db.executemany(_CATALOGUE_DISCOVERED, new)
            self._requeue(key, host)
            self._refill()
            return statuses

    async def release(self, lease: Lease, host: HostState | None, now_at: float) -> bool:
        with self._step(now_at):
            if not self._end_lease(lease, host):
                return False
            self._back_size += 1
            self._requeue(lease.host_key, self._host_row(lease.host_key).state)
            self._refill()
            return True

    async def record(self, records: Sequence[CatalogueEntry]) -> None:
        with self._step(None):
            self._record(records)

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

    async def host_state(self, host_key: str) -> HostState:
        with self._step(None):
            return self._host_row(host_key).state

    async def counts(self, now_at: float) -> FrontierCounts:
        with self._step(now_at):
            ready = sum(1 for at, _, _ in self._heap if at <= now_at)
            parked = 0
            for _, _, host in self._heap:
                state = self._host_row(host).state
                if state.next_allowed_at > now_at and state.error_streak + state.parks:
                    parked += 1
            front = self._levels.size
            return FrontierCounts(
                queued=front + self._back_size,
                front_queued=front,
                back_queued=self._back_size,
                hosts_active=len(self._back),
                hosts_ready=ready,
                hosts_snoozed=len(self._heap) - ready,
                hosts_parked=parked,
                hosts_retired=self._retired,
                leased=len(self._leases),
                seen=len(self._seen),
                requests_made=self._requests,
            )

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
            if self._broken is None:
                if self._seen_tail:
                    self._write()
                    self._checkpoint_seen()
                self._commit()
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
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
            raise StateError(f"{self._path}: the store failed earlier ({self._broken})")
        if now_at is not None and self._floor_pending:
            self._apply_resume_floor(now_at)
        try:
            yield
            if self._in_tx:
                if self._ops >= self._commit_max_ops or self._commit_interval_s == 0:
                    self._commit()
                elif self._timer is None:
                    loop = asyncio.get_running_loop()
                    self._timer = loop.call_later(self._commit_interval_s, self._on_timer)
        except sqlite3.Error as exc:
            self._fail(exc)
            raise StateError(f"{self._path}: state file error ({exc})") from exc

    def _write(self, rows: int = 1) -> None:
        """Open the step's transaction if none is open; count ``rows`` writes."""
        if not self._in_tx:
            self._db.execute("BEGIN")
            self._in_tx = True
        self._ops += rows

    def _commit(self) -> None:
        self._cancel_timer()
        if not self._in_tx:
            return
        if self._seen_tail >= self._seen_checkpoint_urls:
            self._checkpoint_seen()
        self._write_hosts()
        self._write_meta()
        self._db.execute("COMMIT")
        self._in_tx = False
        self._ops = 0
        self._evict_hosts()

    def _on_timer(self) -> None:
        self._timer = None
        if self._closed or self._broken is not None:
            return
        try:
            self._commit()
        except sqlite3.Error as exc:
            self._fail(exc)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fail(self, exc: BaseException) -> None:
        self._broken = exc
        self._cancel_timer()
        if self._in_tx:
            with suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            self._in_tx = False

    def _write_hosts(self) -> None:
        if not self._dirty:
            return
        hosts = self._hosts
        rows = []
        for key in self._dirty:
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
                )
            )
        self._db.executemany(_HOST_UPSERT, rows)
        self._dirty.clear()

    def _write_meta(self) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [
                ("levels", self._cfg.levels),
                ("level_counts", json.dumps(self._levels.counts)),
                ("next_front_id", self._next_front_id),
                ("token_ceiling", self._token_ceiling),
                ("requests_made", self._requests),
                ("hosts_retired", self._retired),
            ],
        )

    def _checkpoint_seen(self) -> None:
        """Save the Bloom filter and forget the tail it now covers (inside the transaction)."""
        self._db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('seen', ?)", (self._seen.to_bytes(),)
        )
        self._db.execute("DELETE FROM seen_tail")
        self._seen_tail = 0

    def _evict_hosts(self) -> None:
        """Drop clean cached host rows (not pinned by a back queue or lease) past the cap."""
        hosts = self._hosts
        if len(hosts) <= self._host_cache_size:
            return
        target = self._host_cache_size * 3 // 4
        excess = len(hosts) - target
        pinned_back = self._back
        pinned_lease = self._leases
        for key in list(hosts):
            if excess <= 0:
                break
            if key in pinned_back or key in pinned_lease:
                continue
            del hosts[key]
            excess -= 1

    def _reserve_tokens(self, wanted: int) -> None:
        """Make sure ``wanted`` tokens are below a committed ceiling (commits if not)."""
        wanted = max(0, min(wanted, max(len(self._back), self._cfg.max_back_queues)))
        if self._token + wanted <= self._token_ceiling:
            return
        self._token_ceiling = self._token + wanted + _TOKEN_BLOCK
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
        self._levels = _LevelSelector(self._cfg.weights, rng, self._cfg.max_skips, counts)
        self._next_front_id = int(meta.get("next_front_id", 0))
        self._token_ceiling = int(meta.get("token_ceiling", 0))
        self._token = self._token_ceiling
        self._requests = int(meta.get("requests_made", 0))
        self._retired = int(meta.get("hosts_retired", 0))

        blob = meta.get("seen")
        self._seen = (
            BloomSeenSet.from_bytes(bytes(blob))
            if blob is not None
            else BloomSeenSet(seen_capacity, seen_error_rate)
        )
        self._seen_tail = 0
        add = self._seen.add
        for (url,) in db.execute("SELECT url FROM seen_tail"):
            add(url)
            self._seen_tail += 1

        # skip-scan the back table: one head and one tail lookup per host holding a queue
        after = ""
        while True:
            row = db.execute(
                "SELECT host_key, seq FROM back WHERE host_key > ? ORDER BY host_key, seq LIMIT 1",
                (after,),
            ).fetchone()
            if row is None:
                break
            host, head = row
            (last,) = db.execute("SELECT max(seq) FROM back WHERE host_key = ?", (host,)).fetchone()
            self._back[host] = _Back(head, last + 1)
            self._back_size += last + 1 - head
            self._seq += 1
            self._heap.append((self._host_row(host).state.next_allowed_at, self._seq, host))
            after = host
        heapq.heapify(self._heap)
        self._floor_pending = bool(meta) and self._resume_guard_s > 0

    def _apply_resume_floor(self, now_at: float) -> None:
        """After a resume, hold every host until ``now_at + resume_guard_s``."""
        self._floor_pending = False
        self._floor_at = now_at + self._resume_guard_s
        floor = self._floor_at
        self._heap = [(max(at, floor), seq, host) for at, seq, host in self._heap]
        heapq.heapify(self._heap)

    # -- internals ------------------------------------------------------------------

    def _host_row(self, host_key: str) -> _HostRow:
        row = self._hosts.get(host_key)
        if row is not None:
            return row
        found = self._db.execute(_HOST_SELECT, (host_key,)).fetchone()
        if found is None:
            row = _HostRow(HostState(host_key), 0)
        else:
            state = HostState(host_key, *found[:9])
            row = _HostRow(state, found[9])
        self._hosts[host_key] = row
        return row

    def _push(self, host_key: str, at: float) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (max(at, self._floor_at), self._seq, host_key))

    def _add(self, entries: Sequence[QueuedUrl], budget: BudgetConfig) -> list[AddStatus]:
        statuses: list[AddStatus] = []
        append = statuses.append
        hosts = self._hosts
        host_row = self._host_row
        leases = self._leases
        dirty = self._dirty
        levels = self._levels
        seen_add = self._seen.add
        rows: list[tuple[int, int, str, int, str]] = []
        tail: list[tuple[str]] = []
        fid = self._next_front_id
        check_budget = budget.max_queued_per_host is not None or budget.max_queued is not None
        for entry in entries:
            host = entry.host_key
            row = hosts.get(host) or host_row(host)
            if row.state.retired is not None:
                append(AddStatus.HOST_RETIRED)
                continue
            if check_budget:
                queued = row.queued - (1 if host in leases else 0)
                over = is_over_queue_budget(queued, levels.size + self._back_size, budget)
                if over:
                    append(AddStatus.OVER_HOST_BUDGET if over == 1 else AddStatus.OVER_CRAWL_BUDGET)
                    continue
            url = entry.url
            if not seen_add(url):
                append(AddStatus.SEEN)
                continue
            level = levels.clamp(entry.level)
            levels.push(level)
            rows.append((level, fid, host, entry.depth, url))
            tail.append((url,))
            fid += 1
            row.queued += 1
            dirty.add(host)
            append(AddStatus.QUEUED)
        if rows:
            self._write(2 * len(rows))
            self._next_front_id = fid
            self._db.executemany(
                "INSERT INTO front (level, id, host_key, depth, url) VALUES (?, ?, ?, ?, ?)", rows
            )
            self._db.executemany("INSERT INTO seen_tail (url) VALUES (?)", tail)
            self._seen_tail += len(tail)
        return statuses

    def _record(self, records: Sequence[CatalogueEntry]) -> None:
        if records:
            self._write(len(records))
            self._db.executemany(_CATALOGUE_UPSERT, [_catalogue_row(e) for e in records])

    def _end_lease(self, lease: Lease, host: HostState | None) -> bool:
        current = self._leases.get(lease.host_key)
        if current is None or current.token != lease.token:
            return False
        del self._leases[lease.host_key]
        self._back[lease.host_key].leased = False
        if host is not None:
            row = self._host_row(lease.host_key)
            self._requests += max(0, host.requests_made - row.state.requests_made)
            row.state = host
            self._write(0)
            self._dirty.add(lease.host_key)
        return True

    def _requeue(self, host_key: str, state: HostState) -> None:
        """Put an unleased host back in the heap, or release its empty back queue."""
        queue = self._back[host_key]
        waiting = queue.tail - queue.head
        if state.retired is not None:
            self._retired += 1
            self._back_size -= waiting
            row = self._host_row(host_key)
            row.queued -= waiting
            self._write(waiting)
            self._dirty.add(host_key)
            self._db.execute("DELETE FROM back WHERE host_key = ?", (host_key,))
            del self._back[host_key]
        elif waiting:
            self._push(host_key, state.next_allowed_at)
        else:
            del self._back[host_key]

    def _reclaim(self, now_at: float) -> None:
        """Void expired leases: the URL is still at the head of its queue; host back in the heap."""
        expiry = self._expiry
        while expiry and expiry[0][0] <= now_at:
            _, token, host = heapq.heappop(expiry)
            lease = self._leases.get(host)
            if lease is None or lease.token != token:
                continue  # completed or released in time
            del self._leases[host]
            self._back[host].leased = False
            self._back_size += 1
            self._push(host, max(self._host_row(host).state.next_allowed_at, now_at))

    def _refill(self) -> None:
        """Move URLs from the front tier into back queues while a back queue is free."""
        back = self._back
        levels = self._levels
        limit = self._cfg.max_back_queues
        deletes = self._front_deletes
        inserts: list[tuple[str, int, int, str]] = []
        while len(back) < limit and levels.size:
            level = levels.pop()
            assert level is not None
            buf = self._front_buf[level]
            if not buf:
                self._read_ahead(level)
            fid, host, depth, url = buf.popleft()
            deletes.append((level, fid))
            queue = back.get(host)
            if queue is not None:
                inserts.append((host, queue.tail, depth, url))
                queue.tail += 1
                self._back_size += 1
                continue
            row = self._host_row(host)
            if row.state.retired is not None:
                row.queued -= 1
                self._dirty.add(host)
                continue
            back[host] = _Back(0, 1)
            inserts.append((host, 0, depth, url))
            self._back_size += 1
            self._push(host, row.state.next_allowed_at)
        if deletes:
            self._write(len(deletes) + len(inserts))
            self._db.executemany("DELETE FROM front WHERE level = ? AND id = ?", deletes)
            deletes.clear()
        if inserts:
            self._db.executemany(
                "INSERT INTO back (host_key, seq, depth, url) VALUES (?, ?, ?, ?)", inserts
            )

    def _read_ahead(self, level: int) -> None:
        rows = self._db.execute(
            "SELECT id, host_key, depth, url FROM front WHERE level = ? AND id > ? "
            "ORDER BY id LIMIT ?",
            (level, self._front_after[level], _FRONT_READ_AHEAD),
        ).fetchall()
        if not rows:
            raise sqlite3.DatabaseError(f"front queue level {level} is shorter than its count")
        self._front_buf[level].extend(rows)
        self._front_after[level] = rows[-1][0]

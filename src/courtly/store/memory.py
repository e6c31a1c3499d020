"""The in-memory store: the scheduler's rows in deques and dicts.

The state machine is :class:`~courtly.store.scheduler.Scheduler`; this store
keeps its rows:

* **front queues**: one FIFO per priority level, drawn by a biased selector
  (:class:`~courtly.frontier.front.FrontQueues`); an entry is one compact string,
  ``"<depth> <url>"``, or ``"<depth>@<host_key> <url>"`` when the host key is not
  the URL's own host, and ``"<depth>!<attempts>…"`` in a back queue once an
  attempt at the URL failed (about 130 bytes of RSS per queued URL, seen-set included);
* **back queues**: per held host, one deque of the same entry strings per rank
  (the news lane, then one per level: see :mod:`courtly.store.scheduler`);
  a promotion scans the host's worse ranks for the URL (no index by URL: that
  would double the bytes per queued URL);
* **host rows**: ``host_key -> HostRow`` (politeness state and queued count),
  kept for every host seen;
* **seen-set**, **catalogue**, **blobs** and **seeds**: a :class:`SeenSet` and dicts;
* **recrawl rows** (:mod:`courtly.store.revisit_rows`): a dict and a due heap.

Every step runs to its end without awaiting, so each is atomic; nothing is
durable.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

from courtly.archive.catalogue import CatalogueEntry, replaces
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.front import FrontQueues
from courtly.frontier.records import AddStatus, FrontierCounts, HostState, Lease, QueuedUrl
from courtly.frontier.seen import ExactSeenSet, SeenSet
from courtly.store.base import LeaseBatch
from courtly.store.revisit_memory import MemoryRevisitRows
from courtly.store.revisit_rows import DueBatch, RevisitRow, requeue
from courtly.store.scheduler import HostRow, Scheduler, back_ranks

__all__ = ["MemoryStore"]


class _MemoryRows:
    """:class:`~courtly.store.scheduler.QueueRows` in process memory."""

    __slots__ = ("back", "catalogue", "front", "hosts", "ranks", "seen")

    def __init__(self, queues: QueueConfig, seen: SeenSet, rng: random.Random) -> None:
        self.front: FrontQueues[str] = FrontQueues(queues.weights, rng, max_skips=queues.max_skips)
        self.ranks = back_ranks(queues.levels)
        self.back: dict[str, list[deque[str] | None]] = {}
        """``host_key -> one deque per rank`` (``None`` until the rank is used)."""
        self.hosts: dict[str, HostRow] = {}
        self.seen = seen
        self.catalogue: dict[str, CatalogueEntry] = {}

    def front_len(self) -> int:
        return len(self.front)

    def front_push(self, level: int, host_key: str, depth: int, url: str) -> None:
        self.front.push(level, _encode(host_key, depth, url))

    def front_pop(self) -> tuple[str, int, int, str] | None:
        popped = self.front.pop()
        if popped is None:
            return None
        host, depth, url = _decode(popped[1])
        return host, popped[0], depth, url

    def front_best_level(self) -> int | None:
        return self.front.best_level()

    def _rank(self, host_key: str, rank: int) -> deque[str]:
        queues = self.back.get(host_key)
        if queues is None:
            queues = self.back[host_key] = [None] * self.ranks
        queue = queues[rank]
        if queue is None:
            queue = queues[rank] = deque()
        return queue

    def back_append(self, host_key: str, rank: int, depth: int, url: str) -> None:
        self._rank(host_key, rank).append(_encode(host_key, depth, url))

    def back_head(self, host_key: str) -> tuple[int, str, int, int]:
        for rank, queue in enumerate(self.back[host_key]):
            if queue:
                head, _, url = queue[0].partition(" ")
                counts = head.partition("@")[0]
                depth, _, attempts = counts.partition("!")
                return int(depth), url, int(attempts or 0), rank
        raise LookupError(f"back queue of {host_key} is empty")

    def back_retry(self, host_key: str, handle: int) -> None:
        queue = self.back[host_key][handle]
        assert queue
        head, _, url = queue[0].partition(" ")
        counts, at, host = head.partition("@")
        depth, _, attempts = counts.partition("!")
        queue[0] = f"{depth}!{int(attempts or 0) + 1}{at}{host} {url}"

    def back_pop(self, host_key: str, handle: int) -> None:
        queues = self.back[host_key]
        queue = queues[handle]
        assert queue
        queue.popleft()
        if not queue:
            queues[handle] = None
            if not any(queues):
                del self.back[host_key]

    def back_promote(self, host_key: str, url: str, rank: int, pinned: int | None) -> int | None:
        queues = self.back.get(host_key)
        if queues is None:
            return None
        suffix = " " + url
        for worse in range(rank + 1, len(queues)):
            queue = queues[worse]
            if not queue:
                continue
            for i, entry in enumerate(queue):
                if entry.endswith(suffix) and (i or worse != pinned):
                    del queue[i]
                    if not queue:
                        queues[worse] = None
                    self._rank(host_key, rank).append(entry)
                    return worse
        return None

    def back_clear(self, host_key: str) -> list[tuple[int, str]]:
        queues = self.back.pop(host_key, ())
        return [_decode(entry)[1:] for queue in queues if queue for entry in queue]

    def host(self, host_key: str) -> HostRow:
        row = self.hosts.get(host_key)
        if row is None:
            row = self.hosts[host_key] = HostRow(HostState(host_key))
        return row

    def host_changed(self, host_key: str) -> None:
        """Rows are the objects themselves: nothing to write."""

    def seen_add(self, url: str) -> bool:
        return self.seen.add(url)

    def record(self, entries: Sequence[CatalogueEntry]) -> None:
        catalogue = self.catalogue
        for entry in entries:
            old = catalogue.get(entry.url)
            if old is not None and not replaces(entry, old):
                continue  # a refusal never hides a fetched page
            if old is not None and old.referrer is not None and entry.referrer != old.referrer:
                entry = replace(entry, referrer=old.referrer)
            catalogue[entry.url] = entry

    def record_found(self, referrer: str, found: Sequence[tuple[str, int]]) -> None:
        catalogue = self.catalogue
        for url, depth in found:
            if url not in catalogue:
                catalogue[url] = CatalogueEntry(url, depth=depth, referrer=referrer)


class MemoryStore:
    """A :class:`~courtly.store.base.FrontierStore` in process memory.

    ``seen`` defaults to an exact set; pass a ``BloomSeenSet`` for a
    memory-bounded crawl. ``rng`` drives the front-queue selector (seed it in
    tests for determinism).
    """

    def __init__(
        self,
        queues: QueueConfig | None = None,
        *,
        seen: SeenSet | None = None,
        rng: random.Random | None = None,
    ) -> None:
        cfg = queues or QueueConfig()
        self._rows = _MemoryRows(
            cfg, seen if seen is not None else ExactSeenSet(), rng or random.Random(0)
        )
        self._sched = Scheduler(self._rows, cfg)
        self._blobs: dict[tuple[str, str], bytes] = {}
        self._seeds: dict[str, None] = {}
        self._revisits = MemoryRevisitRows()

    async def add(
        self, entries: Sequence[QueuedUrl], now_at: float, budget: BudgetConfig
    ) -> list[AddStatus]:
        return self._sched.add(entries, budget)

    async def revisit(
        self, entries: Sequence[QueuedUrl], now_at: float, budget: BudgetConfig
    ) -> list[AddStatus]:
        return self._sched.add(entries, budget, known=True)

    async def promote(self, entries: Sequence[QueuedUrl], now_at: float) -> list[bool]:
        return self._sched.promote(entries)

    async def lease(
        self, now_at: float, ttl_s: float, max_leases: int, *, ahead_s: float = 0.0
    ) -> LeaseBatch:
        leases, next_ready_at = self._sched.lease(now_at + max(0.0, ahead_s), ttl_s, max_leases)
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
        if not self._sched.end_lease(lease, host):
            return None
        statuses = self._sched.complete(lease, discovered, now_at, budget)
        self._rows.record(records)
        return statuses

    async def release(
        self, lease: Lease, host: HostState | None, now_at: float, *, failed: bool = False
    ) -> bool:
        if not self._sched.end_lease(lease, host):
            return False
        self._sched.release(lease, now_at, failed=failed)
        return True

    async def record(self, records: Sequence[CatalogueEntry]) -> None:
        self._rows.record(records)

    async def catalogue(self) -> AsyncIterator[CatalogueEntry]:
        for entry in list(self._rows.catalogue.values()):
            yield entry

    async def get_blob(self, namespace: str, key: str) -> bytes | None:
        return self._blobs.get((namespace, key))

    async def put_blob(self, namespace: str, key: str, value: bytes) -> None:
        self._blobs[(namespace, key)] = bytes(value)

    async def revisit_states(self, keys: Sequence[tuple[str, str]]) -> dict[str, RevisitRow]:
        rows = self._revisits.rows
        return {url: rows[url] for url, _ in keys if url in rows}

    async def note_visits(self, rows: Sequence[RevisitRow]) -> None:
        for row in rows:
            self._revisits.put(row)

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
        rows = self._revisits
        queued, refused = requeue(
            rows, self._sched, now_at, limit, budget,
            levels=levels, retry_s=retry_s, lost_after_s=lost_after_s,
        )  # fmt: skip
        return DueBatch(queued, refused, rows.next_due_at())

    async def next_revisit_at(self) -> float | None:
        return self._revisits.next_due_at()

    async def revisit_rows(self) -> AsyncIterator[RevisitRow]:
        for row in list(self._revisits.rows.values()):
            yield row

    async def get_blobs(self, namespace: str, keys: Sequence[str]) -> list[bytes | None]:
        return [self._blobs.get((namespace, key)) for key in keys]

    async def add_seeds(self, seeds: Sequence[str]) -> None:
        self._seeds.update(dict.fromkeys(seeds))

    async def seeds(self) -> list[str]:
        return list(self._seeds)

    async def seed_count(self) -> int:
        return len(self._seeds)

    async def put_blobs(self, namespace: str, items: Sequence[tuple[str, bytes]]) -> None:
        for key, value in items:
            self._blobs[(namespace, key)] = bytes(value)

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
        """URLs waiting in each front-queue level (no I/O). For the dashboard's queue depth
        by priority level: see :class:`courtly.store.base.FrontDepths`."""
        return self._rows.front.level_sizes()

    async def host_state(self, host_key: str) -> HostState:
        row = self._rows.hosts.get(host_key)
        return HostState(host_key) if row is None else row.state

    async def counts(self, now_at: float) -> FrontierCounts:
        rows = self._rows
        return self._sched.counts(now_at, len(rows.front), len(rows.seen))

    async def flush(self) -> None:
        """Nothing to make durable: the state lives and dies with the process."""
        return None

    async def aclose(self) -> None:
        return None


def _encode(host_key: str, depth: int, url: str) -> str:
    """The queue entry for ``url``; the host key is spelled out only if the URL does not say it."""
    start = url.find("://") + 3
    end = url.find("/", start)
    if url[start : end if end >= 0 else len(url)] == host_key:
        return f"{depth} {url}"
    return f"{depth}@{host_key} {url}"


def _decode(entry: str) -> tuple[str, int, str]:
    """``(host_key, depth, url)`` of a queue entry (see :func:`_encode`)."""
    head, _, url = entry.partition(" ")
    counts, at, host = head.partition("@")
    depth = counts.partition("!")[0]
    if not at:
        start = url.find("://") + 3
        end = url.find("/", start)
        host = url[start : end if end >= 0 else len(url)]
    return host, int(depth), url

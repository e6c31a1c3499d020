"""The store seam: where the two tiers live, and the contract every backend keeps.

A :class:`FrontierStore` holds the front queues, the back queues with their host
table, the ready and wake heaps, the leases, per-host politeness state and the
seen-set. The state machine over them is written once,
:class:`~courtly.store.scheduler.Scheduler`; a backend keeps its rows
(:class:`~courtly.store.scheduler.QueueRows`) and its commits. Policy (what
delay, what level, which budget) is decided by the caller with pure functions
and passed in as plain values. The contract suite in ``tests/contract`` and the
property machine in ``tests/property`` run against every backend.

**Steps.** Each method is one *step*: ``add`` dedups, budgets and routes; a
``lease`` reclaims expired leases, wakes due inactive hosts, takes hosts in from
the front tier on demand and hands out the heads of ready hosts; a ``complete``
checks the fencing token, stores the host's new state, removes the leased URL,
enqueues and catalogues the discovered links, writes the records and puts the
host back (ready heap, or wake heap if it must wait more than
``QueueConfig.inactive_after_s``), all at once. No other step sees a step half
done.

**Whose clock.** Only the caller's: every time a store compares (next allowed
times, lease expiry) is the ``now_at`` passed in, seconds on the crawl's
injected clock. A store never reads a clock of its own for scheduling (a store
shared between processes, such as Redis, must give all callers one clock and
say so).

**Commits.** A persistent store makes steps durable in commits. A commit holds
a *prefix* of the steps made, whole steps only: after a crash the state is the
one after some step ``k``, never a part of step ``k + 1``. ``flush`` (and
``aclose``) commit everything made so far. Steps after the last commit may be
lost, whole; that is all a crash may lose.

**What a crash keeps.** Everything committed: queued URLs (front and back, in
order), host states, the seen-set, the catalogue, blobs, counters. Leases are
not kept: a leased URL is at the head of its back queue again when the store
reopens, so a request in flight at the crash is made again (and a host fetched
in the lost window may have lost its new next allowed time: hence
``resume_guard_s``). Which hosts held a slot is not kept; it is derived again
from their next allowed times.

**Fencing.** Lease tokens increase for the life of the store, across restarts.
Only the current lease of a host can ``complete`` or ``release`` it: a lease
that expired (its URL was returned to the head and maybe leased again), was
ended already, or predates a restart is refused (``None``/``False``) and nothing
of its result is written. So at most one lease per host is live, and a late
completion can never double-count a URL or move a host's state.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # records only: importing them at run time would be circular
    from courtly.archive.catalogue import CatalogueEntry
    from courtly.frontier.budget import BudgetConfig
    from courtly.frontier.records import AddStatus, FrontierCounts, HostState, Lease, QueuedUrl

__all__ = [
    "SHARED_POLL_S",
    "FrontDepths",
    "FrontierStore",
    "HeldHosts",
    "LeaseBatch",
    "QueuedCounts",
    "lease_ahead_s",
]

SHARED_POLL_S = 0.1
"""On a store shared with other processes (Redis), the longest a caller with nothing
to lease waits before it asks again (seconds): the crawl's dispatcher and the Scrapy
add-on's refill. Another process's releases, give-backs and new links are not
signalled to this one, and a host another process completes is due again, and leased
by it, within one of its gaps: a process that asked only now and then would find every
host taken each time it looked (a process joining a running crawl of a few hosts
waited seconds for its first lease; docs/distributed.md)."""


def lease_ahead_s(ahead_s: float, min_delay_s: float, *, shared: bool) -> float:
    """How far ahead of a host's time a process leases (seconds): ``ahead_s`` (the
    caller's window: the crawl's dispatcher's or the Scrapy add-on's) on a store of its
    own; on a ``shared`` one (Redis) at most half the crawl's min delay.

    A host's next time after a fetch is at least the min delay after its response ended.
    With a look-ahead as long as that, the process that completed a host leased it again
    in the same step, before any other process could see it due: it kept every host it
    once had, and on a web of a few hosts a process that came second by a moment got
    none (a Scrapy process on a shared crawl of 8 hosts with a 0.2 s min delay: 57 pages
    against 0, under load; docs/scrapy.md). At half the min delay the host is seen due by
    every process first, and each takes it at the same moment before its time.
    """
    return min(ahead_s, min_delay_s / 2.0) if shared else ahead_s


@dataclass(frozen=True, slots=True)
class LeaseBatch:
    """Leases handed out, and when the next host will be ready if none (or too few) were.

    ``next_ready_at`` is the earliest of: the next allowed time of the first host
    in the ready heap; while a slot is free, the wake time of the first inactive
    host; and ``now_at`` itself when the lease stopped at its front-tier scan
    bound with URLs left (call again at once). ``None`` when there is none of
    these (nothing queued, or every host that could be served is leased): then
    only a completion, release or expiry can bring more work.
    """

    leases: tuple[Lease, ...]
    next_ready_at: float | None


class FrontierStore(Protocol):
    """Backend of the frontier. Every method is one atomic step (see the module doc)."""

    async def add(
        self, entries: Sequence[QueuedUrl], now_at: float, budget: BudgetConfig
    ) -> list[AddStatus]:
        """Dedup and enqueue ``entries`` into their front-queue levels; one status each.

        Budget-dropped URLs are not marked seen. A URL already seen whose entry has
        ``lift`` set is promoted to the entry's level (see :meth:`promote`).
        """
        ...

    async def revisit(
        self, entries: Sequence[QueuedUrl], now_at: float, budget: BudgetConfig
    ) -> list[AddStatus]:
        """Queue again URLs that are known (fetched before): a recrawl's due URLs.

        Routed like :meth:`add` (their levels, the queue budgets, retired hosts
        refused) but the seen-set is not asked, so a URL seen before is ``QUEUED``
        again; an unknown URL is marked seen as well. The caller offers a URL only
        while it is not queued (once per due time). A revisit at level 0 is in the news
        lane: it goes first in its host's back queue, before every other level.
        """
        ...

    async def promote(self, entries: Sequence[QueuedUrl], now_at: float) -> list[bool]:
        """Move queued URLs up to a better level: each ``entry`` names a URL, its host key
        and the level it now deserves; one result each, ``True`` if it moved now.

        A URL in its host's back queue at a worse level leaves it for the tail of the
        new level's part (the order within a host is by level, then arrival: see
        ``courtly.store.scheduler``). A URL still in the front tier keeps its place
        there and takes the better level when it reaches its back queue (``False``: a
        best effort, bounded, lost on restart). A URL that is leased, fetched, dropped,
        unknown or already as good is left as it is: a promotion never queues a URL.
        Seen in ``complete`` and ``add`` too: an entry whose ``lift`` is set and that is
        ``SEEN`` is promoted in the same step.
        """
        ...

    async def lease(
        self, now_at: float, ttl_s: float, max_leases: int, *, ahead_s: float = 0.0
    ) -> LeaseBatch:
        """Reclaim expired leases, then lease up to ``max_leases`` hosts whose time has come.

        Each lease takes the head URL of its host's back queue; the host leaves
        the ready heap until ``complete`` or ``release`` (or expiry). While fewer
        hosts are ready than asked for and a slot is free, due inactive hosts and
        then hosts from the front tier are taken in (a bounded number of pops).

        **Leasing ahead.** ``ahead_s`` >= 0: the step runs as of ``now_at + ahead_s``
        (one rule, the scheduler's, whatever the store): hosts due within that many
        seconds are leased too, expiries that close are reclaimed, and each lease's
        ``leased_at`` is that time and its ``expires_at`` ``ttl_s`` after it. The
        caller starts no request under a lease before its ``host.next_allowed_at``,
        which may still be ahead. A store on another clock (Redis: the server's) maps
        that time onto the caller's no earlier than it is on its own clock.
        """
        ...

    async def complete(
        self,
        lease: Lease,
        host: HostState,
        discovered: Sequence[QueuedUrl],
        now_at: float,
        budget: BudgetConfig,
        records: Sequence[CatalogueEntry] = (),
    ) -> list[AddStatus] | None:
        """Finish a lease: store ``host``, enqueue ``discovered``, write ``records``
        to the catalogue, requeue the host, all or nothing.

        Every discovered URL that is newly queued is catalogued too (depth, and the
        lease's URL as its referrer), so the catalogue holds every URL seen.

        Returns the add statuses of ``discovered``, or ``None`` if the lease was
        fenced (expired and reclaimed, or unknown): then nothing is written.
        A host whose new state is retired loses its queued URLs, each catalogued
        with ``skip_reason = "host_retired:<reason>"``.
        """
        ...

    async def release(
        self, lease: Lease, host: HostState | None, now_at: float, *, failed: bool = False
    ) -> bool:
        """Give a lease back unfinished: its URL returns to the head of the back queue.

        ``host`` (if given) replaces the host's state, e.g. after a robots.txt
        fetch made under the lease. ``failed``: the attempt at the URL failed and
        is to be retried; its attempt count (stored with the URL, durable like the
        queue) grows by one and the next lease of it carries the new count in
        :attr:`Lease.attempts`. ``False`` if the lease was fenced (nothing changes).
        """
        ...

    async def record(self, records: Sequence[CatalogueEntry]) -> None:
        """Write catalogue entries outside a lease (e.g. URLs skipped at discovery).

        An entry replaces any earlier one for the same URL, except its ``referrer``:
        the first non-null referrer stays (where the URL was first found).
        """
        ...

    def catalogue(self) -> AsyncIterator[CatalogueEntry]:
        """Every catalogue entry, in the order first written."""
        ...

    async def get_blob(self, namespace: str, key: str) -> bytes | None:
        """A small opaque value kept with the crawl (robots cache, config, checkpoints)."""
        ...

    async def put_blob(self, namespace: str, key: str, value: bytes) -> None:
        """Store a small opaque value (replacing any earlier one)."""
        ...

    async def get_blobs(self, namespace: str, keys: Sequence[str]) -> list[bytes | None]:
        """Several values of one namespace in one step, in the order of ``keys``."""
        ...

    async def put_blobs(self, namespace: str, items: Sequence[tuple[str, bytes]]) -> None:
        """Store several ``(key, value)`` of one namespace in one step (one transaction or
        round trip), in order: a later item replaces an earlier one of the same key."""
        ...

    async def add_seeds(self, seeds: Sequence[str]) -> None:
        """Add URLs to the crawl's seed set (a union: a seed added again, by this
        process or another, is kept once). The seeds decide the crawl's scope, so every
        process of a shared crawl must see the ones any other added
        (:mod:`courtly.crawl.seeds`); unlike a blob, concurrent adds never lose one."""
        ...

    async def seeds(self) -> list[str]:
        """Every seed of the crawl (the order they were added in is not kept)."""
        ...

    async def seed_count(self) -> int:
        """How many seeds :meth:`seeds` holds (one cheap read: a shared crawl's
        processes ask it to learn that another one added seeds)."""
        ...

    async def host_state(self, host_key: str) -> HostState:
        """The stored state of a host (a fresh one if never seen)."""
        ...

    async def counts(self, now_at: float) -> FrontierCounts:
        """A snapshot of queue sizes and host states."""
        ...

    async def flush(self) -> None:
        """Make every completed step durable now (a persistent store commits)."""
        ...

    async def aclose(self) -> None:
        """Release resources; a persistent store flushes everything first."""
        ...


@runtime_checkable
class QueuedCounts(Protocol):
    """A store that can say, without I/O, how many URLs a host has queued (the memory
    and SQLite stores, from the rows they hold in memory). Optional: the dashboard's
    ``queued`` column reads it when the store has it, and shows nothing otherwise."""

    def queued_of(self, host_key: str) -> int | None: ...


@runtime_checkable
class FrontDepths(Protocol):
    """A store that can say, without I/O, how many URLs wait in each front-queue level
    (index 0 the most urgent; the sum is ``FrontierCounts.front_queued``): the memory
    and SQLite stores, from the counts they keep. Optional: the dashboard's queue depth
    by priority level reads it when the store has it (O(levels) a call)."""

    def front_by_level(self) -> tuple[int, ...]: ...


@runtime_checkable
class HeldHosts(Protocol):
    """A store that can say, without I/O, whether a host is *held*: it has URLs in a back
    queue (active or inactive) or a lease out (the memory and SQLite stores, from their
    scheduler). A host whose back queue ran empty is not held: its next URL waits in the
    front tier until the front tier's draw takes it in. Optional: the crawler's
    idle-while-ready measure (:class:`courtly.crawl.dispatch.ReadyWaits`) reads it right
    after each completion or release to know whether the host is back in line."""

    def holds(self, host_key: str) -> bool: ...


@runtime_checkable
class RidesOutages(Protocol):
    """A store whose calls wait out an unreachable server, retrying for a while (the Redis
    store: ``retry_s``, 60 s by default, to ride out a restart or a failover). Optional: a
    crawl that stops (``--max-time``, a signal) tells it when to give up, the end of the stop
    grace, so that the crawl ends in its time with the server down; what it could not
    store is redone on resume (its leases expire)."""

    def give_up_after(self, seconds: float) -> None:
        """Retry no call for more than ``seconds`` from now, those retrying now included:
        then a call fails as it would after ``retry_s``."""
        ...

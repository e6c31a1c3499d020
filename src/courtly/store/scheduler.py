"""The frontier's state machine, written once: every store runs it over its own rows.

A store keeps rows (front queues, back queues, host rows, the seen-set, the
catalogue) and commits them; this module decides what happens to them. It is
the one reference for a backend written in another language (the Redis store's
Lua scripts mirror it step by step), so it is kept plain: no I/O, no clock, no
policy beyond the scheduling rules below.

**Hosts and slots.** A host with URLs in a back queue is *held*: it has an entry
in the host table. A held host is either

* *active*: it holds one of at most ``max_back_queues`` **slots** and is in the
  ready heap keyed by its next allowed time (*ready* once that time has come,
  *snoozed* before), or leased (out of the heap until the lease ends); or
* *inactive*: it holds no slot; it waits in the wake heap, keeping its queued
  URLs and its politeness state, because its next allowed time was more than
  ``inactive_after_s`` away when its last lease ended (parked, back-off,
  Retry-After, robots.txt unreachable, a long Crawl-delay). Once due, it takes
  a free slot again and re-enters the ready heap (Heritrix's snoozed versus
  inactive queues).

**Demand.** Slots are taken when a ``lease`` finds fewer ready hosts than asked
for: due inactive hosts first, then URLs popped from the front tier (at most
``max(activation_scan, 4 × max_leases)`` pops per call), each either joining
its host's held back queue or making a new held host. So how many hosts are
active follows what the fetchers ask for; ``max_back_queues`` is only a memory
cap. A lease that stops at the scan bound with slots free and front URLs left
reports ``next_ready_at = now_at``: call again.

**Routing.** A new URL goes straight to its host's back queue when the host is
held and none of its URLs waits in the front tier; otherwise it joins the front
tier at its level. Either way the order of one host's URLs of one level is the
order they were added (FIFO within a host and level); across hosts the front
tier's level draw decides only when a host is first taken in.

**Order within a host.** A back queue is ordered by *rank*, then arrival: rank
``level + 1`` for a URL of front level ``level``, and rank 0 for a revisit at
level 0 (the news lane, :mod:`courtly.frontier.news_lane`), which so goes first
in its host's back queue. ``levels + 1`` ranks in all (:func:`back_ranks`).

**Promotion.** ``promote`` moves a queued URL up to a better (smaller) level: in
its host's back queue it leaves its rank for the tail of the new one (FIFO within
a rank, by time of arrival there); a leased URL is never moved. While some of the
host's URLs wait in the front tier the URL gets a *hint* instead: when it is popped
from the front tier (where its level stays as it was: the front tier has no index
by URL) it joins its back queue at the hinted rank; a URL already in the back
queue then keeps its place (moving it could pass a URL of its new level still in
the front tier, breaking FIFO within a host and level). Hints are
bounded (:data:`MAX_HINTS`, all dropped when full) and not kept across restarts.
A URL that is fetched, unknown or dropped is never queued by a promotion.

**Leases.** A lease reads the head URL of its host's back queue (its best rank)
and leaves it there; the scheduler keeps the row's handle, so ``complete``
removes that URL and no other, and ``release`` and expiry leave it at the head
of its rank.
Tokens increase; only the current lease of a host can end it (fencing). A
release after a failed attempt counts it on the head URL (``back_retry``); the
count comes back with the URL's next lease. Whether to retry is the caller's
policy (:mod:`courtly.frontier.retry`), not the scheduler's.

**Ageing.** Ready hosts whose time has come wait in a *due heap* keyed by their head
rank, then by time due, so a lease serves the best head first. A host due for longer
than ``max_due_wait_s`` (:func:`is_aged`) goes first instead, oldest first: a lease
first serves every aged host (by the order they became due), then the due heap. So in a
crawl bound by its fetchers a host with a poor head waits at most ``max_due_wait_s``
past its time plus the time to the next lease, however many better hosts keep coming
due; below that bound, priority decides.

**Retirement.** A host whose new state is retired loses its queued URLs: each is
catalogued with ``skip_reason = "host_retired:<reason>"`` (those still in the
front tier when they are popped).
"""

from __future__ import annotations

import enum
import heapq
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Final, Protocol

from courtly.archive.catalogue import CatalogueEntry
from courtly.frontier.budget import BudgetConfig, is_over_queue_budget
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import AddStatus, FrontierCounts, HostState, Lease, QueuedUrl

__all__ = [
    "DUE_FOR_BREADTH",
    "MAX_HINTS",
    "HostRow",
    "Promotion",
    "QueueRows",
    "Scheduler",
    "back_ranks",
    "is_aged",
    "promotion_of",
    "retired_skip_reason",
]

_LEASE_SCAN_PER_LEASE: Final = 4
"""Front pops allowed per lease asked for, beyond ``activation_scan``."""
DUE_FOR_BREADTH: Final = 2
"""A better front-tier level is taken in before ready hosts only while fewer than this
many hosts per lease asked for are due (see :meth:`Scheduler.lease`)."""

MAX_HINTS: Final = 65_536
"""Promotion hints kept for URLs waiting in the front tier (all dropped when full)."""

NEWS_RANK: Final = 0
"""The back-queue rank of a revisit at level 0 (the news lane): first in its host."""


def back_ranks(levels: int) -> int:
    """Ranks of a back queue for ``levels`` front levels: the news lane, then one per level."""
    return levels + 1


def rank_of(level: int, levels: int) -> int:
    """The back-queue rank of a URL of front level ``level`` (clamped into range)."""
    return 1 + min(max(level, 0), levels - 1)


class Promotion(enum.Enum):
    """What a promotion does to a queued URL (:func:`promotion_of`)."""

    NONE = "none"
    """Leased: never re-queued, never moved."""
    HINT = "hint"
    """Some of the host's URLs wait in the front tier, maybe this one: moving a back-queue
    URL now could pass a URL of its new level still in the front, so the URL gets a hint
    for when it is taken in (every store; Redis keeps its hints per shard)."""
    MOVE = "move"
    """Every URL of the host is in its back queue: the URL, if found there at a worse
    rank (never the leased head), leaves it for the tail of the new rank."""


def promotion_of(leased: bool, queued: int, in_back: int) -> Promotion:
    """The promotion rule (module doc, *Promotion*), for a URL of a host that has
    ``queued`` URLs in all (front and back, a leased head included) of which ``in_back``
    are in its back queue; ``leased``: the URL is the host's leased head. The one
    definition: :meth:`Scheduler.promote` runs it, the Redis prelude's ``promote_url``
    mirrors it step for step."""
    if leased:
        return Promotion.NONE
    if queued > in_back:
        return Promotion.HINT
    return Promotion.MOVE


def is_aged(due_at: float, now_at: float, max_due_wait_s: float) -> bool:
    """The ageing rule among due hosts: a host due since ``due_at`` has waited past its
    time long enough to go before hosts with better heads (module doc, *Ageing*)."""
    return now_at - due_at > max_due_wait_s


def retired_skip_reason(reason: str) -> str:
    """The catalogue ``skip_reason`` of a URL dropped because its host was retired."""
    return f"host_retired:{reason}"


class HostRow:
    """A host's row: politeness state, and URLs queued for it (front + back, leased included)."""

    __slots__ = ("queued", "state")

    def __init__(self, state: HostState, queued: int = 0) -> None:
        self.state = state
        self.queued = queued


class QueueRows(Protocol):
    """The rows a store keeps for the :class:`Scheduler`.

    Every call is made inside one store step; the store makes the step's writes
    durable together (or not at all). A back queue exists while it has a URL:
    ``back_append`` on an empty one starts it.
    """

    def front_len(self) -> int:
        """URLs in the front tier."""
        ...

    def front_push(self, level: int, host_key: str, depth: int, url: str) -> None:
        """Append a URL to front level ``level`` (clamped into range)."""
        ...

    def front_pop(self) -> tuple[str, int, int, str] | None:
        """``(host_key, level, depth, url)`` from the level the selector draws; ``None``
        if empty."""
        ...

    def front_best_level(self) -> int | None:
        """The best (smallest) non-empty front level; ``None`` if the front tier is empty."""
        ...

    def back_append(self, host_key: str, rank: int, depth: int, url: str) -> None:
        """Append a URL to the tail of rank ``rank`` (``0 .. back_ranks - 1``) of the
        host's back queue."""
        ...

    def back_head(self, host_key: str) -> tuple[int, str, int, int]:
        """``(depth, url, attempts, handle)`` of the head of the host's back queue: the
        first URL of its best (smallest) rank, left in place. ``attempts`` counts the
        failed attempts at it so far; ``handle`` names the row for :meth:`back_pop` and
        :meth:`back_retry`, and stays valid while the URL is not popped (appends and
        promotions only ever add at the tail of a rank)."""
        ...

    def back_retry(self, host_key: str, handle: int) -> None:
        """Count one more failed attempt at the URL ``handle`` names."""
        ...

    def back_pop(self, host_key: str, handle: int) -> None:
        """Remove the URL ``handle`` names (the head :meth:`back_head` returned)."""
        ...

    def back_promote(self, host_key: str, url: str, rank: int, pinned: int | None) -> int | None:
        """Move ``url`` from a worse rank of the host's back queue to the tail of ``rank``;
        the rank it left, or ``None`` if it is not there at a worse rank. ``pinned`` is
        the handle of the leased head, never moved."""
        ...

    def back_clear(self, host_key: str) -> list[tuple[int, str]]:
        """Remove the host's whole back queue; its ``(depth, url)`` entries, head first."""
        ...

    def host(self, host_key: str) -> HostRow:
        """The host's row (a fresh one, queued 0, if never stored); the same object until
        the store drops it, so changes made to it are seen by later calls."""
        ...

    def host_changed(self, host_key: str) -> None:
        """The row returned by :meth:`host` was changed: write it with the step."""
        ...

    def seen_add(self, url: str) -> bool:
        """Mark ``url`` seen; ``False`` if it was (or may have been) seen already."""
        ...

    def record(self, entries: Sequence[CatalogueEntry]) -> None:
        """Write catalogue entries (an entry keeps the first non-null referrer)."""
        ...

    def record_found(self, referrer: str, found: Sequence[tuple[str, int]]) -> None:
        """Catalogue newly queued ``(url, depth)`` pairs found on ``referrer``, unless the
        catalogue already has an entry for the URL."""
        ...


class _Held:
    """A held host: URLs in its back queue (the leased head included) in all and per
    rank, the rank of its leased head, whether it holds a slot (a leased host always
    does), and its live entry in the due heap (``due``: its sequence number, 0 if none;
    ``due_rank``: the head rank that entry was pushed with)."""

    __slots__ = (
        "active",
        "due",
        "due_at",
        "due_rank",
        "episode",
        "leased_rank",
        "length",
        "placed_at",
        "ranks",
    )

    def __init__(self, ranks: list[int]) -> None:
        self.ranks = ranks
        self.length = sum(ranks)
        self.active = False
        self.leased_rank = 0
        self.due = 0
        self.due_rank = 0
        self.due_at = 0.0
        self.episode = 0  # counts the host's turns in the due heap (the ageing queue's check)
        self.placed_at = float("-inf")  # when it last went into the ready or wake heap

    def head_rank(self) -> int:
        """The rank of the head of the back queue (its best non-empty rank)."""
        for rank, n in enumerate(self.ranks):
            if n:
                return rank
        raise LookupError("empty back queue")

    def append(self, rank: int) -> None:
        self.ranks[rank] += 1
        self.length += 1


class Scheduler:
    """The two-tier state machine over a store's :class:`QueueRows` (see the module doc).

    The store calls one method per step and passes the caller's ``now_at``; the
    scheduler never reads a clock. ``token``, ``requests_made`` and
    ``hosts_retired`` are plain counters a persistent store saves and restores.
    """

    def __init__(self, rows: QueueRows, queues: QueueConfig) -> None:
        self._rows = rows
        self._levels = queues.levels
        self._hints: dict[str, int] = {}
        self._handles: dict[str, int] = {}
        self._max_slots = queues.max_back_queues
        self._inactive_after_s = queues.inactive_after_s
        self._scan = queues.activation_scan
        self._held: dict[str, _Held] = {}
        self._ready: list[tuple[float, int, str]] = []
        self._due: list[tuple[int, float, int, str]] = []
        self._due_live = 0
        self._due_order: deque[tuple[float, int, str]] = deque()  # (due at, episode, host)
        self._max_due_wait_s = queues.max_due_wait_s
        self._wake: list[tuple[float, int, str]] = []
        self._active = 0
        self._seq = 0
        self._leases: dict[str, Lease] = {}
        self._expiry: list[tuple[float, int, str]] = []
        self._back_size = 0
        self._floor_at = float("-inf")
        self.token = 0
        self.requests_made = 0
        self.hosts_retired = 0

    # -- questions ------------------------------------------------------------

    def holds(self, host_key: str) -> bool:
        """True while the host has a back queue (active or inactive) or a lease."""
        return host_key in self._held

    def leased(self, host_key: str) -> bool:
        """True while the host has a live lease (a store writes it with the host's row)."""
        return host_key in self._leases

    # -- steps ----------------------------------------------------------------------

    def add(
        self, entries: Sequence[QueuedUrl], budget: BudgetConfig, *, known: bool = False
    ) -> list[AddStatus]:
        """Dedup, budget and route ``entries``; one status each.

        ``known`` (a recrawl's due URLs, :meth:`FrontierStore.revisit`): the seen-set
        is not asked, so a URL seen before is queued again (and an unknown one is
        marked seen); routing and budgets are the same, and a known URL at level 0
        takes the news rank. A ``SEEN`` entry with ``lift`` set is promoted
        (:meth:`promote`).
        """
        statuses: list[AddStatus] = []
        append = statuses.append
        rows = self._rows
        host_row = rows.host
        held = self._held
        leases = self._leases
        lifted: list[QueuedUrl] = []
        hints = self._hints
        check_budget = budget.max_queued_per_host is not None or budget.max_queued is not None
        for entry in entries:
            key = entry.host_key
            row = host_row(key)
            if row.state.retired is not None:
                append(AddStatus.HOST_RETIRED)
                continue
            if check_budget:
                queued = row.queued - (1 if key in leases else 0)
                total = rows.front_len() + self._back_size
                over = is_over_queue_budget(queued, total, budget)
                if over:
                    append(AddStatus.OVER_HOST_BUDGET if over == 1 else AddStatus.OVER_CRAWL_BUDGET)
                    continue
            if not rows.seen_add(entry.url) and not known:
                if entry.lift:
                    lifted.append(entry)
                append(AddStatus.SEEN)
                continue
            if hints:
                hints.pop(entry.url, None)  # a hint is for a URL queued before it was given
            queue = held.get(key)
            news = known and entry.level <= 0
            if queue is not None and row.queued == queue.length:
                # held, nothing of it in the front tier: straight to its back queue
                rank = NEWS_RANK if news else rank_of(entry.level, self._levels)
                rows.back_append(key, rank, entry.depth, entry.url)
                self._appended(key, queue, rank)
            else:
                rows.front_push(entry.level, key, entry.depth, entry.url)
                if news:
                    self._hint(entry.url, NEWS_RANK)
            row.queued += 1
            rows.host_changed(key)
            append(AddStatus.QUEUED)
        if lifted:
            self.promote(lifted)
        return statuses

    def promote(self, entries: Sequence[QueuedUrl]) -> list[bool]:
        """Move queued URLs up to ``entry.level`` where that is better than where they are
        (module doc, *Promotion*); ``True`` for each URL moved in its back queue now.

        ``False``: not moved now (leased, fetched, unknown, already as good, or waiting in
        the front tier, where a hint moves it when it reaches its back queue).
        """
        rows = self._rows
        held = self._held
        leases = self._leases
        out: list[bool] = []
        for entry in entries:
            key = entry.host_key
            queue = held.get(key)
            lease = leases.get(key)
            in_back = queue.length if queue is not None else 0
            leased = lease is not None and lease.url == entry.url
            how = promotion_of(leased, rows.host(key).queued, in_back)
            if how is Promotion.NONE:
                out.append(False)
                continue
            rank = rank_of(entry.level, self._levels)
            if how is Promotion.HINT:
                out.append(False)
                self._hint(entry.url, rank)
                continue
            pinned = self._handles.get(key) if lease is not None else None
            left = None if queue is None else rows.back_promote(key, entry.url, rank, pinned)
            if queue is not None and left is not None:
                queue.ranks[left] -= 1
                queue.length -= 1
                self._appended(key, queue, rank, counted=True)
            out.append(left is not None)
        return out

    def _hint(self, url: str, rank: int) -> None:
        hints = self._hints
        old = hints.get(url)
        if old is not None and old <= rank:
            return
        if old is None and len(hints) >= MAX_HINTS:
            hints.clear()
        hints[url] = rank

    def lease(
        self, now_at: float, ttl_s: float, max_leases: int
    ) -> tuple[list[Lease], float | None]:
        """Reclaim, wake, activate on demand, and lease up to ``max_leases`` ready hosts.

        Returns the leases and the earliest time another lease could be handed
        out (``None``: only a completion, release or expiry can bring one).
        """
        self._reclaim(now_at)
        self._wake_due(now_at)
        self._ripen(now_at)
        rows = self._rows
        levels = self._levels
        out: list[Lease] = []
        scan = max(self._scan, _LEASE_SCAN_PER_LEASE * max_leases)
        # A better level in the front tier goes before ready hosts' heads only while few
        # hosts are due: with many due, taking in more hosts would only add robots.txt
        # fetches and new connections ahead of known hosts' pages (breadth the fetchers
        # cannot use); the front tier then waits until no host is due. Decided once per
        # call, so one batch still hands out heads in non-decreasing level.
        better_first = self._due_live < DUE_FOR_BREADTH * max(1, max_leases)
        while len(out) < max_leases:
            due = self._best_due(now_at)
            if scan > 0 and self._active < self._max_slots and (better_first or not out):
                best = rows.front_best_level()
                if best is not None and (
                    due is None or (better_first and rank_of(best, levels) < due[0])
                ):
                    # the front tier holds a better level than any ready host's head
                    scan -= 1
                    self._take_from_front(now_at)
                    self._ripen(now_at)
                    continue
            if due is None:
                break
            key = self._aged(now_at)
            if key is None:
                heapq.heappop(self._due)
                key = due[3]
            self._held[key].due = 0  # an aged host's heap entry is skipped when it surfaces
            self._due_live -= 1
            out.append(self._lease_head(key, now_at, ttl_s))
        return out, self._next_ready_at(now_at, scan == 0)

    def end_lease(self, lease: Lease, host: HostState | None) -> bool:
        """Fence and end ``lease``, storing ``host`` if given; ``False`` if not current."""
        key = lease.host_key
        current = self._leases.get(key)
        if current is None or current.token != lease.token:
            return False
        del self._leases[key]
        if host is not None:
            row = self._rows.host(key)
            self.requests_made += max(0, host.requests_made - row.state.requests_made)
            row.state = host
            self._rows.host_changed(key)
        return True

    def complete(
        self, lease: Lease, discovered: Sequence[QueuedUrl], now_at: float, budget: BudgetConfig
    ) -> list[AddStatus]:
        """After :meth:`end_lease`: drop the leased URL, add and catalogue ``discovered``
        (the newly queued ones, with the lease's URL as referrer), requeue the host."""
        key = lease.host_key
        rows = self._rows
        rows.back_pop(key, self._handles.pop(key))
        queue = self._held[key]
        queue.length -= 1
        queue.ranks[queue.leased_rank] -= 1
        row = rows.host(key)
        row.queued -= 1
        rows.host_changed(key)
        statuses: list[AddStatus] = []
        if discovered:
            statuses = self.add(discovered, budget)
            found = [
                (entry.url, entry.depth)
                for entry, status in zip(discovered, statuses, strict=True)
                if status is AddStatus.QUEUED
            ]
            if found:
                rows.record_found(lease.url, found)
        self._requeue(key, row.state, now_at)
        return statuses

    def release(self, lease: Lease, now_at: float, *, failed: bool = False) -> None:
        """After :meth:`end_lease`: the leased URL is at the head again (``failed``: with
        one more failed attempt counted, see :mod:`courtly.frontier.retry`); requeue the
        host."""
        handle = self._handles.pop(lease.host_key)
        if failed:
            self._rows.back_retry(lease.host_key, handle)
        self._back_size += 1
        self._requeue(lease.host_key, self._rows.host(lease.host_key).state, now_at)

    def counts(self, now_at: float, front_queued: int, seen: int) -> FrontierCounts:
        """The snapshot the stores report (see :class:`FrontierCounts`)."""
        ready, parked_active = self._tally(self._ready, now_at)
        ready += self._due_live
        due, parked_inactive = self._tally(self._wake, now_at)
        parked = parked_active + parked_inactive
        return FrontierCounts(
            queued=front_queued + self._back_size,
            front_queued=front_queued,
            back_queued=self._back_size,
            hosts_active=self._active,
            hosts_ready=ready,
            hosts_snoozed=len(self._ready) + self._due_live - ready,
            hosts_parked=parked,
            hosts_retired=self.hosts_retired,
            leased=len(self._leases),
            seen=seen,
            requests_made=self.requests_made,
            hosts_inactive=len(self._wake),
            hosts_inactive_due=due,
            hosts_held=len(self._held),
        )

    def _tally(self, heap: list[tuple[float, int, str]], now_at: float) -> tuple[int, int]:
        """Hosts of ``heap`` that are due, and those waiting because of failures."""
        host_row = self._rows.host
        due = failing = 0
        for at, _, key in heap:
            if at <= now_at:
                due += 1
            elif _is_failing(host_row(key).state, now_at):
                failing += 1
        return due, failing

    # -- resume ---------------------------------------------------------------------

    def restore(self, host_key: str, ranks: Sequence[int], next_allowed_at: float) -> None:
        """A back queue found at open, ``ranks[r]`` URLs of rank ``r``: the host starts
        inactive and wakes when due (no lease survives a restart)."""
        counts = [0] * back_ranks(self._levels)
        for rank, n in enumerate(ranks):
            counts[rank] += n
        queue = self._held[host_key] = _Held(counts)
        queue.placed_at = float("inf")  # due, for ageing, from when it wakes in this run
        self._back_size += queue.length
        self._seq += 1
        self._wake.append((next_allowed_at, self._seq, host_key))

    def hold_until(self, floor_at: float, hosts: Mapping[str, float] | None = None) -> None:
        """Serve no host before ``floor_at``, nor a host of ``hosts`` before its own time
        there (after a resume: see the SQLite store). Call it with the hosts' rows
        already showing those times."""
        self._floor_at = floor_at
        own = hosts or {}
        held = self._held
        for _, _, seq, key in self._due:
            if held[key].due == seq:  # due now, held until the floor like the rest
                held[key].due = 0
                self._ready.append((floor_at, seq, key))
        self._due.clear()
        self._due_live = 0
        self._due_order.clear()
        self._ready = [(max(at, floor_at, own.get(k, at)), seq, k) for at, seq, k in self._ready]
        self._wake = [(max(at, floor_at, own.get(k, at)), seq, k) for at, seq, k in self._wake]
        heapq.heapify(self._ready)
        heapq.heapify(self._wake)

    # -- internals ----------------------------------------------------------------

    def _lease_head(self, key: str, now_at: float, ttl_s: float) -> Lease:
        depth, url, attempts, handle = self._rows.back_head(key)
        queue = self._held[key]
        queue.leased_rank = queue.head_rank()
        self._handles[key] = handle
        self._back_size -= 1
        self.token += 1
        expires_at = now_at + ttl_s
        state = self._rows.host(key).state
        lease = Lease(self.token, key, url, depth, now_at, expires_at, state, attempts)
        self._leases[key] = lease
        self._rows.host_changed(key)  # now leased: a persistent store writes that down
        heapq.heappush(self._expiry, (expires_at, self.token, key))
        return lease

    def _take_from_front(self, now_at: float) -> None:
        """Pop one front URL into its host's back queue, holding the host if it is new."""
        rows = self._rows
        popped = rows.front_pop()
        assert popped is not None, "front tier shorter than its count"
        key, level, depth, url = popped
        rank = rank_of(level, self._levels)
        if self._hints:
            rank = min(rank, self._hints.pop(url, rank))
        queue = self._held.get(key)
        if queue is not None:
            rows.back_append(key, rank, depth, url)
            self._appended(key, queue, rank)
            return
        row = rows.host(key)
        if row.state.retired is not None:
            row.queued -= 1
            rows.host_changed(key)
            rows.record((_dropped(url, depth, row.state.retired),))
            return
        rows.back_append(key, rank, depth, url)
        queue = self._held[key] = _Held([0] * back_ranks(self._levels))
        queue.append(rank)
        self._back_size += 1
        self._place(key, queue, row.state.next_allowed_at, now_at)

    def _place(self, key: str, queue: _Held, at: float, now_at: float) -> None:
        """Put an unleased held host in the ready heap (with a slot) or the wake heap."""
        at = max(at, self._floor_at)
        self._seq += 1
        queue.placed_at = now_at
        if at - now_at <= self._inactive_after_s:
            if not queue.active and self._active < self._max_slots:
                queue.active = True
                self._active += 1
            if queue.active:
                heapq.heappush(self._ready, (at, self._seq, key))
                return
        elif queue.active:
            queue.active = False
            self._active -= 1
        heapq.heappush(self._wake, (at, self._seq, key))

    def _requeue(self, key: str, state: HostState, now_at: float) -> None:
        """An unleased host: back in a heap, or let go (empty queue or retired)."""
        queue = self._held[key]
        if state.retired is not None:
            self.hosts_retired += 1
            rows = self._rows
            dropped = rows.back_clear(key)
            self._back_size -= len(dropped)
            row = rows.host(key)
            row.queued -= len(dropped)
            rows.host_changed(key)
            if dropped:
                reason = state.retired
                rows.record([_dropped(url, depth, reason) for depth, url in dropped])
            self._let_go(key, queue)
        elif queue.length:
            self._place(key, queue, state.next_allowed_at, now_at)
        else:
            self._let_go(key, queue)

    def _let_go(self, key: str, queue: _Held) -> None:
        if queue.active:
            self._active -= 1
        if queue.due:
            self._due_live -= 1
        del self._held[key]

    def _appended(self, key: str, queue: _Held, rank: int, *, counted: bool = False) -> None:
        """``rank`` gained a URL of the host's back queue (``counted``: already in
        ``_back_size``); a host in the due heap whose head rank so improved is pushed
        again with it (the old entry is skipped when it surfaces)."""
        queue.append(rank)
        if not counted:
            self._back_size += 1
        if queue.due and rank < queue.due_rank:
            self._due_live -= 1
            self._push_due(key, queue, queue.due_at)

    def _push_due(self, key: str, queue: _Held, at: float) -> None:
        """Put a ready host in the due heap, keyed by its head rank, then by time due."""
        self._seq += 1
        rank = queue.head_rank()
        queue.due = self._seq
        queue.due_rank = rank
        queue.due_at = at
        self._due_live += 1
        heapq.heappush(self._due, (rank, at, self._seq, key))

    def _ripen(self, now_at: float) -> None:
        """Ready hosts whose time has come move from the ready heap to the due heap (and to
        the back of the ageing queue, which so holds them in the order they became due)."""
        ready, held, order = self._ready, self._held, self._due_order
        while ready and ready[0][0] <= now_at:
            at, _, key = heapq.heappop(ready)
            queue = held[key]
            queue.episode += 1
            # due since its time, or since it was placed (a host new to the heaps, with no
            # time of its own yet, is due from then: it has not waited before)
            order.append((max(at, queue.placed_at), queue.episode, key))
            self._push_due(key, queue, at)

    def _aged(self, now_at: float) -> str | None:
        """The host due longest, if it is still due and aged (:func:`is_aged`), else
        ``None``; entries of hosts no longer due are dropped on the way."""
        order, held = self._due_order, self._held
        while order:
            at, episode, key = order[0]
            queue = held.get(key)
            if queue is None or not queue.due or queue.episode != episode:
                order.popleft()  # leased, let go, or due again since: a stale entry
                continue
            if not is_aged(at, now_at, self._max_due_wait_s):
                return None
            order.popleft()
            return key
        return None

    def _best_due(self, now_at: float) -> tuple[int, float, int, str] | None:
        """The due heap's best live entry due by ``now_at``, left in place. Stale entries
        are dropped; a host due after ``now_at`` (ripened by a step that ran further
        ahead: ``lease(..., ahead_s)`` of a caller that leases further ahead) goes back to
        the ready heap, so no lease hands out a host before its time less its own ahead."""
        due, held = self._due, self._held
        while due:
            top = due[0]
            queue = held.get(top[3])
            if queue is not None and queue.due == top[2]:
                if top[1] <= now_at:
                    return top
                queue.due = 0  # its ageing entry is skipped too; it is due again later
                self._due_live -= 1
                heapq.heappush(self._ready, (top[1], top[2], top[3]))
            heapq.heappop(due)
        return None

    def _reclaim(self, now_at: float) -> None:
        """Void expired leases: the URL is still at its queue's head; requeue the host."""
        expiry = self._expiry
        while expiry and expiry[0][0] <= now_at:
            _, token, key = heapq.heappop(expiry)
            lease = self._leases.get(key)
            if lease is None or lease.token != token:
                continue  # ended in time
            del self._leases[key]
            del self._handles[key]
            self._rows.host_changed(key)  # no longer leased
            self._back_size += 1
            state = self._rows.host(key).state
            self._place(key, self._held[key], max(state.next_allowed_at, now_at), now_at)

    def _wake_due(self, now_at: float) -> None:
        """Due inactive hosts take free slots, earliest first."""
        wake = self._wake
        while wake and wake[0][0] <= now_at and self._active < self._max_slots:
            at, seq, key = heapq.heappop(wake)
            queue = self._held[key]
            if queue.placed_at == float("inf"):  # restored at open: not waiting before now
                queue.placed_at = now_at
            queue.active = True
            self._active += 1
            heapq.heappush(self._ready, (at, seq, key))

    def _next_ready_at(self, now_at: float, scan_spent: bool) -> float | None:
        candidates: list[float] = []
        if self._due_live:
            candidates.append(now_at)
        if self._ready:
            candidates.append(self._ready[0][0])
        if self._active < self._max_slots:
            if self._wake:
                candidates.append(self._wake[0][0])
            if scan_spent and self._rows.front_len():
                candidates.append(now_at)
        return min(candidates) if candidates else None


def _dropped(url: str, depth: int, reason: str) -> CatalogueEntry:
    return CatalogueEntry(url, depth=depth, skip_reason=retired_skip_reason(reason))


def _is_failing(state: HostState, now_at: float) -> bool:
    """Waiting because of failures (back-off or parking), not plain politeness."""
    return state.next_allowed_at > now_at and bool(state.error_streak + state.parks)

"""The store seam: where the two tiers live.

A :class:`FrontierStore` holds the front queues, the back queues with their host
table, the ready heap, the leases, per-host politeness state and the seen-set,
and performs each frontier step *atomically*: an ``add`` dedups and enqueues;
a ``lease`` reclaims expired leases and hands out the heads of ready hosts; a
``complete`` checks the fencing token, stores the host's new state, enqueues the
discovered links and puts the host back in the ready heap, all at once. Policy
(what delay, what level, which budget) is decided by the caller with pure
functions and passed in as plain values, so every backend keeps the same
semantics: :class:`~courtly.store.memory.MemoryStore` is the reference, and the
contract suite in ``tests/contract`` runs against every backend.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # records only: importing them at run time would be circular
    from courtly.archive.catalogue import CatalogueEntry
    from courtly.frontier.budget import BudgetConfig
    from courtly.frontier.records import AddStatus, FrontierCounts, HostState, Lease, QueuedUrl

__all__ = ["FrontierStore", "LeaseBatch"]


@dataclass(frozen=True, slots=True)
class LeaseBatch:
    """Leases handed out, and when the next host will be ready if none (or too few) were.

    ``next_ready_at`` is the next allowed time of the earliest host in the ready
    heap, or ``None`` when the heap is empty (nothing queued, or every host with
    queued URLs is leased): then only a completion can bring more work.
    """

    leases: tuple[Lease, ...]
    next_ready_at: float | None


class FrontierStore(Protocol):
    """Backend of the frontier. Every method is one atomic step (see the module doc)."""

    async def add(
        self, entries: Sequence[QueuedUrl], now_at: float, budget: BudgetConfig
    ) -> list[AddStatus]:
        """Dedup and enqueue ``entries`` into their front-queue levels; one status each.

        Budget-dropped URLs are not marked seen.
        """
        ...

    async def lease(self, now_at: float, ttl_s: float, max_leases: int) -> LeaseBatch:
        """Reclaim expired leases, then lease up to ``max_leases`` hosts whose time has come.

        Each lease takes the head URL of its host's back queue; the host leaves
        the ready heap until ``complete`` or ``release`` (or expiry).
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
        A host whose new state is retired loses its queued URLs.
        """
        ...

    async def release(self, lease: Lease, host: HostState | None, now_at: float) -> bool:
        """Give a lease back unfinished: its URL returns to the head of the back queue.

        ``host`` (if given) replaces the host's state, e.g. after a robots.txt
        fetch made under the lease. ``False`` if the lease was fenced.
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

"""The in-memory store: the reference implementation of the two tiers.

Layout (Mercator, Najork & Heydon 2001):

* **front queues**: one FIFO per priority level, drawn by a biased selector
  (:class:`~courtly.frontier.front.FrontQueues`); an entry is one compact string,
  ``"<depth> <url>"``, or ``"<depth>@<host_key> <url>"`` when the host key is not
  the URL's own host (about 130 bytes of RSS per queued URL, seen-set included);
* **back queues**: at most ``max_back_queues`` FIFOs, each holding URLs of one
  host, and the host table ``host_key -> back queue`` (the same entry strings);
  when a back queue empties it is released and refilled from the front tier until
  a URL for a host without a queue turns up;
* **ready heap**: ``(next_allowed_at, seq, host_key)`` for every host with a back
  queue and no lease;
* **leases**: ``host_key -> Lease`` and an expiry heap swept at each ``lease``.

Per-host politeness state survives its back queue: a host that comes back later
re-enters the heap at its stored ``next_allowed_at``.
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

from courtly.archive.catalogue import CatalogueEntry
from courtly.frontier.budget import BudgetConfig, is_over_queue_budget
from courtly.frontier.config import QueueConfig
from courtly.frontier.front import FrontQueues
from courtly.frontier.records import AddStatus, FrontierCounts, HostState, Lease, QueuedUrl
from courtly.frontier.seen import ExactSeenSet, SeenSet
from courtly.store.base import LeaseBatch

__all__ = ["MemoryStore"]


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
        self._cfg = queues or QueueConfig()
        self._front: FrontQueues[str] = FrontQueues(
            self._cfg.weights, rng or random.Random(0), max_skips=self._cfg.max_skips
        )
        self._back: dict[str, deque[str]] = {}
        self._back_size = 0
        self._heap: list[tuple[float, int, str]] = []
        self._seq = 0
        self._leases: dict[str, Lease] = {}
        self._expiry: list[tuple[float, int, str]] = []
        self._hosts: dict[str, HostState] = {}
        self._queued_per_host: dict[str, int] = {}
        self._seen: SeenSet = seen if seen is not None else ExactSeenSet()
        self._token = 0
        self._requests = 0
        self._retired = 0
        self._catalogue: dict[str, CatalogueEntry] = {}
        self._blobs: dict[tuple[str, str], bytes] = {}

    # -- the seam ---------------------------------------------------------

    async def add(
        self, entries: Sequence[QueuedUrl], now_at: float, budget: BudgetConfig
    ) -> list[AddStatus]:
        statuses = self._add(entries, budget)
        self._refill()
        return statuses

    async def lease(self, now_at: float, ttl_s: float, max_leases: int) -> LeaseBatch:
        self._reclaim(now_at)
        self._refill()
        heap = self._heap
        out: list[Lease] = []
        while heap and len(out) < max_leases and heap[0][0] <= now_at:
            _, _, host = heapq.heappop(heap)
            entry = self._back[host].popleft()
            self._back_size -= 1
            self._queued_per_host[host] -= 1
            head, _, url = entry.partition(" ")
            depth = head.partition("@")[0]
            self._token += 1
            expires_at = now_at + ttl_s
            lease = Lease(self._token, host, url, int(depth), now_at, expires_at, self._host(host))
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
        if not self._end_lease(lease, host):
            return None
        statuses: list[AddStatus] = []
        if discovered:
            statuses = self._add(discovered, budget)
            self._record_discovered(lease.url, discovered, statuses)
        if records:
            self._record(records)
        self._requeue(lease.host_key, host)
        self._refill()
        return statuses

    async def release(self, lease: Lease, host: HostState | None, now_at: float) -> bool:
        if not self._end_lease(lease, host):
            return False
        self._back[lease.host_key].appendleft(_encode(lease.host_key, lease.depth, lease.url))
        self._back_size += 1
        self._queued_per_host[lease.host_key] += 1
        self._requeue(lease.host_key, self._host(lease.host_key))
        self._refill()
        return True

    async def record(self, records: Sequence[CatalogueEntry]) -> None:
        self._record(records)

    async def catalogue(self) -> AsyncIterator[CatalogueEntry]:
        for entry in list(self._catalogue.values()):
            yield entry

    async def get_blob(self, namespace: str, key: str) -> bytes | None:
        return self._blobs.get((namespace, key))

    async def put_blob(self, namespace: str, key: str, value: bytes) -> None:
        self._blobs[(namespace, key)] = bytes(value)

    async def host_state(self, host_key: str) -> HostState:
        return self._host(host_key)

    async def counts(self, now_at: float) -> FrontierCounts:
        ready = sum(1 for at, _, _ in self._heap if at <= now_at)
        parked = 0
        for _, _, host in self._heap:
            state = self._hosts.get(host)
            if (
                state is not None
                and state.next_allowed_at > now_at
                and state.error_streak + state.parks
            ):
                parked += 1
        return FrontierCounts(
            queued=len(self._front) + self._back_size,
            front_queued=len(self._front),
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
        """Nothing to make durable: the state lives and dies with the process."""
        return None

    async def aclose(self) -> None:
        return None

    # -- internals ----------------------------------------------------------

    def _host(self, host_key: str) -> HostState:
        state = self._hosts.get(host_key)
        if state is None:
            state = self._hosts[host_key] = HostState(host_key)
        return state

    def _add(self, entries: Sequence[QueuedUrl], budget: BudgetConfig) -> list[AddStatus]:
        statuses: list[AddStatus] = []
        append = statuses.append
        hosts = self._hosts
        per_host = self._queued_per_host
        front = self._front
        seen = self._seen
        check_budget = budget.max_queued_per_host is not None or budget.max_queued is not None
        for entry in entries:
            host = entry.host_key
            state = hosts.get(host)
            if state is not None and state.retired is not None:
                append(AddStatus.HOST_RETIRED)
                continue
            queued = per_host.get(host, 0)
            if check_budget:
                over = is_over_queue_budget(queued, len(front) + self._back_size, budget)
                if over:
                    append(AddStatus.OVER_HOST_BUDGET if over == 1 else AddStatus.OVER_CRAWL_BUDGET)
                    continue
            if not seen.add(entry.url):
                append(AddStatus.SEEN)
                continue
            front.push(entry.level, _encode(host, entry.depth, entry.url))
            per_host[host] = queued + 1
            append(AddStatus.QUEUED)
        return statuses

    def _record(self, records: Sequence[CatalogueEntry]) -> None:
        catalogue = self._catalogue
        for entry in records:
            old = catalogue.get(entry.url)
            if old is not None and old.referrer is not None and entry.referrer != old.referrer:
                entry = replace(entry, referrer=old.referrer)
            catalogue[entry.url] = entry

    def _record_discovered(
        self, referrer: str, discovered: Sequence[QueuedUrl], statuses: Sequence[AddStatus]
    ) -> None:
        catalogue = self._catalogue
        for entry, status in zip(discovered, statuses, strict=True):
            if status is AddStatus.QUEUED and entry.url not in catalogue:
                catalogue[entry.url] = CatalogueEntry(
                    entry.url, depth=entry.depth, referrer=referrer
                )

    def _end_lease(self, lease: Lease, host: HostState | None) -> bool:
        current = self._leases.get(lease.host_key)
        if current is None or current.token != lease.token:
            return False
        del self._leases[lease.host_key]
        if host is not None:
            previous = self._host(lease.host_key)
            self._requests += max(0, host.requests_made - previous.requests_made)
            self._hosts[lease.host_key] = host
        return True

    def _requeue(self, host_key: str, state: HostState) -> None:
        """Put an unleased host back in the heap, or release its empty back queue."""
        queue = self._back[host_key]
        if state.retired is not None:
            self._retired += 1
            self._back_size -= len(queue)
            self._queued_per_host[host_key] -= len(queue)
            del self._back[host_key]
        elif queue:
            self._seq += 1
            heapq.heappush(self._heap, (state.next_allowed_at, self._seq, host_key))
        else:
            del self._back[host_key]

    def _reclaim(self, now_at: float) -> None:
        """Void expired leases: URL back to the head of its queue, host back in the heap."""
        expiry = self._expiry
        while expiry and expiry[0][0] <= now_at:
            _, token, host = heapq.heappop(expiry)
            lease = self._leases.get(host)
            if lease is None or lease.token != token:
                continue  # completed or released in time
            del self._leases[host]
            self._back[host].appendleft(_encode(host, lease.depth, lease.url))
            self._back_size += 1
            self._queued_per_host[host] += 1
            state = self._host(host)
            self._seq += 1
            heapq.heappush(self._heap, (max(state.next_allowed_at, now_at), self._seq, host))

    def _refill(self) -> None:
        """Move URLs from the front tier into back queues while a back queue is free."""
        back = self._back
        front = self._front
        limit = self._cfg.max_back_queues
        while len(back) < limit and front:
            popped = front.pop()
            assert popped is not None
            entry = popped[1]
            host = _entry_host(entry)
            queue = back.get(host)
            if queue is not None:
                queue.append(entry)
                self._back_size += 1
                continue
            state = self._hosts.get(host)
            if state is not None and state.retired is not None:
                self._queued_per_host[host] -= 1
                continue
            back[host] = deque((entry,))
            self._back_size += 1
            self._seq += 1
            at = state.next_allowed_at if state is not None else 0.0
            heapq.heappush(self._heap, (at, self._seq, host))


def _encode(host_key: str, depth: int, url: str) -> str:
    """The queue entry for ``url``; the host key is spelled out only if the URL does not say it."""
    start = url.find("://") + 3
    end = url.find("/", start)
    if url[start : end if end >= 0 else len(url)] == host_key:
        return f"{depth} {url}"
    return f"{depth}@{host_key} {url}"


def _entry_host(entry: str) -> str:
    """The host key of a queue entry (see :func:`_encode`)."""
    head, _, url = entry.partition(" ")
    at = head.find("@")
    if at >= 0:
        return head[at + 1 :]
    start = url.find("://") + 3
    end = url.find("/", start)
    return url[start : end if end >= 0 else len(url)]

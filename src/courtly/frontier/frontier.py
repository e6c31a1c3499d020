"""The Frontier facade: canonicalise, prioritise, budget, lease, complete.

One object over a :class:`~courtly.store.base.FrontierStore`::

    frontier = Frontier(MemoryStore(), FrontierConfig(), clock=SystemClock())
    await frontier.add_many([Candidate("https://example.org/", is_seed=True)])
    batch = await frontier.lease()
    for lease in batch.leases:
        ...  # fetch lease.url
        await frontier.complete(lease, Outcome.from_status(200, t0, t1), discovered)

The facade owns the policy (pure functions: :func:`prioritise`,
:func:`apply_outcome`, budgets); the store owns the state and makes each step
atomic. The clock is injected; no policy reads the system clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from courtly.archive.catalogue import CatalogueEntry
from courtly.clock import Clock
from courtly.errors import InvalidURL
from courtly.events import EventBus, HostLeased, HostStateChanged, LeaseExpired
from courtly.frontier.budget import is_host_over_request_budget
from courtly.frontier.config import FrontierConfig
from courtly.frontier.politeness import apply_outcome
from courtly.frontier.prioritiser import PrioritySignals, is_lifted, prioritise
from courtly.frontier.records import AddStatus, FrontierCounts, HostState, Lease, Outcome, QueuedUrl
from courtly.frontier.retry import should_retry
from courtly.store.base import FrontierStore, LeaseBatch
from courtly.url import canonicalize, host_of

__all__ = ["Candidate", "Frontier"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A URL offered to the frontier, with the signals the prioritiser reads."""

    url: str
    depth: int = 0
    is_seed: bool = False
    inlinks: int = 0
    host_quality: float = 0.0
    is_recrawl: bool = False
    cash_ratio: float = 1.0
    """OPIC cash over the mean of admitted URLs (``courtly.frontier.importance``)."""


class Frontier:
    """Two-tier Mercator frontier with host-exclusive, fenced, expiring leases.

    ``host_key`` maps a canonical URL to its politeness unit (default: the host,
    with a non-default port). Invariants (tested as properties):

    * at most one live lease per host key;
    * no lease before the host's ``next_allowed_at``;
    * every added URL is leased exactly once or reported ``SEEN``;
    * FIFO within a host and level; low levels still served under load;
    * an expired lease returns its URL to the head of its back queue, and the
      late completion is rejected (returns ``False``).
    """

    def __init__(
        self,
        store: FrontierStore,
        config: FrontierConfig | None = None,
        *,
        clock: Clock,
        host_key: Callable[[str], str] = host_of,
        events: EventBus | None = None,
    ) -> None:
        self.store = store
        self.events = events if events is not None else EventBus()
        """Where leases, host state changes and expired leases are published."""
        self.config = config or FrontierConfig()
        self._clock = clock
        self._host_key = host_key
        self.retired: Counter[str] = Counter()
        """Hosts this object retired (by a completion or release that took effect), by reason."""

    # -- adding -----------------------------------------------------------

    def queued_url(self, candidate: Candidate, *, canonical: bool = False) -> QueuedUrl:
        """Canonicalise (unless ``canonical``), key and prioritise one candidate.

        Raises :class:`~courtly.errors.InvalidURL` for an uncrawlable URL.
        """
        url = candidate.url if canonical else canonicalize(candidate.url, params=self.config.params)
        signals = PrioritySignals(
            candidate.depth,
            candidate.is_seed,
            candidate.inlinks,
            candidate.host_quality,
            candidate.is_recrawl,
            candidate.cash_ratio,
        )
        levels = self.config.queues.levels
        level = prioritise(signals, levels)
        lift = is_lifted(signals, levels)
        return QueuedUrl(url, self._host_key(url), level, candidate.depth, lift)

    def prepare(
        self, candidates: Iterable[Candidate], *, canonical: bool = False
    ) -> tuple[list[QueuedUrl], list[int]]:
        """Turn candidates into queue entries; also the indexes of invalid ones."""
        entries: list[QueuedUrl] = []
        invalid: list[int] = []
        for i, candidate in enumerate(candidates):
            try:
                entries.append(self.queued_url(candidate, canonical=canonical))
            except InvalidURL:
                invalid.append(i)
        return entries, invalid

    async def add(self, candidate: Candidate | str, *, canonical: bool = False) -> AddStatus:
        """Offer one URL; see :meth:`add_many`."""
        if isinstance(candidate, str):
            candidate = Candidate(candidate)
        return (await self.add_many((candidate,), canonical=canonical))[0]

    async def add_many(
        self, candidates: Iterable[Candidate], *, canonical: bool = False
    ) -> list[AddStatus]:
        """Offer URLs (seeds, sitemap entries); one status per candidate, in order."""
        candidates = list(candidates)
        entries, invalid = self.prepare(candidates, canonical=canonical)
        statuses = await self.store.add(entries, self._clock.now(), self.config.budget)
        return _merge_invalid(statuses, invalid, len(candidates))

    async def add_queued(self, entries: Sequence[QueuedUrl]) -> list[AddStatus]:
        """Offer entries already canonical, keyed and prioritised (the fast path)."""
        return await self.store.add(entries, self._clock.now(), self.config.budget)

    async def promote(self, entries: Sequence[QueuedUrl]) -> list[bool]:
        """Move queued URLs up to the levels of ``entries`` (one batched store step; see
        :meth:`~courtly.store.base.FrontierStore.promote`). :meth:`complete` already
        promotes the ``SEEN`` links whose ``lift`` is set."""
        if not entries:
            return []
        return await self.store.promote(entries, self._clock.now())

    # -- leasing ----------------------------------------------------------

    async def lease(
        self, max_leases: int = 1, *, ahead_s: float = 0.0, announce: bool = True
    ) -> LeaseBatch:
        """Lease up to ``max_leases`` ready hosts (their head URLs).

        If fewer come back, ``next_ready_at`` says when the next host will be
        ready (``None``: none is waiting; only a completion can bring work).
        ``ahead_s`` also leases hosts that will be ready within that many seconds
        (the store's step runs as of ``now + ahead_s``, see
        :meth:`~courtly.store.base.FrontierStore.lease`): the caller then starts no
        request before its lease's ``host.next_allowed_at``.

        Each lease is announced (:class:`~courtly.events.HostLeased`, which the
        dashboard's host table checks against the host's allowed time) here, or, with
        ``announce=False``, by :meth:`begin` when the caller starts its request.
        """
        now = self._clock.now()
        batch = await self.store.lease(
            now, self.config.lease_ttl_s, max_leases, ahead_s=max(0.0, ahead_s)
        )
        if announce:
            publish = self.events.publish
            for lease in batch.leases:
                publish(HostLeased(now, lease.host_key))
        return batch

    def begin(self, lease: Lease) -> None:
        """Announce ``lease`` (taken with ``announce=False``): its request starts now."""
        self.events.publish(HostLeased(self._clock.now(), lease.host_key))

    def next_host_state(self, lease: Lease, outcome: Outcome) -> HostState:
        """The host's state after ``outcome`` (pure policy plus the request budget)."""
        state = apply_outcome(lease.host, outcome, self.config.politeness)
        if state.retired is None and is_host_over_request_budget(
            state.requests_made, self.config.budget
        ):
            state = replace(state, retired="budget")
        return state

    async def complete(
        self,
        lease: Lease,
        outcome: Outcome,
        discovered: Sequence[QueuedUrl] = (),
        records: Sequence[CatalogueEntry] = (),
    ) -> list[AddStatus] | None:
        """Finish a lease with its outcome, the links it found (already prepared) and
        its catalogue entries; atomically.

        The host returns to the ready heap at ``outcome.ended_at`` + politeness
        delay. Returns the statuses of ``discovered``, or ``None`` if the lease was
        fenced: it had expired, the URL went back to its queue, and nothing of
        this result was stored (discard it).
        """
        state = self.next_host_state(lease, outcome)
        statuses = await self.store.complete(
            lease, state, discovered, self._clock.now(), self.config.budget, records
        )
        if statuses is not None:
            self._count_retired(lease, state)
            self.events.publish(HostStateChanged(self._clock.now(), state))
        else:
            self.events.publish(LeaseExpired(self._clock.now(), lease.host_key))
        return statuses

    async def release(self, lease: Lease, outcome: Outcome | None = None) -> bool:
        """Give a lease back: its URL returns to the head of the host's queue.

        With ``outcome`` (e.g. the robots.txt fetch made under this lease) the
        host's politeness state advances as after any request; without it the
        host keeps its state and is ready again at once.
        """
        state = self.next_host_state(lease, outcome) if outcome is not None else None
        return await self._give_back(lease, state, failed=False)

    def retries(self, lease: Lease, outcome: Outcome) -> bool:
        """True if the fetch made under ``lease`` that ended with ``outcome`` is to be
        tried again (:func:`~courtly.frontier.retry.should_retry`): then :meth:`retry`
        it, else :meth:`complete` it with its failure catalogued."""
        return should_retry(outcome.kind, lease.attempts, self.config.politeness.max_attempts)

    async def retry(self, lease: Lease, outcome: Outcome) -> bool:
        """Give a failed attempt back: the URL returns to the head of its host's queue
        with one more attempt counted, and the host's state advances with ``outcome``
        (its back-off: the next attempt waits for it, through a lease like any
        request). ``False`` if the lease was fenced."""
        return await self._give_back(lease, self.next_host_state(lease, outcome), failed=True)

    async def _give_back(self, lease: Lease, state: HostState | None, *, failed: bool) -> bool:
        """:meth:`release` or :meth:`retry`: the store's release, then its event."""
        released = await self.store.release(lease, state, self._clock.now(), failed=failed)
        if released:
            if state is not None:
                self._count_retired(lease, state)
            self.events.publish(HostStateChanged(self._clock.now(), state or lease.host))
        else:
            self.events.publish(LeaseExpired(self._clock.now(), lease.host_key))
        return released

    def _count_retired(self, lease: Lease, state: HostState) -> None:
        if state.retired is not None and lease.host.retired is None:
            self.retired[state.retired] += 1

    async def counts(self) -> FrontierCounts:
        return await self.store.counts(self._clock.now())

    async def aclose(self) -> None:
        await self.store.aclose()


def _merge_invalid(statuses: list[AddStatus], invalid: list[int], total: int) -> list[AddStatus]:
    if not invalid:
        return statuses
    merged: list[AddStatus] = []
    it = iter(statuses)
    bad = set(invalid)
    for i in range(total):
        merged.append(AddStatus.INVALID if i in bad else next(it))
    return merged

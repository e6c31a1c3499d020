"""The requests between the store and Scrapy's engine, in memory, and their moves.

The engine's calls, the downloader's signals and the refill task share one
:class:`Pipeline`:

* ``adds``: enqueued requests not yet in the frontier;
* ``due``: leased requests whose host may be fetched now (the *due buffer*);
* ``bypass``: requests with no host to be polite to (not http(s));
* ``holdback``: leased requests whose host is not due yet (leased a little ahead
  of its time), each released at its host's ``next_allowed_at``;
* ``held``: leased requests, from their lease to the end of their response;
* ``scraping``: responses the spider is working on (still leased: the lease
  completes once the requests of the callback are enqueued);
* ``completions``: leases to complete or give back, in order.

A request moves from ``held`` to ``completions`` by :meth:`Pipeline.finish` (the
request leaves the frontier) or :meth:`Pipeline.give_back` (it returns to the head
of its host's queue). A leased request waits for its host's time (the holdback),
then for a place at its address (the per-IP gate, an
:class:`~courtly.integrations.scrapy.gate.AddressGate`: this process's count, or the
shared crawl's), then goes to ``due``, robots.txt first when its host's copy is
unknown.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from scrapy import Request

from courtly.clock import Clock
from courtly.fetch.address_holds import AddressHolds
from courtly.frontier import Outcome
from courtly.integrations.scrapy.gate import AddressGate, IpGate
from courtly.integrations.scrapy.held import Add, Held, Step
from courtly.integrations.scrapy.holdback import Holdback
from courtly.integrations.scrapy.payloads import Payloads

__all__ = ["Pipeline"]


class Pipeline:
    """The scheduler's in-memory buffers (see the module doc). One event loop."""

    def __init__(
        self,
        clock: Clock,
        per_ip: int,
        payloads: Payloads,
        *,
        poke: Callable[[], None],
        wake_engine: Callable[[bool], None],
        fetch_robots: Callable[[Held], None],
    ) -> None:
        self.clock = clock
        self.payloads = payloads
        self.adds: deque[Add] = deque()
        self.due: deque[Held] = deque()
        self.bypass: deque[Request] = deque()
        self.held: dict[str, Held] = {}
        self.scraping: dict[str, Held] = {}
        self.completions: deque[tuple[Held, Outcome | None, Step]] = deque()
        self.holdback: Holdback[Held] = Holdback(
            clock, asyncio.get_running_loop().call_later, self._released
        )
        self._from_timer = False
        self.gate: AddressGate[Held] = IpGate(per_ip)
        """This process's count; a shared crawl's scheduler puts its store's gate here."""
        self.holds = AddressHolds(per_ip)
        """Leases held per address, from :meth:`admit` to :meth:`release_ip`: the refill
        task gives back a lease whose address has no room (``holds.room`` is false)."""
        self.freed_at: dict[str, float] = {}
        """Per host key: when this process last let its lease go (the spider done with
        its response, or the lease given back), for the start-lag statistic."""
        self.admitting = 0
        """Leases being admitted (payload load, robots.txt, address) right now."""
        self.frontier_busy = True
        """The frontier may still hand out work soon (set by the refill task)."""
        self._poke = poke
        self.wake_engine = wake_engine
        self._fetch_robots = fetch_robots

    def pending(self) -> bool:
        """Anything buffered, leased, in flight or due soon (``has_pending_requests``)."""
        return bool(
            self.bypass
            or self.due
            or self.holdback
            or self.adds
            or self.held
            or self.scraping
            or self.completions
            or self.admitting
            or self.frontier_busy
        )

    def outstanding(self) -> int:
        """Leases this process holds or is admitting."""
        return len(self.held) + len(self.scraping) + self.admitting

    def admit(self, held: Held, ip: str | None) -> None:
        """Let ``held`` go to its address ``ip`` (``None``: unknown) once its host is due
        and it has a place there."""
        held.ip = ip
        if ip is not None:
            self.holds.take(ip, held.lease.host.next_allowed_at)
            held.address_at = self.clock.now()
        if not self.holdback.hold(held, held.lease.host.next_allowed_at):
            self._enter_gate(held)

    def _released(self, held: Held) -> None:
        """The holdback's timer: ``held``'s host is due. This is a loop callback of
        the scheduler's own, so the engine may poll at once (one turn saved)."""
        self._from_timer = True
        try:
            self._enter_gate(held)
        finally:
            self._from_timer = False

    def _enter_gate(self, held: Held) -> None:
        ip = held.ip
        if ip is None or self.gate.admit(ip, held):
            self.go(held)
        else:
            held.gated_at = self.clock.now()

    def go(self, held: Held) -> None:
        """``held`` has its place at its address: fetch robots.txt first, or hand it out."""
        if held.decision is None:
            self._fetch_robots(held)
            return
        held.buffered_at = self.clock.now()
        self.due.append(held)
        at_once, self._from_timer = self._from_timer, False  # the poll may re-enter here
        self.wake_engine(at_once)

    def release_ip(self, held: Held) -> None:
        """``held``'s exchange is over: free its place at its address for the next."""
        if held.ip is None:
            return
        ip, held.ip = held.ip, None
        if held.address_at is not None:
            due_at = held.lease.host.next_allowed_at
            self.holds.give(ip, due_at, self.clock.now() - held.address_at)
            held.address_at = None
        successor = self.gate.release(ip)
        if successor is not None:
            self.admitted(successor)

    def admitted(self, held: Held) -> None:
        """``held`` waited for its place at its address and has it now."""
        if held.gated_at is not None:
            held.gate_wait_s = self.clock.now() - held.gated_at
        self.go(held)

    def finish(self, held: Held, outcome: Outcome) -> None:
        """The lease is done: complete it (the request leaves the frontier)."""
        self.held.pop(held.lease.url, None)
        self._let_go(held, outcome, "complete")

    def give_back(self, held: Held, outcome: Outcome | None) -> None:
        """Release the lease: the request returns to the head of its host's queue."""
        self.held.pop(held.lease.url, None)
        if not held.stored:
            self.payloads.keep(held.payload_id, held.request)
        self._let_go(held, outcome, "release")

    def settle(self, held: Held) -> None:
        """The spider is done with ``held``'s response: complete its lease."""
        outcome = held.outcome
        assert outcome is not None
        del self.scraping[held.lease.url]
        self._let_go(held, outcome, "complete")

    def _let_go(self, held: Held, outcome: Outcome | None, step: Step) -> None:
        self.freed_at[held.lease.host_key] = self.clock.now()
        self.completions.append((held, outcome, step))
        self._poke()

    def unhanded(self) -> list[Held]:
        """Remove and return what was leased but never handed to the engine (at close)."""
        items = [*self.due, *self.holdback.drain(), *self.gate.drain_waiting()]
        self.due.clear()
        return items

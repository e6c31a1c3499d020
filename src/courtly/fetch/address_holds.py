"""Leases one process holds per address: no more than it can start soon.

A lease held by a request that waits for a place at its address (the per-IP cap)
keeps its host from every other process of a shared crawl, while it sends nothing.
On a web of many hosts behind one address, a process that leased every ready host
would hold them all and leave the other processes of the crawl nothing to fetch.

So a process holds, per address, at most :func:`holds_per_address` leases: its
per-IP places, plus as many waiting for one (enough to keep the address busy from
one request's end to the next lease), as long as the address is busy
(:func:`may_hold`): requests of this process wait for a place there, or that many
of its leases there have their host's time come (each is sending or will wait; the
fetcher has not seen them all yet). A lease beyond that is given back at once,
untouched (no request, no counter moved), its host held for
:func:`give_back_wait_s`: long enough that this process's next lease step does not
take it again at once, short enough that the host is not kept from the crawl. On an
address that is not busy, leases taken a little ahead of their host's time do not
count: they start at that time.

The policy is pure (:func:`holds_per_address`, :func:`may_hold`,
:func:`give_back_wait_s`);
:class:`AddressHolds` is its bookkeeping for one process: no clock, no I/O (the
caller gives the times, in seconds on its clock). The crawler
(:mod:`courtly.crawl.crawler`) and the Scrapy add-on's buffer
(:mod:`courtly.integrations.scrapy.pipeline`) both use it.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "GIVE_BACK_MAX_S",
    "AddressHolds",
    "give_back_wait_s",
    "holds_per_address",
    "may_hold",
]

GIVE_BACK_MAX_S: Final = 10.0
"""The longest a host given back for its address waits (seconds)."""
_HOLD_ALPHA: Final = 0.2
"""Weight of the newest hold time in the moving mean of an address's hold times."""


def holds_per_address(per_ip: int) -> int:
    """The leases whose time has come a process may hold on hosts of one address:
    its ``per_ip`` places, and as many waiting for one (never fewer than 2)."""
    return max(2, 2 * per_ip)


def may_hold(held: int, due: int, waiting: int, per_ip: int) -> bool:
    """Whether a process may hold one more lease at an address where it holds
    ``held`` leases, ``due`` of them with their host's time come, and ``waiting`` of
    its requests wait for a place: below :func:`holds_per_address`, or while the
    address is not busy (nothing waits, fewer than that many due)."""
    limit = holds_per_address(per_ip)
    return held < limit or (waiting <= 0 and due < limit)


def give_back_wait_s(mean_hold_s: float | None, ahead_s: float) -> float:
    """Seconds a host given back for its address waits before it can be leased again.

    ``mean_hold_s``: the mean time this process held a lease on the address (from
    its start to its end, waiting for a place included; ``None`` if none ended yet);
    ``ahead_s``: how far ahead of a host's time the caller leases (its next lease step
    would take the host again at once within it). At least twice ``ahead_s``; about
    half a hold time (the waiting leases take the next places, one frees in about
    that time); at most :data:`GIVE_BACK_MAX_S`.
    """
    floor_s = 2.0 * ahead_s
    if mean_hold_s is None:
        return floor_s
    return min(GIVE_BACK_MAX_S, max(floor_s, mean_hold_s / 2.0))


class AddressHolds:
    """Per address: the leases this process holds there (each with its host's time)
    and their mean hold time.

    Invariant: a lease is taken at an address holding ``limit`` or more only while
    nothing waits there and fewer than ``limit`` have their time come, as long as
    every :meth:`take` follows a :meth:`room` that said ``True`` (one event loop:
    nothing comes between).
    """

    def __init__(self, per_ip: int) -> None:
        self.per_ip = per_ip
        self.limit = holds_per_address(per_ip)
        """Leases held at one address while it is busy."""
        self._due: dict[str, list[float]] = {}
        self._mean_hold_s: dict[str, float] = {}

    def due(self, ip: str, now: float) -> int:
        """Leases held at ``ip`` whose host's time is at or before ``now``."""
        return sum(1 for at in self._due.get(ip, ()) if at <= now)

    def held(self, ip: str) -> int:
        """Leases held at ``ip`` now."""
        return len(self._due.get(ip, ()))

    def room(self, ip: str, now: float, waiting: int) -> bool:
        """Whether one more lease may be held at ``ip`` at ``now``, where ``waiting``
        requests of this process wait for a place (:func:`may_hold`)."""
        dues = self._due.get(ip, ())
        if len(dues) < self.limit:
            return True
        return may_hold(len(dues), self.due(ip, now), waiting, self.per_ip)

    def take(self, ip: str, due_at: float) -> None:
        """A lease at ``ip`` whose host's time is ``due_at`` is held from now."""
        self._due.setdefault(ip, []).append(due_at)

    def give(self, ip: str, due_at: float, held_s: float) -> None:
        """The lease at ``ip`` taken with ``due_at``, ``held_s`` seconds ago, is over."""
        dues = self._due.get(ip)
        if dues is not None and due_at in dues:
            dues.remove(due_at)
            if not dues:
                del self._due[ip]
        mean = self._mean_hold_s.get(ip)
        held_s = max(0.0, held_s)
        self._mean_hold_s[ip] = held_s if mean is None else mean + _HOLD_ALPHA * (held_s - mean)
        if len(self._mean_hold_s) > 4 * len(self._due) + 1024:
            # Bounded: forget the hold times of addresses holding nothing now.
            self._mean_hold_s = {a: m for a, m in self._mean_hold_s.items() if a in self._due}

    def wait_s(self, ip: str, ahead_s: float) -> float:
        """:func:`give_back_wait_s` for a host of ``ip``."""
        return give_back_wait_s(self._mean_hold_s.get(ip), ahead_s)

"""Leases one process holds per address: no more than it can start soon.

A lease held by a request that waits for a place at its address (the per-IP cap)
keeps its host from every other process of a shared crawl, while it sends nothing.
On a web of many hosts behind one address, a process that leased every ready host
would hold them all and leave the other processes of the crawl nothing to fetch.
So a process holds, per address, at most :func:`holds_per_address` leases: its
per-IP places, plus as many waiting for them (enough to keep the address busy
from one request's end to the next lease). A lease beyond that is given back at
once, untouched (no request, no counter moved), its host held for
:func:`give_back_wait_s`: long enough that this process's next lease step does not
take it again at once, short enough that the host is not kept from the crawl.

The policy is pure (:func:`holds_per_address`, :func:`give_back_wait_s`);
:class:`AddressHolds` is its bookkeeping for one process: no clock, no I/O (the
caller gives the times). The crawler (:mod:`courtly.crawl.crawler`) and the Scrapy
add-on's buffer (:mod:`courtly.integrations.scrapy.pipeline`) both use it.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "GIVE_BACK_MAX_S",
    "AddressHolds",
    "give_back_wait_s",
    "holds_per_address",
]

GIVE_BACK_MAX_S: Final = 10.0
"""The longest a host given back for its address waits (seconds)."""
_HOLD_ALPHA: Final = 0.2
"""Weight of the newest hold time in the moving mean of an address's hold times."""


def holds_per_address(per_ip: int) -> int:
    """The leases a process may hold on hosts of one address: its ``per_ip`` places,
    and as many waiting for one (never fewer than 2)."""
    return max(2, 2 * per_ip)


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
    """Per address: the leases this process holds there, and their mean hold time.

    Invariant: ``held(ip) <= limit`` for every address, as long as every
    :meth:`take` follows a :meth:`room` that said ``True`` (one event loop: nothing
    comes between).
    """

    def __init__(self, per_ip: int) -> None:
        self.limit = holds_per_address(per_ip)
        """Leases held at one address at most."""
        self._held: dict[str, int] = {}
        self._mean_hold_s: dict[str, float] = {}

    def room(self, ip: str) -> bool:
        """Whether one more lease may be held at ``ip``."""
        return self._held.get(ip, 0) < self.limit

    def held(self, ip: str) -> int:
        """Leases held at ``ip`` now."""
        return self._held.get(ip, 0)

    def take(self, ip: str) -> None:
        """A lease at ``ip`` is held from now."""
        self._held[ip] = self._held.get(ip, 0) + 1

    def give(self, ip: str, held_s: float) -> None:
        """A lease at ``ip`` taken ``held_s`` seconds ago is over."""
        count = self._held.get(ip, 0) - 1
        if count > 0:
            self._held[ip] = count
        else:
            self._held.pop(ip, None)
        mean = self._mean_hold_s.get(ip)
        held_s = max(0.0, held_s)
        self._mean_hold_s[ip] = held_s if mean is None else mean + _HOLD_ALPHA * (held_s - mean)
        if count <= 0 and len(self._mean_hold_s) > 4 * len(self._held) + 1024:
            # Bounded: forget the hold times of addresses holding nothing now.
            self._mean_hold_s = {a: m for a, m in self._mean_hold_s.items() if a in self._held}

    def wait_s(self, ip: str, ahead_s: float) -> float:
        """:func:`give_back_wait_s` for a host of ``ip``."""
        return give_back_wait_s(self._mean_hold_s.get(ip), ahead_s)

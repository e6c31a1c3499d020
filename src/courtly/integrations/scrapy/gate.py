"""The per-IP cap: at most ``cap`` requests in flight to one address.

Host leases already keep one request per host; several hosts may share an
address, so the scheduler also counts, per resolved IP, the requests it has let
go (from the due buffer to the end of the response, robots.txt fetches
included) and holds the rest back, first come first served. :class:`IpGate` is
this process's count: pure bookkeeping, no clock, no I/O. A crawl shared by several
processes counts in its store instead
(:class:`~courtly.integrations.scrapy.shared_gate.SharedIpGate`); both are an
:class:`AddressGate`.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, Protocol, TypeVar

__all__ = ["AddressGate", "IpGate"]

T = TypeVar("T")


class AddressGate(Protocol[T]):
    """Admission per address. An item not admitted at once is admitted later: returned
    by a :meth:`release` (this process's gate) or handed to the gate's own callback
    (a shared gate)."""

    def admit(self, ip: str, item: T) -> bool:
        """Take a place for ``item`` at ``ip`` now (``True``), or queue it (``False``)."""
        ...

    def release(self, ip: str) -> T | None:
        """Free one place at ``ip``; the waiting item that takes it, if this gate says."""
        ...

    def waiting_at(self, ip: str) -> int:
        """Items waiting for a place at ``ip`` now."""
        ...

    def drain_waiting(self) -> list[T]:
        """Remove and return every waiting item (at close)."""
        ...

    def close(self) -> None:
        """The scheduler is closing: admit nothing more. An item offered from now on
        waits (for :meth:`drain_waiting`), and a shared gate's waiting tasks end
        without handing anything on, even if their cancellation is lost."""
        ...


class IpGate(Generic[T]):
    """Admission per address, FIFO among the waiting.

    Invariant: for every address, ``in_flight(ip) <= cap``; a waiting item is
    admitted by :meth:`release` as soon as a place frees up.
    """

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError("the per-IP cap must be >= 1")
        self._cap = cap
        self._in_flight: dict[str, int] = {}
        self._waiting: dict[str, deque[T]] = {}
        self._closed = False

    def admit(self, ip: str, item: T) -> bool:
        """Take a place for ``item`` at ``ip`` (``True``), or queue it (``False``; always
        after :meth:`close`)."""
        count = self._in_flight.get(ip, 0)
        if count < self._cap and ip not in self._waiting and not self._closed:
            self._in_flight[ip] = count + 1
            return True
        self._waiting.setdefault(ip, deque()).append(item)
        return False

    def release(self, ip: str) -> T | None:
        """Free one place at ``ip``; return the waiting item that takes it, if any (none
        after :meth:`close`)."""
        waiting = self._waiting.get(ip)
        if waiting and not self._closed:
            item = waiting.popleft()
            if not waiting:
                del self._waiting[ip]
            return item
        count = self._in_flight.get(ip, 0) - 1
        if count > 0:
            self._in_flight[ip] = count
        else:
            self._in_flight.pop(ip, None)
        return None

    def in_flight(self, ip: str) -> int:
        return self._in_flight.get(ip, 0)

    def waiting_at(self, ip: str) -> int:
        """Items held back at ``ip``."""
        waiting = self._waiting.get(ip)
        return len(waiting) if waiting else 0

    def waiting(self) -> int:
        """Items held back at all addresses."""
        return sum(len(q) for q in self._waiting.values())

    def drain_waiting(self) -> list[T]:
        """Remove and return every waiting item (at close)."""
        items = [item for q in self._waiting.values() for item in q]
        self._waiting.clear()
        return items

    def close(self) -> None:
        """Admit nothing more (the scheduler is closing)."""
        self._closed = True

"""Holdback: leased requests whose host is not due yet, released at its time.

The refill task leases hosts a little before they come due
(:data:`~courtly.integrations.scrapy.refill.LEASE_AHEAD_S`), so the store I/O of a
lease (the lease, the payload, robots.txt) is done before the host's time, not
after it. Each such request waits here until its host's ``next_allowed_at``; one
loop timer is armed for the earliest, and when it fires every request due by then
goes on at once (``on_due``). The delay is computed on the injected clock; the
timer is the loop's (``call_later``, injected too), as
:class:`~courtly.integrations.scrapy.waker.Waker` does.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from courtly.clock import Clock

__all__ = ["Holdback", "TimerHandle"]

T = TypeVar("T")


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Holdback(Generic[T]):
    """Items held until their time (seconds on ``clock``), then handed to ``on_due``.

    Invariant: no item goes to ``on_due`` before its time; an armed timer fires at
    (or, on a busy loop, after) the earliest time held.
    """

    def __init__(
        self,
        clock: Clock,
        call_later: Callable[[float, Callable[[], None]], TimerHandle],
        on_due: Callable[[T], None],
    ) -> None:
        self._clock = clock
        self._call_later = call_later
        self._on_due = on_due
        self._heap: list[tuple[float, int, T]] = []
        self._seq = itertools.count()
        self._timer: TimerHandle | None = None
        self._timer_at = float("inf")

    def __len__(self) -> int:
        return len(self._heap)

    def hold(self, item: T, due_at: float) -> bool:
        """Hold ``item`` until ``due_at``; ``False`` (not held) if that time has come."""
        if due_at <= self._clock.now():
            return False
        heapq.heappush(self._heap, (due_at, next(self._seq), item))
        self._arm()
        return True

    def drain(self) -> list[T]:
        """Remove and return every held item (at close)."""
        items = [item for _, _, item in self._heap]
        self._heap.clear()
        self._cancel()
        return items

    def _arm(self) -> None:
        at = self._heap[0][0]
        if self._timer is not None and self._timer_at <= at:
            return
        self._cancel()
        self._timer_at = at
        self._timer = self._call_later(max(0.0, at - self._clock.now()), self._fire)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, float("inf")

    def _fire(self) -> None:
        self._timer, self._timer_at = None, float("inf")
        now = self._clock.now()
        heap = self._heap
        while heap and heap[0][0] <= now:
            self._on_due(heapq.heappop(heap)[2])
        if heap:
            self._arm()

"""A top-N kept as keys change: the host table's sorts without a sort per request.

A :class:`KeptTop` holds *candidates*, entries ``(key, order, item)`` in a min-heap
(the smallest key ranks first: a "largest first" sort negates its key; ``order`` is
unique per item and breaks ties, so items are never compared), and a *bound*: every
item whose current ``(key, order)`` is below the bound has an entry with its current
key in the heap (no bound: every item has). So the first ``n`` live entries of the
heap are the top ``n`` of all items, whenever the heap holds ``n`` live entries.

* :meth:`offer` (an item's key changed): push if below the bound, else nothing. The
  item's older entry, if any, is stale from then on: an entry is *live* while its key
  is the item's current key (``current(item)``); an equal key pushed twice is one.
* :meth:`top`: pop entries until ``n`` live ones are held, drop the stale ones met,
  push the live ones back: O((n + stale met) x log heap), the heap being at most
  about ``2 x keep`` entries (``keep``: 256, or twice the largest ``n`` asked).
* When pushes grow the heap past ``2 x keep`` (plus a slack), it keeps its ``keep``
  best live entries and the bound moves to the last of them (O(heap), once per about
  ``keep`` pushes). When the heap no longer holds ``n`` live entries (the candidates'
  keys moved below the bound), :meth:`top` rebuilds it from every item (O(items):
  ``heapq.nsmallest``), which is as often as ``keep - n`` candidates fall behind.

Offers cost O(log keep), not O(log items): the heap stays small however many items.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any, Final, Generic, TypeVar

__all__ = ["KEEP", "KeptTop"]

T = TypeVar("T")
KEEP: Final = 256
"""Candidates kept at least (about ``2 x`` the largest ``n`` asked, if more)."""
_SLACK: Final = 64

Entry = tuple[Any, int, T]


class KeptTop(Generic[T]):
    """The top of items by a key that changes; ``current(item)`` is the item's key now
    (what the last :meth:`offer` for it said)."""

    def __init__(self, current: Callable[[T], object], keep: int = KEEP) -> None:
        self._current = current
        self._keep = keep
        self._heap: list[Entry[T]] = []
        self._bound: tuple[Any, int] | None = None
        """Every item below it has a live entry (``None``: every item has one)."""
        self.rebuilds = 0
        """How many times :meth:`top` rebuilt the heap from every item."""

    def __len__(self) -> int:
        return len(self._heap)

    def offer(self, key: Any, order: int, item: T) -> None:
        """``item`` (first seen ``order``-th) has ``key`` now."""
        bound = self._bound
        if bound is None or (key, order) < bound:
            heapq.heappush(self._heap, (key, order, item))
            if len(self._heap) > 2 * self._keep + _SLACK:
                self._tighten()

    def top(self, n: int, everyone: Callable[[], Iterable[Entry[T]]]) -> list[T]:
        """The ``n`` items of the smallest keys, smallest first (fewer if fewer items);
        ``everyone()`` gives every item's current entry, for a rebuild."""
        if 2 * n > self._keep:
            self._keep = 2 * n
        chosen = self._take(n)
        if len(chosen) < n and self._bound is not None:
            self._rebuild(everyone())
            chosen = self._take(n)
        return chosen

    def _take(self, n: int) -> list[T]:
        heap, current = self._heap, self._current
        pop, push = heapq.heappop, heapq.heappush
        live: list[Entry[T]] = []
        taken: set[int] = set()
        while heap and len(live) < n:
            entry = pop(heap)
            if entry[1] not in taken and entry[0] == current(entry[2]):
                taken.add(entry[1])
                live.append(entry)
        for entry in live:
            push(heap, entry)
        return [entry[2] for entry in live]

    def _tighten(self) -> None:
        """Keep the ``keep`` best live entries (each item once); the bound follows."""
        current = self._current
        taken: set[int] = set()
        live: list[Entry[T]] = []
        for entry in self._heap:
            if entry[1] not in taken and entry[0] == current(entry[2]):
                taken.add(entry[1])
                live.append(entry)
        if len(live) > self._keep:
            live = heapq.nsmallest(self._keep, live)
            self._bound = (live[-1][0], live[-1][1])
        heapq.heapify(live)
        self._heap = live

    def _rebuild(self, entries: Iterable[Entry[T]]) -> None:
        self.rebuilds += 1
        best = heapq.nsmallest(self._keep + 1, entries)
        if len(best) > self._keep:
            best = best[: self._keep]
            self._bound = (best[-1][0], best[-1][1])
        else:
            self._bound = None
        heapq.heapify(best)
        self._heap = best

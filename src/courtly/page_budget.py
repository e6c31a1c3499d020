"""The page budget of ``--max-pages``: exact, in one process or shared by several.

A fetch that may make a page *claims* a unit of the budget before its lease is
taken; when it ends it is *settled*: a unit that made a page is spent, one that
did not (robots.txt, a retry, a skip, an error, a cancelled fetch) goes back. So
pages made plus fetches in flight never exceed ``max_pages``, and a crawl makes
exactly ``min(max_pages, pages there are)`` pages: no overshoot, whatever the
number of fetchers or processes.

:class:`LocalPageBudget` is the one-process twin; :class:`SharedPageBudget` keeps
the two counts in shared memory under one lock, made by the parent of a
partitioned crawl and handed to every partition. Both are non-blocking (each
call holds the lock for a few instructions); a process that finds the budget
fully claimed by others waits for a settlement like for any other work.
"""

from __future__ import annotations

from multiprocessing.context import BaseContext
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from multiprocessing.sharedctypes import SynchronizedArray

__all__ = ["FetchClaims", "LocalPageBudget", "PageBudget", "SharedPageBudget"]


class PageBudget(Protocol):
    """Claims and settlements against ``max_pages`` (see the module doc)."""

    def claim(self, wanted: int) -> int:
        """Reserve up to ``wanted`` units; returns how many were granted (0 if none left)."""
        ...

    def settle(self, claimed: int, pages: int) -> None:
        """``claimed`` units ended, ``pages`` of them made a page (spent); the rest go back."""
        ...

    def spent(self) -> bool:
        """True once ``max_pages`` pages were made: nothing is left to claim, ever."""
        ...


class LocalPageBudget:
    """A :class:`PageBudget` in one process."""

    def __init__(self, max_pages: int) -> None:
        self._max = max_pages
        self._pages = 0
        self._claimed = 0

    def claim(self, wanted: int) -> int:
        granted = max(0, min(wanted, self._max - self._pages - self._claimed))
        self._claimed += granted
        return granted

    def settle(self, claimed: int, pages: int) -> None:
        _check(claimed, pages, self._claimed)
        self._claimed -= claimed
        self._pages += pages

    def spent(self) -> bool:
        return self._pages >= self._max


class SharedPageBudget:
    """A :class:`PageBudget` in shared memory (``[pages, claimed]`` under one lock).

    Made by the parent with :meth:`create` and passed to spawned children as a
    process argument (it pickles only that way, as shared memory does).
    """

    def __init__(self, max_pages: int, counts: SynchronizedArray[int]) -> None:
        self._max = max_pages
        self._counts = counts

    @classmethod
    def create(cls, context: BaseContext, max_pages: int) -> SharedPageBudget:
        return cls(max_pages, context.Array("q", 2))

    def claim(self, wanted: int) -> int:
        counts = self._counts
        with counts.get_lock():
            granted = max(0, min(wanted, self._max - counts[0] - counts[1]))
            counts[1] += granted
        return granted

    def settle(self, claimed: int, pages: int) -> None:
        counts = self._counts
        with counts.get_lock():
            _check(claimed, pages, counts[1])
            counts[1] -= claimed
            counts[0] += pages

    def spent(self) -> bool:
        counts = self._counts
        with counts.get_lock():
            return counts[0] >= self._max


def _check(claimed: int, pages: int, outstanding: int) -> None:
    if not 0 <= pages <= claimed <= outstanding:
        raise ValueError(f"settling {claimed} units ({pages} pages) of {outstanding} claimed")


class FetchClaims:
    """The running fetches that hold a unit of a crawl's :class:`PageBudget`.

    A fetch :meth:`hold`\\ s its unit from its start; one that turns out to make no page
    under its lease (a robots.txt fetch) gives it back at once (:meth:`give_back`), so
    a slow robots.txt never keeps other hosts' pages waiting; when a fetch ends its
    unit is settled, spent if it made a page (:meth:`made_page`). Without a budget
    (no ``--max-pages``) every call is a no-op.
    """

    def __init__(self, budget: PageBudget | None) -> None:
        self.budget = budget
        self._held: set[object] = set()
        self._paged: set[object] = set()

    def hold(self, fetch: object) -> None:
        if self.budget is not None:
            self._held.add(fetch)

    def holds(self, fetch: object) -> bool:
        return fetch in self._held

    def made_page(self, fetch: object) -> None:
        if fetch in self._held:
            self._paged.add(fetch)

    def give_back(self, fetch: object) -> bool:
        """``fetch`` will make no page: its unit goes back now (True if it held one)."""
        if fetch not in self._held or fetch in self._paged or self.budget is None:
            return False
        self._held.discard(fetch)
        self.budget.settle(1, 0)
        return True

    def ended(self, fetch: object) -> None:
        if fetch in self._held and self.budget is not None:
            self._held.discard(fetch)
            self.budget.settle(1, 1 if fetch in self._paged else 0)
        self._paged.discard(fetch)

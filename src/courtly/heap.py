"""The crawl's long-lived objects out of the cyclic collector's reach, and fewer collections.

A crawl process holds a large heap of long-lived objects (its modules, aiohttp, the
store's caches and tables, for a spider Scrapy and Twisted), and allocates containers at a
steady rate (requests, responses, parsed links, records), most of which live for one
page. With Python's default thresholds (700, 10, 10) a wide crawl ran about 30 young
collections a second per process and a full one every few seconds, each walking the whole
heap: 9% of a partition's time in the collector (measured with ``gc.callbacks``, wide web,
40 s, docs/performance.md).

:meth:`FrozenHeap.freeze`, called once the crawl is set up, moves every object alive then
into a permanent generation that collections skip (``gc.freeze()``) and, where given,
raises the collection thresholds: with the crawl's (10,000, 10, 10) a young collection
comes every 10,000 container allocations, by when most of a page's objects are gone, and
fewer survivors reach the older generations (the collector's time fell to 2-4%).
:meth:`FrozenHeap.thaw` gives the frozen objects back and restores the thresholds.

Trade-offs: a reference cycle among objects alive at the freeze that becomes garbage is
not collected until the thaw (set-up objects rarely do); cyclic garbage made during the
crawl waits for up to 10,000 allocations instead of 700 (a few MB at most). Both are
process-wide settings, held only while the crawl (or the spider) runs.
"""

from __future__ import annotations

import gc

__all__ = ["CRAWL_THRESHOLDS", "FrozenHeap"]

CRAWL_THRESHOLDS = (10_000, 10, 10)
"""The collector's thresholds while a crawl runs (Python's default: 700, 10, 10)."""


class FrozenHeap:
    """Freezes the heap once (if ``enabled``), with ``thresholds`` set while frozen
    (``None``: left as they are), and thaws what it froze, once."""

    def __init__(self, enabled: bool, thresholds: tuple[int, int, int] | None = None) -> None:
        self._enabled = enabled
        self._thresholds = thresholds
        self._saved: tuple[int, int, int] | None = None
        self._frozen = False

    @property
    def frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        """Move every object alive now out of the collector's reach (``gc.freeze``) and
        set the thresholds."""
        if self._enabled and not self._frozen:
            gc.freeze()
            if self._thresholds is not None:
                self._saved = gc.get_threshold()
                gc.set_threshold(*self._thresholds)
            self._frozen = True

    def thaw(self) -> None:
        """Give the frozen objects back to the collector (``gc.unfreeze``) and restore
        the thresholds."""
        if self._frozen:
            if self._saved is not None:
                gc.set_threshold(*self._saved)
                self._saved = None
            gc.unfreeze()
            self._frozen = False

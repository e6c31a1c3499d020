"""The spider's start-up objects out of the cyclic collector's reach while it crawls.

A Scrapy process holds a large heap of long-lived objects (Scrapy, Twisted, the spider,
courtly's modules). Each full (oldest-generation) collection walks all of them: on the
sandbox's politeness web, four collections of 50-55 ms in a 10 s run, each a stall of
the event loop during which no due host's request can start (the add-on's start-lag p99
went from 107-154 ms to 85-96 ms with them gone, docs/scrapy.md). ``gc.freeze()`` at
spider open moves every object alive then into a permanent generation that collections
skip; ``gc.unfreeze()`` at close puts them back.

Trade-off: a reference cycle among objects alive at open that becomes garbage during the
crawl is not collected until the close (start-up objects rarely do). The setting
``COURTLY_GC_FREEZE = False`` keeps Python's default.
"""

from __future__ import annotations

import gc

__all__ = ["FrozenHeap"]


class FrozenHeap:
    """Freezes the heap once (if ``enabled``) and thaws what it froze, once."""

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled
        self._frozen = False

    @property
    def frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        """Move every object alive now out of the collector's reach (``gc.freeze``)."""
        if self._enabled and not self._frozen:
            gc.freeze()
            self._frozen = True

    def thaw(self) -> None:
        """Give the frozen objects back to the collector (``gc.unfreeze``)."""
        if self._frozen:
            gc.unfreeze()
            self._frozen = False

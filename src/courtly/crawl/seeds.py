"""The crawl's seeds, and the scope they make, the same in every process of a crawl.

A ``host`` or ``domain`` scope is made of the seeds' hosts or registered domains. The
seeds are kept in the store as a set (:meth:`~courtly.store.base.FrontierStore.add_seeds`):
each process adds its own before it queues them, and the scope is built from all of
them, so a crawl resumed with more seeds widens its scope, and a process joining a
shared (Redis) crawl with seeds of its own widens every other process's scope too. A
set in the store, not a list in a blob: two processes starting together each read the
blob, added their seeds and wrote it back, so one's seeds could be lost.

**Keeping a crawl's processes in step.** A URL is queued only by a process whose scope
held it, so a page that the scope of the process fetching it does not hold is one that
another process's seeds, or a seed's redirect, put in scope: before reading its links
(:meth:`SeedScope.check_page`) the process adds the page's site to its scope (a page at
depth 0 is a seed's redirect target: stored with the seeds too). That needs no store
read. On a shared store, a process also rebuilds its scope from the stored seeds when
their count changed, at a progress tick (:meth:`SeedScope.refresh`, one ``seed_count``
read when nothing changed), for links to another process's new sites found on pages of
the old ones; measured before this module: a process that joined a running crawl with
the seeds of a second site had 66 of that site's URLs skipped as ``out_of_scope`` by
the first process, and 2 of its pages fetched. A single process on its own store
widens nothing so: a page out of its scope there was queued under an older
configuration (a resume with a narrower scope), and its links are judged by the new one.

**Seeds' redirects.** The redirect target of a seed on the seed's registered domain is a
seed too (Heritrix's "seeds redirect new seeds"; :data:`courtly.crawl.links.MAX_REDIRECT_HOPS`):
its site joins the scope, and when that widened the scope it is stored with the seeds
(:meth:`SeedScope.add`), so ``http://example.org/`` answering with
``https://www.example.org/`` is crawled from there in a ``host`` scope.

Trade-off: between another process adding seeds and this one's next rebuild, a link to
the new seeds' sites from a page of the old ones is still judged with the old scope:
skipped, catalogued ``out_of_scope``, not marked seen, so it is queued when found again.

**Cost.** A rebuild reads every seed back and takes each one's site (its canonical
host, and for ``domain`` its registered domain): 3.2 microseconds a seed with a
``host`` scope, 8.2 with ``domain`` (200,000 seeds, memory store, a loaded 2-core
machine), so seconds for a crawl of a million. It runs in chunks of :data:`CHUNK` seeds with a turn
of the event loop between them, so the crawl goes on meanwhile (with the scope before);
one runs at a time, and the next waits until the last one's duration is at most
:data:`REBUILD_SHARE` of the time since it began, so seeds added often (a crawl of many
redirecting seeds) cannot keep a process rebuilding. A process that joins with seeds
already stored (every process started from one seed file) changes the count of none.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Sequence

from courtly.crawl.links import LinkAdmission
from courtly.errors import ConfigError, InvalidURL
from courtly.store.base import FrontierStore
from courtly.url import Scope

__all__ = ["CHUNK", "REBUILD_SHARE", "SeedScope"]

log = logging.getLogger(__name__)

CHUNK = 5_000
"""Seeds whose sites a rebuild takes between two turns of the event loop (about 0.1 s)."""
REBUILD_SHARE = 0.1
"""The most of a process's time scope rebuilds may take, paced by the last one's duration."""


class SeedScope:
    """The crawl's seeds in ``store`` and the scope of ``links`` built from them:
    ``build`` is :meth:`courtly.url.Scope.from_seeds` with the crawl's settings (called
    with one seed; the others' sites are added in chunks). ``others``: other processes
    queue URLs too (a shared store, or a partitioned crawl). ``clock``: seconds, for
    pacing rebuilds."""

    def __init__(
        self,
        store: FrontierStore,
        links: LinkAdmission,
        build: Callable[[Sequence[str]], Scope],
        *,
        others: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._links = links
        self._build = build
        self._others = others
        self._clock = clock
        self._built_from = 0
        """How many seeds the scope was last built from."""
        self._rebuilding = asyncio.Lock()
        self._next_rebuild_at = -math.inf

    async def start(self, given: Sequence[str], earlier: Sequence[str]) -> list[str]:
        """Store ``earlier`` (the seeds an older courtly kept in the configuration blob)
        and ``given``, build the scope from every stored seed, and return the seeds to
        queue: ``earlier``, ``given``, then the ones other processes stored (each once).
        An empty list (no seed anywhere) builds no scope."""
        await self._store.add_seeds([*earlier, *given])
        stored = await self._store.seeds()
        seeds = list(dict.fromkeys([*earlier, *given, *stored]))
        if seeds:
            await self._apply(seeds)
        return seeds

    async def refresh(self) -> bool:
        """Rebuild the scope if the store holds seeds it was not built from and the last
        rebuild's cost allows one now (:data:`REBUILD_SHARE`); whether it did. A call made
        while a rebuild runs waits for it, then looks again."""
        async with self._rebuilding:
            if self._clock() < self._next_rebuild_at:
                return False
            if await self._store.seed_count() == self._built_from:
                return False
            began = self._clock()
            seeds = await self._store.seeds()
            before = self._built_from
            await self._apply(seeds)
            took = self._clock() - began
            self._next_rebuild_at = began + took / REBUILD_SHARE
        log.info(
            "the crawl has %d seeds (%+d): scope rebuilt in %.2f s",
            len(seeds),
            len(seeds) - before,
            took,
        )
        return True

    async def check_page(self, url: str, depth: int) -> None:
        """Before reading the links of the page at ``url`` (at link ``depth``): if the
        scope does not hold it and another process queued it, add its site (a page at
        depth 0 is a seed's redirect target: stored as a seed too; see the module doc)."""
        scope = self._links.scope
        if scope is None or scope.check(url, 0) != "out_of_scope":
            return
        if depth == 0:
            await self.add(url)
        elif self._others:
            self._widen(url)

    async def add(self, url: str) -> None:
        """Store the seed ``url`` (a seed's redirect target) and add its site to the scope."""
        await self._store.add_seeds([url])
        self._widen(url)

    def _widen(self, url: str) -> None:
        scope = self._links.scope
        if scope is not None:
            with contextlib.suppress(InvalidURL):
                self._links.scope = scope.with_seed(url)

    async def _apply(self, seeds: Sequence[str]) -> None:
        """Build the scope of ``seeds`` (each was checked before it was stored; one that
        is not a crawlable URL is skipped, never a reason to stop a crawl)."""
        scope: Scope | None = None
        sites: set[str] = set()
        for start in range(0, len(seeds), CHUNK):
            if start:
                await asyncio.sleep(0)
            for seed in seeds[start : start + CHUNK]:
                try:
                    if scope is None:
                        scope = self._build((seed,))  # the crawl's mode, patterns, depth
                    site = scope.site_of(seed)
                except (InvalidURL, ConfigError):
                    continue
                if site is not None:
                    sites.add(site)
        if scope is not None:
            current = self._links.scope  # sites added since (pages of other processes') stay
            extra = current.sites if current is not None else frozenset()
            self._links.scope = scope.with_sites(sites | extra)
        self._built_from = len(seeds)

"""The crawl's seeds, and the scope they make, the same in every process of a crawl.

A ``host`` or ``domain`` scope is made of the seeds' hosts or registered domains. The
seeds are kept in the store as a set (:meth:`~courtly.store.base.FrontierStore.add_seeds`):
each process adds its own before it queues them, and the scope is built from all of
them, so a crawl resumed with more seeds widens its scope, and a process joining a
shared (Redis) crawl with seeds of its own widens every other process's scope too. A
set in the store, not a list in a blob: two processes starting together each read the
blob, added their seeds and wrote it back, so one's seeds could be lost.

**Keeping a shared crawl's processes in step.** A process of a shared crawl rebuilds
its scope when the store holds seeds it has not built it from: at every progress tick
(:meth:`SeedScope.refresh`, one ``seed_count`` read when nothing changed), and before
it reads the links of a page its scope says is out of scope (:meth:`SeedScope.check_page`):
a page gets into the frontier only through a process whose scope holds it, so such a
page is the sign that another process added seeds (reading its links with the old
scope would skip every link of the new seeds' sites as ``out_of_scope``; measured before
this module: a process that joined a running crawl with the seeds of a second site had
66 of that site's URLs skipped so by the first process, and 2 of its pages fetched).

**Seeds' redirects.** The redirect target of a seed is a seed too (for up to
:data:`courtly.crawl.links.MAX_REDIRECT_HOPS` hops, on the seed's registered domain:
Heritrix's "seeds redirect new seeds"): its site joins the scope, it is queued at depth 0
and stored with the seeds
(:meth:`SeedScope.add`), so ``http://example.org/`` answering with
``https://www.example.org/`` is crawled from there in a ``host`` scope or at
``--max-depth 0``. Another process or partition that fetches such a target finds a page
at depth 0 out of its scope, and takes it as a seed as well.

Trade-off: between another process adding seeds and this one's next tick, a link to
the new seeds' sites from a page of the old ones is still judged with the old scope:
skipped, catalogued ``out_of_scope``, not marked seen, so it is queued when found again.
Local partitions (``--processes N``) all start from the same seeds and need none of this.

**Cost.** A rebuild reads every seed back and takes each one's site (its canonical
host, and for ``domain`` its registered domain): about 20-30 microseconds a seed, so
seconds for a crawl of a million. It runs in chunks of :data:`CHUNK` seeds with a turn
of the event loop between them, so the crawl goes on meanwhile (with the scope before),
and one rebuild runs at a time. A process that joins with seeds already stored (every
process started from one seed file) changes the count of none, and makes no rebuild.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

from courtly.crawl.links import LinkAdmission
from courtly.errors import ConfigError, InvalidURL
from courtly.store.base import FrontierStore
from courtly.url import Scope

__all__ = ["CHUNK", "SeedScope"]

log = logging.getLogger(__name__)

CHUNK = 5_000
"""Seeds whose sites a rebuild takes between two turns of the event loop (about 0.1 s)."""


class SeedScope:
    """The crawl's seeds in ``store`` and the scope of ``links`` built from them:
    ``build`` is :meth:`courtly.url.Scope.from_seeds` with the crawl's settings (called
    with one seed; the others' sites are added in chunks)."""

    def __init__(
        self,
        store: FrontierStore,
        links: LinkAdmission,
        shared: bool,
        build: Callable[[Sequence[str]], Scope],
    ) -> None:
        self._store = store
        self._links = links
        self._shared = shared
        self._build = build
        self._built_from = 0
        """How many seeds the scope now in ``links`` was built from."""
        self._rebuilding = asyncio.Lock()

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
        """Rebuild the scope if the store holds seeds it was not built from; whether it
        did. A call made while a rebuild runs waits for it, then looks again."""
        async with self._rebuilding:
            if await self._store.seed_count() == self._built_from:
                return False
            seeds = await self._store.seeds()
            before = self._built_from
            await self._apply(seeds)
        log.info("the crawl has %d seeds (%+d): scope rebuilt", len(seeds), len(seeds) - before)
        return True

    async def check_page(self, url: str, depth: int) -> None:
        """Before reading the links of the page at ``url`` (at link ``depth``) that the
        scope does not hold: on a shared store, look for seeds another process added
        (see the module doc); a page at depth 0 is a seed's redirect target another
        process (or partition) made a seed, so it is a seed here too."""
        scope = self._links.scope
        if scope is None or scope.check(url, 0) != "out_of_scope":
            return
        if self._shared and await self.refresh():
            scope = self._links.scope
            if scope is None or scope.check(url, 0) != "out_of_scope":
                return
        if depth == 0:
            await self.add(url)

    async def add(self, url: str) -> None:
        """Store the seed ``url`` found by this process (a seed's redirect target) and add
        its site to the scope (if it is not there yet)."""
        await self._store.add_seeds([url])
        scope = self._links.scope
        if scope is not None:
            with contextlib.suppress(InvalidURL):
                site = scope.site_of(url)
                if site is not None and site not in scope.sites:
                    self._links.scope = scope.with_sites((site,))

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
            self._links.scope = scope.with_sites(sites)
        self._built_from = len(seeds)

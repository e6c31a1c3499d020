"""The crawl's seeds in the store and the scope they make, across processes of one crawl."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from courtly.crawl.links import LinkAdmission
from courtly.crawl.seeds import CHUNK, REBUILD_SHARE, SeedScope
from courtly.store.memory import MemoryStore
from courtly.url import DEFAULT_PARAMS, Scope


def _admission() -> LinkAdmission:
    return LinkAdmission(
        params=DEFAULT_PARAMS,
        host_key=lambda url: url.split("/")[2],
        levels=4,
        robots_token="courtly",
    )


def _process(
    store: MemoryStore, mode: str = "domain", *, shared: bool = True
) -> tuple[SeedScope, LinkAdmission]:
    """One crawl process's seed scope and link admission on the shared ``store``."""
    links = _admission()

    def build(seeds: Sequence[str]) -> Scope:
        return Scope.from_seeds(seeds, mode, exclude=[r"/private/"])  # type: ignore[arg-type]

    return SeedScope(store, links, build, others=shared), links


def _holds(links: LinkAdmission, url: str) -> bool:
    assert links.scope is not None
    return links.scope.check(url, 0) is None


async def test_a_process_widens_its_scope_to_the_seeds_another_one_added() -> None:
    store = MemoryStore()
    first, first_links = _process(store)
    second, second_links = _process(store)
    assert await first.start(["http://www.a.test/"], []) == ["http://www.a.test/"]
    # the second queues its own seeds first, then the ones stored before
    seeds = await second.start(["http://b.test/x"], [])
    assert seeds == ["http://b.test/x", "http://www.a.test/"]
    assert _holds(second_links, "http://shop.a.test/") and _holds(second_links, "http://b.test/")
    assert not _holds(first_links, "http://b.test/y")  # built before the second came
    # a page of the other's site (queued by the other): its site joins the scope at once
    await first.check_page("http://b.test/x", 1)
    assert _holds(first_links, "http://b.test/y") and _holds(first_links, "http://www.a.test/")
    assert not _holds(first_links, "http://b.test/private/1")  # the settings are kept
    assert await first.refresh() is True  # the count changed: rebuilt from both seeds
    assert await first.refresh() is False  # nothing new: one count read, no rebuild
    await store.add_seeds(["http://www.a.test/", "http://b.test/x"])
    assert await second.refresh() is False  # seeds given again change nothing


async def test_a_rebuild_waits_until_the_last_ones_cost_allows() -> None:
    """Rebuilds take at most REBUILD_SHARE of a process's time: after one that took
    1 s (on the injected clock), the next waits until 1 / REBUILD_SHARE s from its start."""
    now = [100.0]
    store = MemoryStore()
    links = _admission()

    def build(seeds: Sequence[str]) -> Scope:
        now[0] += 1.0  # each build takes 1 s
        return Scope.from_seeds(seeds, "host")

    process = SeedScope(store, links, build, others=True, clock=lambda: now[0])
    await process.start(["http://a.test/"], [])
    await store.add_seeds(["http://b.test/"])
    assert await process.refresh() is True  # began at 101, took 1 s
    await store.add_seeds(["http://c.test/"])
    now[0] = 101.0 + 1.0 / REBUILD_SHARE - 0.5
    assert await process.refresh() is False and not _holds(links, "http://c.test/")
    now[0] = 101.0 + 1.0 / REBUILD_SHARE
    assert await process.refresh() is True and _holds(links, "http://c.test/")


async def test_a_stored_seed_that_is_no_url_is_skipped() -> None:
    store = MemoryStore()
    process, links = _process(store, "host")
    await process.start(["http://a.test/"], [])
    await store.add_seeds(["not a url", "http://c.test/"])
    assert await process.refresh() is True
    assert _holds(links, "http://c.test/1") and not _holds(links, "http://www.c.test/")


async def test_a_rebuild_of_many_seeds_lets_the_crawl_run_meanwhile() -> None:
    """The sites are taken in chunks with a turn of the event loop between them."""
    store = MemoryStore()
    process, links = _process(store, "host")
    turns = 0
    done = asyncio.Event()

    async def other_work() -> None:
        nonlocal turns
        while not done.is_set():
            turns += 1
            await asyncio.sleep(0)

    seeds = [f"http://h{i}.test/" for i in range(2 * CHUNK + 1)]
    task = asyncio.create_task(other_work())
    await asyncio.sleep(0)
    await process.start(seeds, [])
    done.set()
    await task
    assert turns >= 3  # its first turn, and one after each of the first two chunks
    assert all(_holds(links, seed) for seed in seeds[:: CHUNK // 4])
    assert links.scope is not None and len(links.scope.sites) == len(seeds)


async def test_a_page_at_depth_0_out_of_scope_is_a_seed_another_process_found() -> None:
    """A seed's redirect target is a seed (depth 0): the partition or process that fetches
    it, without having seen the redirect, takes it as a seed too; a deeper page out of
    scope does not widen the scope."""
    store = MemoryStore()
    process, links = _process(store, "host", shared=False)
    await process.start(["http://a.test/"], [])
    await process.check_page("http://c.test/deep", 1)
    assert not _holds(links, "http://c.test/") and await store.seed_count() == 1
    await process.check_page("http://www.a.test/", 0)
    assert _holds(links, "http://www.a.test/p") and not _holds(links, "http://b.a.test/")
    assert sorted(await store.seeds()) == ["http://a.test/", "http://www.a.test/"]
    await process.check_page("http://www.a.test/", 0)  # in scope now: nothing more
    assert await store.seed_count() == 2

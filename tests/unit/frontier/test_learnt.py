"""The walk budgets and host quality a crawl keeps across a resume (courtly.frontier.learnt)."""

from __future__ import annotations

from courtly.frontier.importance import Importance
from courtly.frontier.learnt import BLOB, dump, load, load_learnt, save_learnt
from courtly.frontier.traps import WalkConfig, WalkGuard
from courtly.store.memory import MemoryStore
from tests.unit.frontier.test_traps import _walk

CONFIG = WalkConfig(max_chain=100, walk_from=2, max_walking=7)


async def test_a_resumed_crawl_keeps_its_walk_budget() -> None:
    store = MemoryStore()
    guard = WalkGuard(CONFIG)
    assert len(_walk(guard, "http://a.test/cal/0/", "http://a.test/cal/", 50)) == 2 + 7
    await save_learnt(store, guard, Importance())
    resumed = WalkGuard(CONFIG)
    assert await load_learnt(store, resumed, Importance())
    assert resumed.walking("http://a.test", "/cal/{n}/") == 7
    # a new entry into the same calendar: two hops, then the spent budget refuses it
    assert len(_walk(resumed, "http://a.test/cal/500/", "http://a.test/cal/5", 50)) == 2
    # without the blob the budget would start again
    fresh = WalkGuard(CONFIG)
    assert len(_walk(fresh, "http://a.test/cal/500/", "http://a.test/cal/5", 50)) == 2 + 7


async def test_host_quality_and_the_admitted_mean_survive() -> None:
    learnt = Importance()
    for i in range(16):
        learnt.rank(f"http://o{i}.test/", ["http://a.test/x"])
    before = learnt.signals("http://a.test/y", "a.test")
    resumed = Importance()
    assert load(dump(WalkGuard(), learnt), WalkGuard(), resumed)
    assert resumed.state() == learnt.state()
    after = resumed.signals("http://a.test/y", "a.test")
    assert after.host_quality == before.host_quality > 0


async def test_a_blob_of_another_shape_restores_nothing() -> None:
    store = MemoryStore()
    assert not await load_learnt(store, WalkGuard(), Importance())  # none saved
    await store.put_blob(*BLOB, b'{"version": 99}')
    assert not await load_learnt(store, WalkGuard(), Importance())
    assert not load(b"not json", WalkGuard(), Importance())

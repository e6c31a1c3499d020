"""The FrontierStore contract: one suite, every backend in ``tests.stores.STORE_FACTORIES``.

Each test drives a store directly (no facade) with plain values for time and
host state, so what is checked is the store's semantics: FIFO per host and
level, the order within a host (levels, the news lane, promotions), fencing,
expiry re-delivery at the head, dedup, budgets, retirement, the catalogue, blobs
and counts.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

import pytest

from courtly.archive.catalogue import CatalogueEntry
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import AddStatus, DelaySource, HostState, Lease, QueuedUrl
from courtly.store.base import FrontierStore, HeldHosts
from tests.stores import REDIS_STORE_FACTORIES, STORE_FACTORIES

T0 = 1_000.0
TTL_S = 30.0
NO_BUDGET = BudgetConfig(max_queued_per_host=None)

MakeStore = Callable[..., FrontierStore]


@pytest.fixture(params=sorted(STORE_FACTORIES) + sorted(REDIS_STORE_FACTORIES))
async def make(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MakeStore]:
    """Build stores of the parametrized backend (each in its own directory); closed after."""
    factory = {**STORE_FACTORIES, **REDIS_STORE_FACTORIES}[request.param]
    made: list[FrontierStore] = []

    def build(queues: QueueConfig | None = None, seed: int = 0) -> FrontierStore:
        directory = tmp_path / f"store{len(made)}"
        directory.mkdir()
        store = factory(directory, queues or QueueConfig(), random.Random(seed))
        made.append(store)
        return store

    yield build
    for store in made:
        await store.aclose()


def url(host: str, path: str, level: int = 0, depth: int = 0) -> QueuedUrl:
    return QueuedUrl(f"http://{host}/{path}", host, level, depth)


async def lease_one(store: FrontierStore, now_at: float = T0) -> Lease:
    batch = await store.lease(now_at, TTL_S, 1)
    assert len(batch.leases) == 1, batch
    return batch.leases[0]


async def done(store: FrontierStore, lease: Lease, now_at: float = T0, **changes: object) -> None:
    """Complete ``lease`` with the host ready again at ``now_at`` (plus ``changes``)."""
    state = replace(lease.host, next_allowed_at=now_at, **changes)  # type: ignore[arg-type]
    assert await store.complete(lease, state, (), now_at, NO_BUDGET) == []


async def drain(store: FrontierStore, now_at: float = T0) -> list[str]:
    """Lease and complete until empty; the URLs in the order served."""
    served: list[str] = []
    for _ in range(10_000):
        batch = await store.lease(now_at, TTL_S, 8)
        if not batch.leases:
            assert batch.next_ready_at is None, "hosts left waiting with no time passing"
            return served
        for lease in batch.leases:
            served.append(lease.url)
            await done(store, lease, now_at)
    raise AssertionError("drain did not end")


# -- FIFO and the two tiers ---------------------------------------------------------


async def test_fifo_within_a_host_and_level(make: MakeStore) -> None:
    store = make(QueueConfig(levels=3, max_back_queues=2))
    entries = [url(f"h{i % 3}.test", f"p{i}", level=i % 2) for i in range(30)]
    assert await store.add(entries, T0, NO_BUDGET) == [AddStatus.QUEUED] * 30
    served = await drain(store)
    assert sorted(served) == sorted(e.url for e in entries)
    for host in ("h0.test", "h1.test", "h2.test"):
        for level in (0, 1):
            expected = [e.url for e in entries if e.host_key == host and e.level == level]
            assert [u for u in served if u in expected] == expected


async def test_back_queues_are_bounded_and_every_url_comes_out(make: MakeStore) -> None:
    store = make(QueueConfig(levels=2, max_back_queues=3))
    entries = [url(f"h{i % 11}.test", f"p{i}", level=i % 2) for i in range(200)]
    await store.add(entries, T0, NO_BUDGET)
    counts = await store.counts(T0)
    assert counts.hosts_active == 0 and counts.front_queued == 200
    assert len((await store.lease(T0, TTL_S, 8)).leases) == 3
    counts = await store.counts(T0)
    assert counts.hosts_active == 3 and counts.leased == 3
    assert counts.queued + counts.leased == counts.front_queued + counts.back_queued + 3 == 200
    await store.aclose()
    store = make(QueueConfig(levels=2, max_back_queues=3))
    await store.add(entries, T0, NO_BUDGET)
    served = await drain(store)
    assert len(served) == len(set(served)) == 200
    counts = await store.counts(T0)
    assert (counts.queued, counts.leased, counts.hosts_active) == (0, 0, 0)


async def test_one_lease_per_host_and_next_allowed_time(make: MakeStore) -> None:
    store = make()
    await store.add([url("a.test", f"p{i}") for i in range(3)], T0, NO_BUDGET)
    first = await lease_one(store)
    again = await store.lease(T0, TTL_S, 5)
    assert again.leases == () and again.next_ready_at is None
    await done(store, first, T0 + 7.0)
    batch = await store.lease(T0 + 1.0, TTL_S, 5)
    assert batch.leases == () and batch.next_ready_at == T0 + 7.0
    second = await lease_one(store, T0 + 7.0)
    assert second.url == "http://a.test/p1" and second.token > first.token


async def test_low_levels_still_move(make: MakeStore) -> None:
    store = make(QueueConfig(levels=3, max_back_queues=1, max_skips=4))
    await store.add([url("low.test", "only", level=2)], T0, NO_BUDGET)
    served: list[str] = []
    for i in range(20):
        await store.add([url(f"u{i}.test", "x", level=0)], T0, NO_BUDGET)
        for lease in (await store.lease(T0, TTL_S, 1)).leases:
            served.append(lease.host_key)
            await done(store, lease)
    assert "low.test" in served


# -- leases: fencing, expiry, release -------------------------------------------------


async def test_fencing_rejects_stale_and_unknown_leases(make: MakeStore) -> None:
    store = make()
    await store.add([url("a.test", "1"), url("a.test", "2")], T0, NO_BUDGET)
    lease = await lease_one(store)
    forged = replace(lease, token=lease.token + 1000)
    assert await store.complete(forged, lease.host, (), T0, NO_BUDGET) is None
    assert await store.release(forged, None, T0) is False
    await done(store, lease)
    assert await store.complete(lease, lease.host, (), T0, NO_BUDGET) is None
    assert await store.release(lease, None, T0) is False
    counts = await store.counts(T0)
    assert counts.queued == 1 and counts.leased == 0


async def test_expired_lease_comes_back_at_the_head_and_is_fenced(make: MakeStore) -> None:
    store = make()
    await store.add([url("x.test", f"p{i}") for i in range(3)], T0, NO_BUDGET)
    lost = await lease_one(store)
    assert (await store.lease(T0 + TTL_S - 0.5, TTL_S, 1)).leases == ()
    again = await lease_one(store, T0 + TTL_S)
    assert again.url == lost.url and again.token > lost.token
    late = await store.complete(lost, lost.host, [url("x.test", "late")], T0 + TTL_S, NO_BUDGET)
    assert late is None
    counts = await store.counts(T0 + TTL_S)
    assert counts.queued == 2 and counts.leased == 1 and counts.seen == 3
    await done(store, again, T0 + TTL_S)
    assert await drain(store, T0 + TTL_S) == ["http://x.test/p1", "http://x.test/p2"]


async def test_leasing_ahead_runs_the_step_as_of_now_plus_ahead(make: MakeStore) -> None:
    store = make()
    await store.add([url("a.test", f"p{i}") for i in range(3)], T0, NO_BUDGET)
    first = await lease_one(store)
    held = replace(first.host, next_allowed_at=T0 + 1.0)
    assert await store.complete(first, held, (), T0, NO_BUDGET) == []
    early = await store.lease(T0 + 0.9, TTL_S, 1, ahead_s=0.05)
    assert early.leases == () and early.next_ready_at == pytest.approx(T0 + 1.0)
    assert (await store.lease(T0 + 0.96, TTL_S, 1)).leases == ()  # not due without ahead
    batch = await store.lease(T0 + 0.96, TTL_S, 1, ahead_s=0.05)
    assert [lease.url for lease in batch.leases] == ["http://a.test/p1"]
    ahead = batch.leases[0]
    # the lease is taken as of T0 + 1.01; its request waits for the host's own time
    assert ahead.host.next_allowed_at == pytest.approx(T0 + 1.0)
    assert ahead.leased_at == pytest.approx(T0 + 1.01)
    assert ahead.expires_at == pytest.approx(T0 + 1.01 + TTL_S)
    # an expiry that close is reclaimed too: the URL comes back at the head
    expiry = ahead.expires_at
    assert (await store.lease(expiry - 0.06, TTL_S, 1, ahead_s=0.05)).leases == ()
    again = await lease_one_ahead(store, expiry - 0.04, 0.05)
    assert again.url == ahead.url and again.token > ahead.token
    assert await store.complete(ahead, ahead.host, (), expiry, NO_BUDGET) is None  # fenced


async def test_a_lease_taken_less_far_ahead_than_the_last_hands_out_no_host_early(
    make: MakeStore,
) -> None:
    """Two callers leasing with different lease-aheads (the crawl 50 ms, the Scrapy add-on
    250 ms, on one shared store): a step as of ``now + 0.05`` after one as of ``now + 0.5``
    hands out no host due only between the two, neither one whose time came nor one whose
    expired lease the earlier step reclaimed (it was placed as of that step's time)."""
    store = make()
    await store.add([url("a.test", "p0"), url("b.test", "p0"), url("c.test", "p0")], T0, NO_BUDGET)
    batch = await store.lease(T0, TTL_S, 3)
    assert len(batch.leases) == 3
    by_host = {lease.host_key: lease for lease in batch.leases}
    await store.add([url("a.test", "p1"), url("b.test", "p1")], T0, NO_BUDGET)
    for key in ("a.test", "b.test"):
        done = by_host[key]
        state = replace(done.host, next_allowed_at=T0 + 1.2)
        assert await store.complete(done, state, (), T0, NO_BUDGET) == []
    c_lease = by_host["c.test"]
    await store.add([url("c.test", "p1")], T0, NO_BUDGET)
    # at T0 + 1.0: a.test and b.test are due by T0 + 1.5, c.test's lease (T0 + TTL) is not
    far = await store.lease(T0 + 1.0, TTL_S, 1, ahead_s=0.5)
    assert len(far.leases) == 1
    other = ({"a.test", "b.test"} - {far.leases[0].host_key}).pop()
    near = await store.lease(T0 + 1.0, TTL_S, 1, ahead_s=0.05)
    assert near.leases == (), f"{other} leased before its time, {near}"
    assert near.next_ready_at == pytest.approx(T0 + 1.2, abs=1e-4)
    # c.test's lease expires at T0 + TTL: a step as of T0 + TTL + 0.4 reclaims it, and a
    # later one as of T0 + TTL - 0.05 does not hand c.test out again (its lease still runs)
    expiry = c_lease.expires_at
    taken = await store.lease(expiry - 0.1, TTL_S, 1, ahead_s=0.5)
    hosts = {lease.host_key for lease in taken.leases}
    if "c.test" not in hosts:
        early = await store.lease(expiry - 0.1, TTL_S, 4, ahead_s=0.05)
        assert "c.test" not in {lease.host_key for lease in early.leases}, early
    again = await store.lease(expiry + 0.5, TTL_S, 4)
    assert "c.test" in hosts | {lease.host_key for lease in again.leases}


async def test_a_lease_hands_out_no_host_due_after_its_own_ahead(make: MakeStore) -> None:
    # callers that lease different distances ahead (a crawl 50 ms, the Scrapy add-on
    # 250 ms) share a store: a host a farther-ahead lease found due but did not hand out
    # is not due for a nearer one
    store = make(QueueConfig(max_back_queues=10))
    hosts = [f"h{i}.test" for i in range(3)]
    await store.add([url(h, f"p{i}") for h in hosts for i in range(2)], T0, NO_BUDGET)
    for lease in (await store.lease(T0, TTL_S, 3)).leases:
        held = replace(lease.host, next_allowed_at=T0 + 0.3)
        assert await store.complete(lease, held, (), T0, NO_BUDGET) == []
    assert len((await store.lease(T0, TTL_S, 1, ahead_s=0.5)).leases) == 1
    batch = await store.lease(T0, TTL_S, 3)
    assert batch.leases == () and batch.next_ready_at == pytest.approx(T0 + 0.3)
    assert len((await store.lease(T0 + 0.3, TTL_S, 3)).leases) == 2


async def lease_one_ahead(store: FrontierStore, now_at: float, ahead_s: float) -> Lease:
    batch = await store.lease(now_at, TTL_S, 1, ahead_s=ahead_s)
    assert len(batch.leases) == 1, batch
    return batch.leases[0]


async def test_release_returns_the_url_to_the_head_with_new_host_state(make: MakeStore) -> None:
    store = make()
    await store.add([url("r.test", f"p{i}") for i in range(3)], T0, NO_BUDGET)
    lease = await lease_one(store)
    state = replace(lease.host, next_allowed_at=T0 + 5.0, requests_made=1)
    assert await store.release(lease, state, T0)
    assert (await store.lease(T0, TTL_S, 1)).next_ready_at == T0 + 5.0
    again = await lease_one(store, T0 + 5.0)
    assert again.url == lease.url and again.host == state
    counts = await store.counts(T0 + 5.0)
    assert counts.requests_made == 1


async def test_a_failed_release_counts_an_attempt_on_that_url_only(make: MakeStore) -> None:
    store = make()
    foreign = QueuedUrl("http://www.f.test/x", "f.test", 0, 2)  # host key is not the authority
    await store.add([url("f.test", "p0", depth=1), url("f.test", "p1"), foreign], T0, NO_BUDGET)
    first = await lease_one(store)
    assert first.attempts == 0
    assert await store.release(first, None, T0, failed=True)
    again = await lease_one(store)
    assert (again.url, again.depth, again.attempts) == (first.url, 1, 1)
    assert await store.release(again, None, T0)  # a plain release counts nothing
    again = await lease_one(store)
    assert again.attempts == 1
    assert await store.release(again, None, T0, failed=True)
    expired = await lease_one(store)
    assert expired.attempts == 2
    reclaimed = await lease_one(store, T0 + TTL_S)  # an expired lease counts nothing
    assert (reclaimed.url, reclaimed.attempts) == (first.url, 2)
    assert await store.release(expired, None, T0 + TTL_S, failed=True) is False  # fenced
    await done(store, reclaimed, T0 + TTL_S)
    nxt = await lease_one(store, T0 + TTL_S)
    assert (nxt.url, nxt.attempts) == ("http://f.test/p1", 0)
    await done(store, nxt, T0 + TTL_S)
    last = await lease_one(store, T0 + TTL_S)
    assert await store.release(last, None, T0 + TTL_S, failed=True)
    last = await lease_one(store, T0 + TTL_S)
    assert (last.url, last.host_key, last.depth, last.attempts) == (foreign.url, "f.test", 2, 1)


async def test_a_failed_release_keeps_the_hosts_back_off(make: MakeStore) -> None:
    store = make()
    await store.add([url("b.test", "p0"), url("b.test", "p1")], T0, NO_BUDGET)
    lease = await lease_one(store)
    state = replace(lease.host, next_allowed_at=T0 + 5.0, error_streak=1, backoff_s=5.0)
    assert await store.release(lease, state, T0, failed=True)
    batch = await store.lease(T0 + 4.9, TTL_S, 1)
    assert batch.leases == () and batch.next_ready_at == T0 + 5.0
    again = await lease_one(store, T0 + 5.0)
    assert (again.url, again.attempts, again.host) == (lease.url, 1, state)


async def test_retired_host_drops_a_url_with_attempts(make: MakeStore) -> None:
    store = make()
    await store.add([url("d.test", "p0"), url("d.test", "p1")], T0, NO_BUDGET)
    lease = await lease_one(store)
    dead = replace(lease.host, retired="dead")
    assert await store.release(lease, dead, T0, failed=True)
    assert await drain(store) == []  # the front tier's URL is dropped when popped
    assert (await store.counts(T0)).queued == 0
    skipped = {e.url: e.skip_reason async for e in store.catalogue()}
    assert skipped == {u: "host_retired:dead" for u in ("http://d.test/p0", "http://d.test/p1")}


# -- dedup and budgets -------------------------------------------------------------------


async def test_dedup_within_and_across_batches(make: MakeStore) -> None:
    store = make()
    a, b = url("d.test", "a"), url("d.test", "b")
    assert await store.add([a, b, a], T0, NO_BUDGET) == [
        AddStatus.QUEUED,
        AddStatus.QUEUED,
        AddStatus.SEEN,
    ]
    lease = await lease_one(store)
    statuses = await store.complete(lease, lease.host, [a, url("d.test", "c")], T0, NO_BUDGET)
    assert statuses == [AddStatus.SEEN, AddStatus.QUEUED]
    assert (await store.counts(T0)).seen == 3


async def test_host_queue_budget_drops_without_marking_seen(make: MakeStore) -> None:
    store = make()
    budget = BudgetConfig(max_queued_per_host=2)
    entries = [url("big.test", str(i)) for i in range(3)]
    assert await store.add(entries, T0, budget) == [
        AddStatus.QUEUED,
        AddStatus.QUEUED,
        AddStatus.OVER_HOST_BUDGET,
    ]
    lease = await lease_one(store)
    # the leased URL no longer counts against the host's queue
    assert await store.add([entries[2]], T0, budget) == [AddStatus.QUEUED]
    assert await store.complete(lease, lease.host, [url("big.test", "3")], T0, budget) == [
        AddStatus.OVER_HOST_BUDGET
    ]


async def test_crawl_queue_budget(make: MakeStore) -> None:
    store = make()
    budget = BudgetConfig(max_queued=2)
    statuses = await store.add([url(f"h{i}.test", "x") for i in range(3)], T0, budget)
    assert statuses == [AddStatus.QUEUED, AddStatus.QUEUED, AddStatus.OVER_CRAWL_BUDGET]
    assert await store.add([url("h2.test", "x")], T0, NO_BUDGET) == [AddStatus.QUEUED]


async def test_retirement_drops_the_hosts_queue(make: MakeStore) -> None:
    store = make(QueueConfig(levels=1, max_back_queues=1))
    await store.add(
        [url("gone.test", "1"), url("gone.test", "2"), url("b.test", "1"), url("gone.test", "3")],
        T0,
        NO_BUDGET,
    )
    lease = await lease_one(store)
    assert lease.host_key == "gone.test"
    retired = replace(lease.host, retired="budget", requests_made=1)
    assert await store.complete(lease, retired, [url("gone.test", "4")], T0, NO_BUDGET) == [
        AddStatus.HOST_RETIRED
    ]
    assert (await store.host_state("gone.test")).retired == "budget"
    assert await store.add([url("gone.test", "5")], T0, NO_BUDGET) == [AddStatus.HOST_RETIRED]
    # the URL still in the front tier is dropped when it reaches a back queue
    assert await drain(store) == ["http://b.test/1"]
    counts = await store.counts(T0)
    assert counts.hosts_retired == 1 and counts.queued == 0 and counts.requests_made == 1


# -- catalogue, blobs, host state, counts -----------------------------------------------------


async def test_catalogue_replaces_and_keeps_first_written_order(make: MakeStore) -> None:
    store = make()
    first = CatalogueEntry("http://c.test/1", status=200, content_hash=2**64 - 1, simhash=5)
    second = CatalogueEntry("http://c.test/2", skip_reason="robots", noindex=True)
    await store.record([first, second])
    newer = replace(first, status=304, change_count=2, etag='"v2"', fetched_at=T0)
    await store.record([newer])
    assert [entry async for entry in store.catalogue()] == [newer, second]


async def test_a_refused_link_never_hides_a_fetched_page(make: MakeStore) -> None:
    # e.g. a link back to the home page from a page at --max-depth: refused by depth
    store = make()
    page = CatalogueEntry("http://c.test/", status=200, fetched_at=T0, referrer="http://s.test/")
    await store.record([page])
    refused = CatalogueEntry(
        "http://c.test/", depth=3, referrer="http://c.test/x", skip_reason="depth"
    )
    await store.record([refused])
    assert [entry async for entry in store.catalogue()] == [page]
    # a refusal of a URL never fetched is written, and a later failure replaces the page
    other = CatalogueEntry("http://c.test/y", depth=3, skip_reason="depth")
    failed = CatalogueEntry("http://c.test/", status=None, fail_reason="timeout")
    await store.record([other, failed])
    assert [entry async for entry in store.catalogue()] == [
        replace(failed, referrer="http://s.test/"),
        other,
    ]


async def test_completion_writes_records_and_a_fenced_one_writes_nothing(make: MakeStore) -> None:
    store = make()
    await store.add([url("w.test", "1")], T0, NO_BUDGET)
    lost = await lease_one(store)
    again = await lease_one(store, T0 + TTL_S)
    record = CatalogueEntry(lost.url, status=200, fetched_at=T0)
    late = await store.complete(lost, lost.host, (), T0 + TTL_S, NO_BUDGET, [record])
    assert late is None
    assert [entry async for entry in store.catalogue()] == []
    result = await store.complete(again, again.host, (), T0 + TTL_S, NO_BUDGET, [record])
    assert result == []
    assert [entry async for entry in store.catalogue()] == [record]


async def test_completion_catalogues_new_discoveries_and_the_first_referrer_stays(
    make: MakeStore,
) -> None:
    store = make()
    await store.add([url("d.test", "1")], T0, NO_BUDGET)
    lease = await lease_one(store)
    found = [url("d.test", "2", depth=1), url("e.test", "3", depth=1), url("d.test", "1")]
    statuses = await store.complete(lease, lease.host, found, T0, NO_BUDGET, ())
    assert statuses == [AddStatus.QUEUED, AddStatus.QUEUED, AddStatus.SEEN]
    assert [entry async for entry in store.catalogue()] == [
        CatalogueEntry("http://d.test/2", depth=1, referrer=lease.url),
        CatalogueEntry("http://e.test/3", depth=1, referrer=lease.url),
    ]
    # Fetched later: its page entry replaces the discovery row, but keeps the referrer.
    page = CatalogueEntry("http://d.test/2", status=200, fetched_at=T0, depth=1)
    await store.record([page])
    entries = [entry async for entry in store.catalogue()]
    assert entries[0] == replace(page, referrer=lease.url)


async def test_catalogue_iterates_many_entries(make: MakeStore) -> None:
    store = make()
    entries = [CatalogueEntry(f"http://m.test/{i}", status=200, depth=i % 5) for i in range(1500)]
    await store.record(entries)
    assert [entry async for entry in store.catalogue()] == entries


async def test_blobs(make: MakeStore) -> None:
    store = make()
    assert await store.get_blob("robots", "a.test") is None
    await store.put_blob("robots", "a.test", b"\x00\xffrules")
    await store.put_blob("config", "a.test", b"other")
    assert await store.get_blob("robots", "a.test") == b"\x00\xffrules"
    await store.put_blob("robots", "a.test", b"")
    assert await store.get_blob("robots", "a.test") == b""
    assert await store.get_blob("config", "a.test") == b"other"


async def test_blobs_in_batches(make: MakeStore) -> None:
    store = make()
    await store.put_blobs("p", [])
    assert await store.get_blobs("p", []) == []
    await store.put_blob("p", "a", b"old")
    await store.put_blobs("p", [("a", b"\x00one"), ("b", b"two"), ("b", b"")])
    await store.put_blob("q", "c", b"other namespace")
    assert await store.get_blobs("p", ["b", "missing", "a", "c"]) == [b"", None, b"\x00one", None]
    assert await store.get_blob("p", "a") == b"\x00one"


async def test_seeds_are_a_set_that_only_grows(make: MakeStore) -> None:
    store = make()
    assert await store.seeds() == [] and await store.seed_count() == 0
    await store.add_seeds([])
    await store.add_seeds(["http://a.test/", "http://b.test/x", "http://a.test/"])
    await store.add_seeds(["http://b.test/x", "http://c.test/"])
    await store.put_blob("crawl", "http://d.test/", b"")  # a blob is not a seed
    assert sorted(await store.seeds()) == ["http://a.test/", "http://b.test/x", "http://c.test/"]
    assert await store.seed_count() == 3


async def test_many_seeds_come_back_whole(make: MakeStore) -> None:
    """More seeds than one call of a store carries (Redis: 1,000 a call)."""
    store = make()
    seeds = [f"http://s{i}.test/" for i in range(2_500)]
    await store.add_seeds(seeds[:1_800])
    await store.add_seeds(seeds[1_000:])
    assert sorted(await store.seeds()) == sorted(seeds)
    assert await store.seed_count() == len(seeds)


async def test_host_state_is_fresh_then_stored(make: MakeStore) -> None:
    store = make()
    assert await store.host_state("new.test") == HostState("new.test")
    await store.add([url("s.test", "1")], T0, NO_BUDGET)
    lease = await lease_one(store)
    state = HostState("s.test", next_allowed_at=T0 + 3, last_fetch_s=0.5, crawl_delay_s=2.0)
    await store.complete(lease, state, (), T0, NO_BUDGET)
    assert await store.host_state("s.test") == state


@pytest.mark.parametrize("source", list(DelaySource))
async def test_every_host_state_field_round_trips(make: MakeStore, source: DelaySource) -> None:
    """Every field comes back, to the caller's process and to any other (a shared store):
    ``unanswered`` too, or a host that never answers would never be retired as dead when
    its requests are made by several fetchers (the SQLite store keeps it in memory: a
    resumed crawl counts it afresh)."""
    store = make()
    await store.add([url("r.test", "1"), url("r.test", "2")], T0, NO_BUDGET)
    lease = await lease_one(store)
    state = HostState(
        "r.test",
        next_allowed_at=T0 + 7.5,
        last_fetch_s=0.25,
        latency_baseline_s=0.2,
        backoff_s=4.0,
        error_streak=2,
        parks=1,
        requests_made=3,
        crawl_delay_s=1.5,
        delay_source=source,
        last_status=503,
        unanswered=2,
    )
    await store.complete(lease, state, (), T0, NO_BUDGET)
    assert await store.host_state("r.test") == state
    assert (await lease_one(store, T0 + 8)).host == state


async def test_counts(make: MakeStore) -> None:
    store = make(QueueConfig(levels=1, max_back_queues=2, inactive_after_s=10.0))
    await store.add([url(f"h{i}.test", f"p{j}") for i in range(3) for j in range(2)], T0, NO_BUDGET)
    counts = await store.counts(T0)
    assert (counts.queued, counts.front_queued, counts.back_queued) == (6, 6, 0)
    assert (counts.hosts_active, counts.hosts_ready, counts.hosts_held) == (0, 0, 0)
    assert counts.seen == 6 and counts.leased == 0
    first = await lease_one(store)  # h0 is taken in and leased at once: nothing more pops
    assert first.url == "http://h0.test/p0"
    counts = await store.counts(T0)
    assert (counts.queued, counts.front_queued, counts.hosts_active, counts.leased) == (5, 5, 1, 1)
    state = replace(first.host, next_allowed_at=T0 + 5, error_streak=1, requests_made=1)
    await store.complete(first, state, (), T0, NO_BUDGET)
    counts = await store.counts(T0)
    assert (counts.queued, counts.leased, counts.requests_made, counts.hosts_held) == (5, 0, 1, 0)
    # h0/p1 pops first: h0 waits 5 s (under the threshold) holding a slot; then h1 is leased
    held = await lease_one(store)
    assert held.url == "http://h1.test/p0"
    counts = await store.counts(T0)
    assert (counts.queued, counts.front_queued, counts.back_queued) == (4, 3, 1)
    assert (counts.hosts_active, counts.hosts_snoozed, counts.hosts_parked) == (2, 1, 1)
    # h1 must wait 60 s: it gives up its slot and keeps its URL
    parked = replace(held.host, next_allowed_at=T0 + 60, error_streak=1, requests_made=1)
    assert await store.release(held, parked, T0)
    counts = await store.counts(T0)
    assert (counts.queued, counts.hosts_active, counts.hosts_held) == (5, 1, 2)
    assert (counts.hosts_snoozed, counts.hosts_inactive, counts.hosts_parked) == (1, 1, 2)
    assert counts.hosts_ready == counts.hosts_inactive_due == 0
    # the free slot goes to a new host: h1/p1 joins h1's back queue, h2 is leased
    assert (await lease_one(store)).url == "http://h2.test/p0"
    counts = await store.counts(T0)
    assert (counts.front_queued, counts.back_queued, counts.hosts_active) == (1, 3, 2)
    assert (await store.counts(T0 + 60)).hosts_inactive_due == 1


# -- waiting hosts, demand, routing -----------------------------------------------------------


async def test_a_far_waiting_host_gives_up_its_slot_and_comes_back_when_due(
    make: MakeStore,
) -> None:
    store = make(QueueConfig(levels=1, max_back_queues=1, inactive_after_s=10.0))
    await store.add([url("park.test", "1")], T0, NO_BUDGET)
    await store.add([url(f"o{i}.test", "x") for i in range(3)], T0, NO_BUDGET)
    lease = await lease_one(store)
    assert lease.host_key == "park.test"
    await store.add([url("park.test", "2")], T0, NO_BUDGET)  # held: straight to its queue
    # parked for 60 s: the one slot goes free, park.test/2 stays queued with its host
    parked = replace(lease.host, next_allowed_at=T0 + 60, error_streak=1, requests_made=1)
    await store.complete(lease, parked, (), T0, NO_BUDGET)
    counts = await store.counts(T0)
    assert (counts.hosts_active, counts.hosts_inactive, counts.back_queued) == (0, 1, 1)
    others: list[str] = []
    for at in (T0, T0 + 1, T0 + 2):
        other = await lease_one(store, at)
        others.append(other.host_key)
        await done(store, other, at)
    assert others == ["o0.test", "o1.test", "o2.test"]
    batch = await store.lease(T0 + 3, TTL_S, 4)
    assert batch.leases == () and batch.next_ready_at == T0 + 60
    back = await lease_one(store, T0 + 60)
    assert back.url == "http://park.test/2" and back.host == parked


async def a_test_waits_until(store: FrontierStore, at: float) -> None:
    """Queue a.test/1 and b.test/1; lease a.test/1, queue a.test/2 (straight to a.test's
    back queue), and complete a.test/1 at T0 with a.test next allowed at ``at``."""
    await store.add([url("a.test", "1"), url("b.test", "1")], T0, NO_BUDGET)
    lease = await lease_one(store)
    assert lease.host_key == "a.test"
    await store.add([url("a.test", "2")], T0, NO_BUDGET)
    await store.complete(lease, replace(lease.host, next_allowed_at=at), (), T0, NO_BUDGET)


async def test_a_short_wait_keeps_the_slot(make: MakeStore) -> None:
    store = make(QueueConfig(levels=1, max_back_queues=1, inactive_after_s=10.0))
    await a_test_waits_until(store, T0 + 5)
    counts = await store.counts(T0)
    assert (counts.hosts_active, counts.hosts_snoozed, counts.hosts_inactive) == (1, 1, 0)
    # the slot is held: b.test is not taken in, and the wait is a.test's
    batch = await store.lease(T0, TTL_S, 4)
    assert batch.leases == () and batch.next_ready_at == T0 + 5


async def test_inactive_hosts_wait_for_a_free_slot(make: MakeStore) -> None:
    store = make(QueueConfig(levels=1, max_back_queues=1, inactive_after_s=1.0))
    await a_test_waits_until(store, T0 + 5)
    second = await lease_one(store)  # a.test is inactive until T0 + 5: b.test takes the slot
    assert second.host_key == "b.test"
    await store.add([url("b.test", "2")], T0, NO_BUDGET)
    counts = await store.counts(T0 + 5)
    assert counts.hosts_inactive_due == 1 and counts.hosts_active == 1
    # a.test is due but b.test holds the only slot: no wake time until b.test is done
    batch = await store.lease(T0 + 5, TTL_S, 4)
    assert batch.leases == () and batch.next_ready_at is None
    # b.test now waits 1 s from T0 + 5: under the threshold, it keeps the slot
    state = replace(second.host, next_allowed_at=T0 + 6)
    await store.complete(second, state, (), T0 + 5, NO_BUDGET)
    batch = await store.lease(T0 + 5, TTL_S, 4)
    assert batch.leases == () and batch.next_ready_at == T0 + 6
    last = await lease_one(store, T0 + 6)
    assert last.url == "http://b.test/2"
    assert (await store.lease(T0 + 6, TTL_S, 4)).leases == ()  # b.test holds the slot, leased
    await done(store, last, T0 + 6)
    # b.test's queue is empty now: its slot goes to a.test, due since T0 + 5
    assert (await lease_one(store, T0 + 6)).url == "http://a.test/2"


async def test_hosts_are_taken_in_on_demand(make: MakeStore) -> None:
    store = make(QueueConfig(levels=1, max_back_queues=100))
    await store.add([url(f"h{i}.test", "x") for i in range(50)], T0, NO_BUDGET)
    assert (await store.counts(T0)).hosts_held == 0
    assert len((await store.lease(T0, TTL_S, 4)).leases) == 4
    counts = await store.counts(T0)
    assert (counts.hosts_active, counts.hosts_held, counts.front_queued) == (4, 4, 46)
    assert len((await store.lease(T0, TTL_S, 30)).leases) == 30
    assert (await store.counts(T0)).hosts_active == 34


async def test_a_lease_scans_a_bounded_part_of_the_front_tier(make: MakeStore) -> None:
    store = make(QueueConfig(levels=1, max_back_queues=100, activation_scan=8))
    # every host is parked: each pop takes a host in, and it turns inactive at once
    await store.add([url(f"p{i}.test", "x") for i in range(20)], T0, NO_BUDGET)
    for _ in range(20):
        lease = await lease_one(store)
        await store.complete(
            lease, replace(lease.host, next_allowed_at=T0 + 600), (), T0, NO_BUDGET
        )
    await store.add([url(f"p{i}.test", "y") for i in range(20)], T0, NO_BUDGET)
    await store.add([url("ready.test", "x")], T0, NO_BUDGET)
    batch = await store.lease(T0, TTL_S, 1)
    # eight pops did not reach ready.test: the lease says "again, now"
    assert batch.leases == () and batch.next_ready_at == T0
    assert (await store.counts(T0)).front_queued == 21 - 8
    assert (await store.lease(T0, TTL_S, 1)).leases == ()
    assert (await lease_one(store)).host_key == "ready.test"


async def test_urls_of_a_held_host_go_straight_to_its_back_queue(make: MakeStore) -> None:
    store = make(QueueConfig(levels=2, max_back_queues=10))
    await store.add([url("a.test", "1")], T0, NO_BUDGET)
    await store.add([url(f"o{i}.test", "x", level=0) for i in range(30)], T0, NO_BUDGET)
    lease = await lease_one(store)
    assert lease.host_key == "a.test"
    # of the front tier's level: a ready host whose head is as good goes before the front
    # tier (a better level there would go first), so a.test is leased again below
    found = [url("a.test", "2", level=0), url("a.test", "3", level=0)]
    assert await store.complete(lease, lease.host, found, T0, NO_BUDGET) == [AddStatus.QUEUED] * 2
    counts = await store.counts(T0)
    assert (counts.front_queued, counts.back_queued) == (30, 2)
    # ... and a parked host's too
    again = await lease_one(store)
    parked = replace(again.host, next_allowed_at=T0 + 600, error_streak=1)
    await store.complete(again, parked, [url("a.test", "4", level=0)], T0, NO_BUDGET)
    counts = await store.counts(T0)
    assert (counts.front_queued, counts.back_queued, counts.hosts_inactive) == (30, 2, 1)
    served = await drain(store, T0 + 600)
    assert [u for u in served if "a.test" in u] == ["http://a.test/3", "http://a.test/4"]


async def test_retired_hosts_urls_are_catalogued_with_the_reason(make: MakeStore) -> None:
    store = make(QueueConfig(levels=1, max_back_queues=4))
    await store.add([url("dead.test", str(i), depth=i) for i in range(3)], T0, NO_BUDGET)
    lease = await lease_one(store)
    await store.add([url("dead.test", "3", depth=1)], T0, NO_BUDGET)  # straight to its queue
    found = [url("dead.test", "4", depth=1)]
    retired = replace(lease.host, retired="dead", requests_made=1)
    assert await store.complete(lease, retired, found, T0, NO_BUDGET) == [AddStatus.HOST_RETIRED]
    assert await drain(store) == []
    skipped = {e.url: (e.skip_reason, e.depth) async for e in store.catalogue()}
    assert skipped == {
        f"http://dead.test/{i}": ("host_retired:dead", depth)
        for i, depth in ((1, 1), (2, 2), (3, 1))
    }
    counts = await store.counts(T0)
    assert (counts.queued, counts.hosts_retired, counts.hosts_held) == (0, 1, 0)


# -- revisits (recrawl) -----------------------------------------------------------------------


async def test_a_known_url_is_queued_again_by_revisit_not_by_add(make: MakeStore) -> None:
    store = make(QueueConfig(levels=2))
    page = url("a.test", "page", level=1)
    assert await store.add([page], T0, NO_BUDGET) == [AddStatus.QUEUED]
    assert await drain(store) == ["http://a.test/page"]
    assert await store.add([page], T0, NO_BUDGET) == [AddStatus.SEEN]
    assert await store.revisit([page], T0 + 10, NO_BUDGET) == [AddStatus.QUEUED]
    assert (await store.counts(T0 + 10)).queued == 1
    assert await drain(store, T0 + 10) == ["http://a.test/page"]
    # revisited once per due time: served once, the queue is empty again
    assert (await store.counts(T0 + 10)).queued == 0


async def test_revisit_keeps_budgets_and_retirement_and_marks_unknown_urls_seen(
    make: MakeStore,
) -> None:
    store = make(QueueConfig(levels=1))
    budget = BudgetConfig(max_queued_per_host=1)
    statuses = await store.revisit([url("b.test", "1"), url("b.test", "2")], T0, budget)
    assert statuses == [AddStatus.QUEUED, AddStatus.OVER_HOST_BUDGET]
    assert await store.add([url("b.test", "1")], T0, NO_BUDGET) == [AddStatus.SEEN]
    lease = await lease_one(store)
    retired = replace(lease.host, retired="dead")
    assert await store.complete(lease, retired, (), T0, NO_BUDGET) == []
    assert await store.revisit([url("b.test", "1")], T0, NO_BUDGET) == [AddStatus.HOST_RETIRED]


# -- order within a host: levels, the news lane, promotion ------------------------------------


async def _held(store: FrontierStore, host: str) -> Lease:
    """Lease ``host``'s seed so that the host is held; the seed stays leased."""
    assert await store.add([url(host, "seed")], T0, NO_BUDGET) == [AddStatus.QUEUED]
    lease = await lease_one(store)
    assert lease.url == f"http://{host}/seed"
    return lease


async def test_a_host_serves_its_better_levels_first(make: MakeStore) -> None:
    store = make(QueueConfig(levels=3))
    seed = await _held(store, "a.test")
    found = [url("a.test", f"p{i}", level=level) for i, level in enumerate((2, 0, 1, 0, 2, 1))]
    assert await store.complete(seed, seed.host, found, T0, NO_BUDGET) == [AddStatus.QUEUED] * 6
    served = await drain(store)
    assert served == [f"http://a.test/p{i}" for i in (1, 3, 2, 5, 0, 4)]


async def test_the_ready_host_with_the_best_head_is_leased_first(make: MakeStore) -> None:
    store = make(QueueConfig(levels=3, max_back_queues=10))
    await store.add([url(h, "x", level=2) for h in ("a.test", "b.test", "c.test")], T0, NO_BUDGET)
    batch = await store.lease(T0, TTL_S, 3)
    assert sorted(lease.host_key for lease in batch.leases) == ["a.test", "b.test", "c.test"]
    found = {"a.test": 2, "b.test": 0, "c.test": 1}
    for lease in batch.leases:  # each host ready again at T0 + 1, b first in time
        level = found[lease.host_key]
        at = T0 + (0.5 if lease.host_key == "b.test" else 1.0)
        state = replace(lease.host, next_allowed_at=at)
        await store.complete(lease, state, [url(lease.host_key, "y", level=level)], T0, NO_BUDGET)
    # at T0 + 1 all three are due: by head rank (level 0, 1, 2), whatever their times
    served = [lease.host_key for lease in (await store.lease(T0 + 1, TTL_S, 3)).leases]
    assert served == ["b.test", "c.test", "a.test"]


async def test_a_better_level_in_the_front_tier_goes_before_ready_hosts(
    make: MakeStore,
) -> None:
    store = make(QueueConfig(levels=3, max_back_queues=10))
    await store.add([url("a.test", "x", level=2), url("a.test", "y", level=2)], T0, NO_BUDGET)
    first = await lease_one(store)
    await done(store, first, T0)
    # a.test is ready with a level-2 head; a new host's level-0 URL waits in the front
    await store.add([url("seed.test", "x", level=0), url("late.test", "x", level=2)], T0, NO_BUDGET)
    served = [lease.host_key for lease in (await store.lease(T0, TTL_S, 3)).leases]
    assert served[0] == "seed.test"
    assert sorted(served[1:]) == ["a.test", "late.test"]


async def test_a_news_revisit_goes_first_in_its_host(make: MakeStore) -> None:
    # every store, Redis included: its back queues are FIFO except for the news lane
    store = make(QueueConfig(levels=3))
    seed = await _held(store, "a.test")
    found = [url("a.test", f"p{i}", level=0) for i in range(3)]
    await store.complete(seed, seed.host, found, T0, NO_BUDGET)
    news = url("a.test", "seed", level=0)  # fetched before: due again, in the news lane
    ordinary = url("a.test", "old", level=1)
    assert await store.revisit([ordinary, news], T0, NO_BUDGET) == [AddStatus.QUEUED] * 2
    served = await drain(store)
    assert served[0] == news.url
    assert served[1:] == [*(f"http://a.test/p{i}" for i in range(3)), ordinary.url]


async def test_a_news_revisit_goes_behind_the_leased_head_and_earlier_news(
    make: MakeStore,
) -> None:
    store = make(QueueConfig(levels=3))
    seed = await _held(store, "a.test")
    found = [url("a.test", f"p{i}", level=1) for i in range(3)]
    await store.complete(seed, seed.host, found, T0, NO_BUDGET)
    leased = await lease_one(store)
    assert leased.url == "http://a.test/p0"
    first, second = url("a.test", "seed", level=0), url("a.test", "hub", level=0)
    assert await store.revisit([first], T0, NO_BUDGET) == [AddStatus.QUEUED]
    assert await store.revisit([second], T0, NO_BUDGET) == [AddStatus.QUEUED]
    await done(store, leased)  # the leased URL leaves, and no other
    served = await drain(store)
    assert served == [first.url, second.url, "http://a.test/p1", "http://a.test/p2"]


async def test_a_news_revisit_through_the_front_tier_goes_first_in_its_host(
    make: MakeStore,
) -> None:
    # a.test is held while some of its URLs wait in the front tier: the news URL joins
    # them there, and goes first when it reaches the host's back queue
    store = make(QueueConfig(levels=1))
    pages = [url("a.test", f"p{i}") for i in range(3)]
    assert await store.add(pages, T0, NO_BUDGET) == [AddStatus.QUEUED] * 3
    leased = await lease_one(store)
    assert leased.url == "http://a.test/p0"
    news = url("a.test", "seed", level=0)
    assert await store.revisit([news], T0, NO_BUDGET) == [AddStatus.QUEUED]
    later = replace(leased.host, next_allowed_at=T0 + 1)
    assert await store.complete(leased, later, (), T0, NO_BUDGET) == []
    # not allowed yet: a lease takes the host in again from the front tier, all three
    assert (await store.lease(T0, TTL_S, 1)).leases == ()
    served = await drain(store, T0 + 1)
    assert served == [news.url, "http://a.test/p1", "http://a.test/p2"]


async def _a_queue(make: MakeStore, pages: int, *more: QueuedUrl) -> FrontierStore:
    """A store of 3 levels where a.test is held, its seed fetched with p0..p{pages-1}
    found on it at level 2, then ``more``."""
    store = make(QueueConfig(levels=3))
    seed = await _held(store, "a.test")
    found = [url("a.test", f"p{i}", level=2) for i in range(pages)] + list(more)
    await store.complete(seed, seed.host, found, T0, NO_BUDGET)
    return store


async def test_promote_moves_a_queued_url_to_the_tail_of_its_new_level(make: MakeStore) -> None:
    store = await _a_queue(make, 5, url("a.test", "q", level=1))
    moved = await store.promote(
        [url("a.test", "p4", level=1), url("a.test", "p2", level=1), url("a.test", "p3", 0)], T0
    )
    assert moved == [True, True, True]
    # not moved: already as good, or asked to go down
    assert await store.promote([url("a.test", "q", 1), url("a.test", "p0", 2)], T0) == [False] * 2
    counts = await store.counts(T0)
    assert counts.queued == 6
    served = await drain(store)
    assert served == [f"http://a.test/{p}" for p in ("p3", "q", "p4", "p2", "p0", "p1")]


async def test_promote_never_queues_a_leased_fetched_or_unknown_url(make: MakeStore) -> None:
    store = await _a_queue(make, 3)
    leased = await lease_one(store)
    assert leased.url == "http://a.test/p0"
    asked = [
        url("a.test", "p0", level=0),  # leased
        url("a.test", "seed", level=0),  # fetched
        url("a.test", "never", level=0),  # unknown
        url("b.test", "x", level=0),  # unknown host
    ]
    assert await store.promote(asked, T0) == [False] * 4
    counts = await store.counts(T0)
    assert (counts.queued, counts.leased) == (2, 1)
    await done(store, leased)
    assert await drain(store) == ["http://a.test/p1", "http://a.test/p2"]
    assert (await store.counts(T0)).queued == 0


async def test_a_lifted_link_seen_before_is_promoted_by_complete(make: MakeStore) -> None:
    store = await _a_queue(make, 3)
    page = await lease_one(store)
    again = [
        replace(url("a.test", "p2", level=1), lift=True),
        url("a.test", "p1", level=0),  # seen, not lifted: stays where it is
    ]
    assert await store.complete(page, page.host, again, T0, NO_BUDGET) == [AddStatus.SEEN] * 2
    assert await drain(store) == ["http://a.test/p2", "http://a.test/p1"]


async def test_a_better_url_never_displaces_a_leased_head(make: MakeStore) -> None:
    store = await _a_queue(make, 3)
    leased = await lease_one(store)
    assert leased.url == "http://a.test/p0"
    # while p0 is leased: a better URL arrives, another is promoted past it
    assert await store.add([url("a.test", "q", level=0)], T0, NO_BUDGET) == [AddStatus.QUEUED]
    assert await store.promote([url("a.test", "p2", level=1)], T0) == [True]
    await done(store, leased)  # removes p0, the URL leased, not the better head
    assert await drain(store) == [f"http://a.test/{p}" for p in ("q", "p2", "p1")]
    assert (await store.counts(T0)).queued == 0


async def test_a_released_url_goes_back_to_the_head_of_its_level(make: MakeStore) -> None:
    store = await _a_queue(make, 2)
    leased = await lease_one(store)
    await store.add([url("a.test", "q", level=1)], T0, NO_BUDGET)
    assert await store.release(leased, None, T0, failed=True)
    # q arrived while p0 was leased: it goes first, p0 keeps the head of level 2
    served = []
    for _ in range(3):
        lease = await lease_one(store)
        served.append((lease.url, lease.attempts))
        await done(store, lease)
    assert served == [("http://a.test/q", 0), ("http://a.test/p0", 1), ("http://a.test/p1", 0)]


async def test_a_lifted_link_added_again_is_promoted_by_add(make: MakeStore) -> None:
    store = await _a_queue(make, 3)
    lifted = replace(url("a.test", "p1", level=1), lift=True)
    assert await store.add([lifted], T0, NO_BUDGET) == [AddStatus.SEEN]
    assert await drain(store) == [f"http://a.test/{p}" for p in ("p1", "p0", "p2")]


async def test_a_url_in_the_front_tier_takes_its_promotion_into_its_back_queue(
    make: MakeStore,
) -> None:
    store = make(QueueConfig(levels=3, max_back_queues=3))
    # b.test is not held: its URLs wait in the front tier until a lease takes them in
    first = await _held(store, "a.test")
    waiting = [url("b.test", f"p{i}", 2) for i in range(3)]
    await store.add(waiting, T0, NO_BUDGET)
    assert (await store.counts(T0)).front_queued == 3
    assert await store.promote([url("b.test", "p2", level=0)], T0) == [False]
    await done(store, first)
    assert await drain(store) == [f"http://b.test/{p}" for p in ("p0", "p2", "p1")]


async def test_a_host_is_held_while_it_has_a_url_in_line_or_a_lease_out(make: MakeStore) -> None:
    store = make()
    if not isinstance(store, HeldHosts):
        pytest.skip("the store does not say which hosts it holds (optional)")
    assert not store.holds("a.test")
    await store.add([url("a.test", "1")], T0, NO_BUDGET)
    lease = await lease_one(store)
    assert store.holds("a.test")  # leased
    await store.add([url("a.test", "2")], T0, NO_BUDGET)  # held: straight to its back queue
    await done(store, lease)
    assert store.holds("a.test")  # back in line with its second URL
    await done(store, await lease_one(store))
    assert not store.holds("a.test")  # its queue ran empty: let go
    # taken in from the front tier one URL at a time: the rest waits there, and a host
    # whose back queue ran empty is let go although a URL of it waits in the front tier
    await store.add([url("b.test", "1"), url("b.test", "2")], T0, NO_BUDGET)
    await done(store, await lease_one(store))
    assert not store.holds("b.test")
    assert (await lease_one(store)).url == "http://b.test/2"
    assert store.holds("b.test")

"""The Redis store beyond the contract suite: the server's clock, many shards, several
fetchers on one crawl, the scalable Bloom seen-set, and a 3-master Redis Cluster.

The contract suite (tests/contract) runs the same semantics with one shard and the
caller's fake clock; here the store runs as a crawl runs it: ``TIME`` on the server
is the clock (short real delays), hosts spread over many shards.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from tests.redis_servers import (
    RedisCluster,
    cluster_url,
    delete_crawl,
    have_redis_server,
    new_crawl_name,
    standalone_url,
    start_standalone,
    stop_server,
)
from tests.stores import DisposableRedisStore

from courtly.archive.catalogue import CatalogueEntry
from courtly.clock import SystemClock
from courtly.crawl.dispatch import wait_until
from courtly.errors import CrawlFailed
from courtly.fetch.ip_gate import GateClosed
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import AddStatus, Lease, QueuedUrl
from courtly.store.redis import RedisLayout, RedisStore
from courtly.store.redis.address import connect
from courtly.store.redis.affinity import MEMBER_REFRESH_S, owned_shards
from courtly.store.redis.codec import shard_of
from courtly.store.redis.scripts import SHARD_SCRIPTS, script_text

pytestmark = pytest.mark.skipif(not have_redis_server(), reason="redis-server is not installed")

NO_BUDGET = BudgetConfig(max_queued_per_host=None)
CLOCK_SLACK_S = 0.005
"""Rounding of server times to whole milliseconds, with room to spare."""


@pytest.fixture(params=["standalone", "cluster"])
def server_url(request: pytest.FixtureRequest) -> str:
    """Standalone Redis, or the tests' 3-master cluster (started once, on first use)."""
    return cluster_url() if request.param == "cluster" else standalone_url()


@pytest.fixture
async def crawl(server_url: str) -> AsyncIterator[tuple[str, str]]:
    """A crawl name on the server; its keys are deleted afterwards."""
    name = new_crawl_name("it")
    yield server_url, name
    client = connect(server_url)
    try:
        await delete_crawl(client, name)
    finally:
        await client.aclose()


def fetcher(
    crawl: tuple[str, str],
    shards: int = 16,
    queues: QueueConfig | None = None,
    seed: int = 0,
    **options: Any,
) -> RedisStore:
    """One fetcher's store on the crawl (server clock, as in a crawl); ``options`` go to
    :class:`RedisStore` (a probe on every lease unless they say otherwise)."""
    url, name = crawl
    return RedisStore(
        connect(url),
        name,
        queues or QueueConfig(max_back_queues=64),
        layout=RedisLayout(shards=shards),
        rng=random.Random(seed),
        **{"probe_interval_s": 0.0, **options},
    )


def urls(hosts: int, per_host: int) -> list[QueuedUrl]:
    return [
        QueuedUrl(f"http://h{h}.test/p{i}", f"h{h}.test", i % 2)
        for i in range(per_host)
        for h in range(hosts)
    ]


async def drain(stores: list[RedisStore], now: float) -> list[Lease]:
    """Lease and complete from every store in turn until the crawl is empty."""
    served: list[Lease] = []
    for _ in range(2000):
        batches = await asyncio.gather(*(store.lease(now, 30.0, 4) for store in stores))
        if not any(batch.leases for batch in batches):
            counts = await stores[0].counts(now)
            if counts.queued == 0 and counts.leased == 0:
                return served
            continue
        for store, batch in zip(stores, batches, strict=True):
            served.extend(await complete_all(store, batch.leases, now))
    raise AssertionError("the crawl did not drain")


async def complete_all(store: RedisStore, leases: Sequence[Lease], now: float) -> list[Lease]:
    """Complete each of ``leases`` with nothing found (the host free again at once)."""
    for lease in leases:
        state = replace(lease.host, next_allowed_at=0.0)
        assert await store.complete(lease, state, (), now, NO_BUDGET) == []
    return list(leases)


async def test_the_server_clock_drives_delays_and_expiry(crawl: tuple[str, str]) -> None:
    store = fetcher(crawl)
    try:
        now = 5_000.0  # the caller's clock: anything; only differences reach the server
        await store.add(
            [QueuedUrl(f"http://h0.test/p{i}", "h0.test", 0) for i in range(3)], now, NO_BUDGET
        )
        first = (await store.lease(now, 0.3, 1)).leases[0]
        assert first.url == "http://h0.test/p0"
        assert first.expires_at == pytest.approx(now + 0.3)
        # the lease is void after 0.3 s of server time, whatever the caller's clock says
        assert (await store.lease(now + 100.0, 0.3, 1)).leases == ()
        await asyncio.sleep(0.45)
        again = (await store.lease(now, 0.3, 1)).leases
        assert [lease.url for lease in again] == [first.url] and again[0].token > first.token
        assert await store.complete(first, first.host, (), now, NO_BUDGET) is None
        # a host held back 0.3 s from now comes back after 0.3 s of server time
        held = replace(again[0].host, next_allowed_at=now + 0.3)
        began = time.monotonic()
        assert await store.complete(again[0], held, (), now, NO_BUDGET) == []
        batch = await store.lease(now, 30.0, 1)
        between_s = time.monotonic() - began
        assert batch.leases == ()
        assert batch.next_ready_at is not None and now < batch.next_ready_at <= now + 0.3
        stored = await store.host_state("h0.test")
        # Read on the caller's clock as of the last call (the lease), the hold has run down
        # by the server time between the complete and that lease: at most between_s.
        low, high = now + 0.3 - between_s - CLOCK_SLACK_S, now + 0.3 + CLOCK_SLACK_S
        assert low <= stored.next_allowed_at <= high, (stored.next_allowed_at, between_s)
        await asyncio.sleep(0.35)
        assert [lease.url for lease in (await store.lease(now, 30.0, 1)).leases] == [
            "http://h0.test/p1"
        ]
    finally:
        await store.aclose()


class SlowLeaseStore(RedisStore):
    """A store whose LEASE calls leave a while after the caller's ``now_at`` was read
    (a busy loop, a queue of calls before it): the server's now is then that much later
    than ``now_at``."""

    SEND_DELAY_S = 0.1

    async def _run(self, name: str, keys: list[str], argv: list[Any], first: bool = False) -> Any:
        if name == "lease":
            await asyncio.sleep(self.SEND_DELAY_S)
        return await super()._run(name, keys, argv, first)


async def _server_ms(client: Any) -> float:
    seconds, micros = await client.time()
    return float(seconds * 1000 + micros / 1000)


async def test_a_host_leased_ahead_is_not_fetched_before_its_time_on_the_servers_clock(
    crawl: tuple[str, str],
) -> None:
    url, name = crawl
    store = SlowLeaseStore(connect(url), name, layout=RedisLayout(shards=16))
    client = connect(url)
    ahead_s = 1.0
    try:
        now = time.time()
        await store.add(
            [QueuedUrl(f"http://h0.test/p{i}", "h0.test", 0) for i in range(2)], now, NO_BUDGET
        )
        first = (await store.lease(now, 30.0, 1)).leases[0]
        held = replace(first.host, next_allowed_at=time.time() + 1.5)
        assert await store.complete(first, held, (), time.time(), NO_BUDGET) == []
        prefix = store._shard_prefix(shard_of("h0.test", store.layout.shards))
        allowed_ms = float(await client.hget(prefix + "hn", "h0.test"))
        # once the server's now is within ahead_s of the host's time, a lease ahead takes it
        within_ms = allowed_ms - 1000.0 * ahead_s + 100.0
        await SystemClock().sleep(max(0.0, within_ms - await _server_ms(client)) / 1000.0)
        assert await _server_ms(client) >= within_ms  # one machine: the server's clock is ours
        early = await store.lease(time.time(), 30.0, 1)
        if await _server_ms(client) < allowed_ms:  # not due yet when it came back
            assert early.leases == ()
        else:  # (a machine that stalled for the whole window: nothing shown)
            pytest.skip("the host came due before the lease ahead could be made")
        batch = await store.lease(time.time(), 30.0, 1, ahead_s=ahead_s)
        assert [lease.url for lease in batch.leases] == ["http://h0.test/p1"]
        lease = batch.leases[0]
        # mapped no later than ahead_s from the reply (1 ms: time.time against monotonic)
        assert lease.host.next_allowed_at <= time.time() + ahead_s + 0.001
        # ... and no earlier than the host's time on the server's clock, although the
        # call left SEND_DELAY_S after its now_at was read
        await wait_until(SystemClock(), lease.host.next_allowed_at)
        assert await _server_ms(client) >= allowed_ms
    finally:
        await store.aclose()
        await client.aclose()


async def test_two_fetchers_share_one_crawl_over_many_shards(crawl: tuple[str, str]) -> None:
    stores = [fetcher(crawl, seed=1), fetcher(crawl, seed=2)]
    try:
        entries = urls(40, 5)
        assert {shard_of(e.host_key, 16) for e in entries} == set(range(16))
        # seeds given twice (by both fetchers) are harmless
        await stores[0].add(entries, 0.0, NO_BUDGET)
        assert await stores[1].add(entries, 0.0, NO_BUDGET) == [AddStatus.SEEN] * len(entries)
        served = await drain(stores, 0.0)
        assert sorted(lease.url for lease in served) == sorted(e.url for e in entries)
        for host in {e.host_key for e in entries}:
            for level in (0, 1):
                expected = [e.url for e in entries if e.host_key == host and e.level == level]
                got = [lease.url for lease in served if lease.url in expected]
                assert got == expected
        assert len({lease.token for lease in served}) == len(served)
        counts = await stores[1].counts(0.0)
        assert (counts.queued, counts.leased, counts.seen) == (0, 0, len(entries))
    finally:
        for store in stores:
            await store.aclose()


async def test_a_lease_visits_the_shards_with_the_best_heads_first(
    crawl: tuple[str, str],
) -> None:
    # level-2 pages on hosts of every shard, and two level-0 pages (seeds) in two shards:
    # each shard offers its best (head rank, time) with every reply, and a lease of one
    # host visits the shard with the best offer, not a due shard at random
    store = fetcher(crawl)
    try:
        hosts = [f"d{i}.test" for i in range(64)]
        seeds: list[str] = []
        for host in hosts:
            if len(seeds) < 2 and all(shard_of(host, 16) != shard_of(s, 16) for s in seeds):
                seeds.append(host)
        pages = [QueuedUrl(f"http://{h}/p", h, 2, 1) for h in hosts if h not in seeds]
        found = [QueuedUrl(f"http://{h}/", h, 0, 0) for h in seeds]
        await store.add(pages + found, 0.0, NO_BUDGET)
        first = [(await store.lease(0.0, 30.0, 1)).leases for _ in range(2)]
        assert sorted(lease.host_key for leases in first for lease in leases) == sorted(seeds)
    finally:
        await store.aclose()


@pytest.mark.parametrize("server_url", ["standalone"], indirect=True)  # the batcher's
@pytest.mark.parametrize("overlap_s", [5.0, 0.0])
async def test_a_lease_soon_after_an_index_read_is_one_round_trip(
    crawl: tuple[str, str], overlap_s: float
) -> None:
    """A fetcher leasing continuously sends its LEASE calls (to the last index read's due
    shards) and the next INDEX in one pipeline; with ``index_overlap_s`` 0 the INDEX goes
    first, then the LEASE calls: two round trips. The leases are the same kind either way."""
    store = fetcher(
        crawl,
        index_interval_s=0.0,  # no cache: every lease reads the index
        index_overlap_s=overlap_s,
        probe_interval_s=math.inf,
    )
    try:
        await store.add(urls(40, 2), 0.0, NO_BUDGET)
        first = await store.lease(0.0, 30.0, 4)
        batcher = store._batcher  # standalone: every call goes through it, one round a trip
        assert batcher is not None and first.leases  # each shard visited gives its due hosts
        before = batcher.sent_rounds
        second = await store.lease(0.0, 30.0, 4)
        assert batcher.sent_rounds - before == (1 if overlap_s else 2)
        assert second.leases
        hosts = [lease.host_key for lease in (*first.leases, *second.leases)]
        assert len(set(hosts)) == len(hosts)  # one lease per host, as ever
    finally:
        await store.aclose()


async def test_a_lease_beside_an_index_read_says_when_its_shards_come_due(
    crawl: tuple[str, str],
) -> None:
    """A lease that finds nothing in the last read's due shards, while a fresh read goes
    out beside it, takes those shards' next times from its own LEASE replies: the read
    may not carry those calls' updates yet, and said "now" for a shard with nothing
    before 0.3 s (the caller asked again at once, for nothing; the contract's
    ``test_a_lease_hands_out_no_host_due_after_its_own_ahead`` failed so when the machine
    was slow enough to miss the 25 ms due cache)."""
    store = fetcher(
        crawl,
        shards=1,
        index_interval_s=0.0,  # no cache: each lease within 0.5 s of a read goes beside one
        probe_interval_s=math.inf,
        server_clock=False,
    )
    t0 = 1_000.0
    try:
        await store.add(urls(3, 2), t0, NO_BUDGET)
        for lease in (await store.lease(t0, 30.0, 3)).leases:
            held = replace(lease.host, next_allowed_at=t0 + 0.3)
            assert await store.complete(lease, held, (), t0, NO_BUDGET) == []
        assert len((await store.lease(t0, 30.0, 1, ahead_s=0.5)).leases) == 1
        batch = await store.lease(t0, 30.0, 3)
        assert batch.leases == () and batch.next_ready_at == pytest.approx(t0 + 0.3)
    finally:
        await store.aclose()


async def test_one_lease_per_host_across_fetchers(crawl: tuple[str, str]) -> None:
    stores = [fetcher(crawl, seed=s) for s in range(3)]
    try:
        await stores[0].add(urls(2, 6), 0.0, NO_BUDGET)
        batches = await asyncio.gather(*(store.lease(0.0, 30.0, 8) for store in stores))
        leased = [lease.host_key for batch in batches for lease in batch.leases]
        assert sorted(leased) == ["h0.test", "h1.test"]
    finally:
        for store in stores:
            await store.aclose()


async def _members(*stores: RedisStore) -> None:
    """Each store renews its membership, twice round, so that every one knows the rest."""
    for _ in range(2):
        for store in stores:
            await store.open()
            await store._heartbeat(leaving=False)


def _draw_until_the_leaver_hands_over_hosts(
    stores: Sequence[RedisStore], entries: Sequence[QueuedUrl]
) -> None:
    """Draw the third store's id again until the split is one the test can read: the
    first store owns shards with hosts, and the third one's leaving hands it at least one
    more shard with hosts. With random ids alone, 5.3% of draws (20,000 tried) handed every
    shard of the leaver to the second store (rendezvous hashing: each goes to whichever
    of the two ranks higher), and the first one's split did not grow."""
    with_hosts = {shard_of(e.host_key, 16) for e in entries}
    for _ in range(1_000):
        first, second, third = (store._caller for store in stores)
        before = owned_shards(first, [second, third], 16)
        after = owned_shards(first, [second], 16)
        if before & with_hosts and (after - before) & with_hosts:
            return
        stores[2]._caller = uuid.uuid4().hex[:16]
    raise AssertionError("no draw of ids hands the first store a shard")


async def _lease_all(store: RedisStore, now: float) -> list[Lease]:
    """Lease and complete from ``store`` alone until three steps in a row come back empty."""
    got: list[Lease] = []
    empty = 0
    while empty < 3:
        leases = (await store.lease(now, 30.0, 16)).leases
        empty = 0 if leases else empty + 1
        got.extend(await complete_all(store, leases, now))
    return got


async def test_each_fetcher_leases_its_own_shards_and_leaves_the_others_to_their_owners(
    crawl: tuple[str, str],
) -> None:
    stores = [fetcher(crawl, seed=s, affinity_grace_s=60.0) for s in range(2)]
    try:
        entries = urls(64, 1)
        await stores[0].add(entries, 0.0, NO_BUDGET)
        await _members(*stores)
        owned = [store._mine or frozenset() for store in stores]  # None: every shard
        assert owned[0] | owned[1] == frozenset(range(16)) and not owned[0] & owned[1]
        for store, mine in zip(stores, owned, strict=True):
            got = await _lease_all(store, 0.0)  # the other has not leased: its hosts wait
            assert got and {shard_of(lease.host_key, 16) for lease in got} <= mine
            expected = {e.host_key for e in entries if shard_of(e.host_key, 16) in mine}
            assert {lease.host_key for lease in got} == expected
    finally:
        for store in stores:
            await store.aclose()


async def test_a_fetcher_takes_the_shards_of_one_that_left_or_fell_behind(
    crawl: tuple[str, str],
) -> None:
    grace_s = 3.0  # long enough for the first fetcher to serve its own hosts under load
    # No probe: a probe (a LEASE on another's shard, asking for nothing) takes that
    # shard's hosts in from its front tier, due from then, so the others' hosts' grace
    # would run from whenever a probe reached their shard over the steps below; on a
    # loaded machine that put all of them 40-190 ms past the sleep below (seen in the
    # offers). Without probes every one of them is due from the add.
    stores = [
        fetcher(crawl, seed=s, affinity_grace_s=grace_s, probe_interval_s=math.inf)
        for s in range(3)
    ]
    try:
        entries = urls(64, 1)
        _draw_until_the_leaver_hands_over_hosts(stores, entries)
        await stores[0].add(entries, 0.0, NO_BUDGET)
        await _members(*stores)
        mine = stores[0]._mine
        assert mine is not None
        own = await _lease_all(stores[0], 0.0)
        assert own and all(shard_of(lease.host_key, 16) in mine for lease in own)
        # the others' hosts came due at the add: none now, each once it waited the grace
        idle = await stores[0].lease(0.0, 30.0, 4)
        assert not idle.leases
        assert idle.next_ready_at is not None and 0.0 < idle.next_ready_at <= grace_s
        live = {store._caller for store in stores}
        assert set(await stores[0].fetchers()) == live
        await stores[2].aclose()  # leaves the crawl: its shards are the others' at once
        assert set(await stores[0].fetchers()) == live - {stores[2]._caller}
        await stores[0]._heartbeat(leaving=False)
        assert stores[0]._mine is not None and stores[0]._mine > mine
        taken = await _lease_all(stores[0], 0.0)
        assert taken and all(shard_of(lease.host_key, 16) in stores[0]._mine for lease in taken)
        await asyncio.sleep(idle.next_ready_at + 0.1)  # then the one left behind's hosts
        late = await _lease_all(stores[0], 0.0)
        assert late and all(shard_of(lease.host_key, 16) not in stores[0]._mine for lease in late)
        # (a host taken in from its shard's front tier is due from then: it waits again)
        await stores[1].aclose()
        await stores[0]._heartbeat(leaving=False)
        assert stores[0]._mine is None  # alone: every shard
        rest = await _lease_all(stores[0], 0.0)
        got = [lease.host_key for lease in (*own, *taken, *late, *rest)]
        assert sorted(got) == sorted(e.host_key for e in entries)
    finally:
        for store in stores:
            await store.aclose()  # a second close does nothing


async def test_a_fetcher_without_affinity_still_says_it_is_live(crawl: tuple[str, str]) -> None:
    store = fetcher(crawl, affinity_grace_s=0.0)
    try:
        await store.add(urls(4, 1), 0.0, NO_BUDGET)
        assert (await store.lease(0.0, 30.0, 4)).leases
        assert await store.fetchers() == [store._caller]
        assert store._mine is None  # every shard its own
    finally:
        await store.aclose()


async def test_a_crawl_whose_keys_are_gone_fails_with_a_message_at_the_next_heartbeat(
    crawl: tuple[str, str],
) -> None:
    """The server lost the crawl (restarted without persistence, flushed, evicted): the
    next heartbeat (a lease at least MEMBER_REFRESH_S after the last) raises CrawlFailed
    that says so, instead of the fetcher going on with an empty frontier; the store
    still closes quietly. Before, the crawl went on idle, then ended as if done."""
    store = fetcher(crawl)
    try:
        await store.add(urls(4, 2), 0.0, NO_BUDGET)
        assert (await store.lease(0.0, 30.0, 4)).leases
        url, name = crawl
        client = connect(url)
        try:
            await delete_crawl(client, name)
        finally:
            await client.aclose()
        await asyncio.sleep(MEMBER_REFRESH_S + 0.05)
        with pytest.raises(CrawlFailed, match=f"the Redis store lost crawl {name!r}"):
            await store.lease(0.0, 30.0, 4)
    finally:
        await store.aclose()


async def test_discoveries_in_other_shards_are_fenced_with_the_lease(
    crawl: tuple[str, str],
) -> None:
    store = fetcher(crawl)
    try:
        await store.add([QueuedUrl("http://a.test/", "a.test", 0)], 0.0, NO_BUDGET)
        lease = (await store.lease(0.0, 0.2, 1)).leases[0]
        found = [QueuedUrl(f"http://f{i}.test/x", f"f{i}.test", 1, 1) for i in range(12)]
        assert len({shard_of(e.host_key, 16) for e in found}) > 1
        await asyncio.sleep(0.3)  # the lease expires and the next lease reclaims it
        again = (await store.lease(0.0, 30.0, 1)).leases[0]
        assert again.url == lease.url
        assert await store.complete(lease, lease.host, found, 0.0, NO_BUDGET) is None
        assert (await store.counts(0.0)).seen == 1  # the late completion added nothing
        record = CatalogueEntry(again.url, status=200, fetched_at=1.0)
        statuses = await store.complete(again, again.host, found, 0.0, NO_BUDGET, [record])
        assert statuses == [AddStatus.QUEUED] * 12
        catalogue = [entry async for entry in store.catalogue()]
        assert sorted(entry.url for entry in catalogue) == sorted(
            [again.url, *(e.url for e in found)]
        )
        assert {entry.referrer for entry in catalogue if entry.url != again.url} == {again.url}
    finally:
        await store.aclose()


async def test_a_lifted_link_from_another_shard_promotes_its_url(crawl: tuple[str, str]) -> None:
    store = fetcher(crawl)
    try:
        b = "b.test"
        a = next(f"a{i}.test" for i in range(99) if shard_of(f"a{i}.test", 16) != shard_of(b, 16))
        seeds = [QueuedUrl(f"http://{h}/", h, 0) for h in (a, b)]
        await store.add(seeds, 0.0, NO_BUDGET)
        leases: dict[str, Lease] = {}
        for _ in range(50):  # a lease visits one due shard of the two
            if len(leases) == 2:
                break
            leases |= {lease.host_key: lease for lease in (await store.lease(0.0, 30.0, 2)).leases}
        assert sorted(leases) == sorted((a, b))
        pages = [QueuedUrl(f"http://{b}/p{i}", b, 2, 1) for i in range(3)]
        first = leases[b]
        assert (
            await store.complete(first, first.host, pages, 0.0, NO_BUDGET) == [AddStatus.QUEUED] * 3
        )
        # a page of the other shard links p2 again, and that in-link lifts it to level 0
        lifted = replace(pages[2], level=0, depth=1, lift=True)
        other = leases[a]
        assert await store.complete(other, other.host, [lifted], 0.0, NO_BUDGET) == [AddStatus.SEEN]
        served = [lease.url for lease in await drain([store], 0.0)]
        assert served == [f"http://{b}/p{i}" for i in (2, 0, 1)]
    finally:
        await store.aclose()


async def test_the_bloom_seen_set_grows_layers_and_keeps_its_error_bound() -> None:
    layout = RedisLayout(shards=1, bloom_capacity=200, bloom_error=0.01)
    store = DisposableRedisStore(
        connect(standalone_url()), new_crawl_name("bloom"), layout=layout, server_clock=False
    )
    try:
        added = [QueuedUrl(f"http://b.test/{i}", "b.test", 0) for i in range(3000)]
        statuses = await store.add(added, 0.0, NO_BUDGET)
        false_dups = statuses.count(AddStatus.SEEN)
        # the rates of the layers sum below bloom_error: 3000 new URLs, expect < 30 false
        assert false_dups < 30
        assert await store.add(added, 0.0, NO_BUDGET) == [AddStatus.SEEN] * 3000
        counts = await store.counts(0.0)
        assert counts.seen == 3000 - false_dups
        meta = await store._client.hgetall(store._shard_prefix(0) + "m")
        assert int(meta[b"bl"]) == 4  # 200 + 400 + 800 + 1600 >= 3000
    finally:
        await store.aclose()


async def test_blobs_are_shared_between_fetchers(crawl: tuple[str, str]) -> None:
    one, two = fetcher(crawl), fetcher(crawl)
    try:
        await one.put_blob("robots", "http://a.test/robots.txt", b"\x00rules")
        assert await two.get_blob("robots", "http://a.test/robots.txt") == b"\x00rules"
        assert await two.get_blob("robots", "http://b.test/robots.txt") is None
    finally:
        await one.aclose()
        await two.aclose()


async def test_the_first_fetcher_fixes_the_layout(crawl: tuple[str, str]) -> None:
    first, later = fetcher(crawl, shards=16), fetcher(crawl, shards=4)
    try:
        await first.open()
        await later.open()
        assert later.layout.shards == 16
    finally:
        await first.aclose()
        await later.aclose()


async def test_the_ip_gate_caps_an_address_across_fetchers(crawl: tuple[str, str]) -> None:
    one, two = fetcher(crawl), fetcher(crawl)
    try:
        gates = [one.ip_gate(2, hold_s=5.0), two.ip_gate(2, hold_s=5.0)]
        held = 0
        peak = 0

        async def request(gate_index: int) -> None:
            nonlocal held, peak
            async with gates[gate_index].hold("127.0.0.9"):
                held += 1
                peak = max(peak, held)
                await asyncio.sleep(0.01)
                held -= 1

        await asyncio.gather(*(request(i % 2) for i in range(24)))
        assert peak == 2
        # a slot whose holder died frees itself after hold_s
        dead = one.ip_gate(1, hold_s=0.3)
        await dead.hold("127.0.0.10").__aenter__()  # never left: its process "died"
        alive = two.ip_gate(1, hold_s=0.3)
        async with asyncio.timeout(3.0), alive.hold("127.0.0.10"):
            pass
    finally:
        await one.aclose()
        await two.aclose()


async def test_the_ip_gate_hands_a_busy_address_to_the_processes_in_turn(
    crawl: tuple[str, str],
) -> None:
    """Two processes that both want an address's one place take it in turn: a process
    giving the place back does not take it again while the other waits."""
    one, two = fetcher(crawl), fetcher(crawl)
    try:
        gates = {"one": one.ip_gate(1, hold_s=30.0), "two": two.ip_gate(1, hold_s=30.0)}
        holders: list[str] = []

        async def request(name: str) -> None:
            async with gates[name].hold("127.0.0.13"):
                holders.append(name)
                await asyncio.sleep(0.01)

        await asyncio.gather(*(request(name) for _ in range(12) for name in gates))
        assert sorted(holders) == ["one"] * 12 + ["two"] * 12
        # From the first time both have held the place until one of them has no request
        # left (the tail run), the place goes to the other process after each exchange.
        start = max(holders.index("one"), holders.index("two"))
        end = len(holders) - 1
        while holders[end - 1] == holders[-1]:
            end -= 1
        turns = holders[start:end]
        assert all(a != b for a, b in itertools.pairwise(turns)), holders
        assert len(turns) >= 16, holders  # at most a few at the start and at the end
        client = connect(crawl[0])
        try:
            key = f"{crawl[1]}:ip:127.0.0.13"
            assert await client.zcard(f"{crawl[1]}:ipq:{{{key}}}") == 0  # no turn left over
        finally:
            await client.aclose()
    finally:
        await one.aclose()
        await two.aclose()


async def test_closing_the_ip_gate_ends_its_waits_without_taking_a_slot(
    crawl: tuple[str, str],
) -> None:
    """A closed gate's waits end with GateClosed, taking no slot: its owner does not rely
    on cancelling them (a cancellation can be lost in a store call on Python 3.11)."""
    store = fetcher(crawl)
    try:
        gate = store.ip_gate(1, hold_s=30.0)
        async with gate.hold("127.0.0.11"):
            waits = [asyncio.create_task(_enter(gate, "127.0.0.11")) for _ in range(3)]
            await asyncio.sleep(0.05)  # each waits: the first polls, the others in turn
            assert not any(wait.done() for wait in waits)
            gate.close()
            async with asyncio.timeout(5.0):  # a guard against a hang, not a timing
                results = await asyncio.gather(*waits, return_exceptions=True)
            assert all(isinstance(result, GateClosed) for result in results)
        client = connect(crawl[0])
        try:
            assert await client.zcard(f"{crawl[1]}:ip:127.0.0.11") == 0
        finally:
            await client.aclose()
        with pytest.raises(GateClosed):
            await _enter(gate, "127.0.0.12")  # a new wait after close ends at once
    finally:
        await store.aclose()


async def _enter(gate: Any, ip: str) -> None:
    async with gate.hold(ip):
        pass


async def test_the_store_rides_out_a_master_failover_and_with_replica_acks_loses_no_step() -> None:
    """SIGKILL the master of a shard mid-crawl: its replica takes over, the store's calls
    retry until it has, and every URL is still served. With ``replica_acks=1`` every
    step was on the replica before the store returned it, so none is lost: no URL is
    served twice (without, a lease or a completion the dead master acknowledged but
    had not replicated would be: tests/integration/test_redis_cluster_crawl.py)."""
    cluster = RedisCluster().start(masters=3, replicas=1)
    crawl = (cluster.url, new_crawl_name("failover"))
    store = RedisStore(
        connect(cluster.url),
        crawl[1],
        QueueConfig(max_back_queues=64),
        layout=RedisLayout(shards=16),
        rng=random.Random(0),
        probe_interval_s=0.0,
        replica_acks=1,
        replica_wait_s=1.0,  # acks come within ms; the promoted master has no replica
    )
    try:
        entries = urls(24, 6)
        await store.add(entries, 0.0, NO_BUDGET)
        victim_shard = shard_of("h0.test", 16)
        node = store._client.get_node_from_key(store._shard_prefix(victim_shard) + "m")
        served: list[str] = []
        killed_at: float | None = None
        resumed_after_s: float | None = None
        loop = asyncio.get_running_loop()
        for _ in range(3000):
            batch = await store.lease(0.0, 2.0, 4)
            if killed_at is not None and resumed_after_s is None and batch.leases:
                resumed_after_s = loop.time() - killed_at
            for lease in batch.leases:
                served.append(lease.url)
                state = replace(lease.host, next_allowed_at=0.0)
                await store.complete(lease, state, (), 0.0, NO_BUDGET)
            if killed_at is None and len(served) >= 30:
                cluster.kill(node.port)  # between steps: each one is on the replica
                killed_at = loop.time()
            if not batch.leases:
                counts = await store.counts(0.0)
                if counts.queued == 0 and counts.leased == 0:
                    break
                await asyncio.sleep(0.05)
        assert killed_at is not None
        assert sorted(served) == sorted(e.url for e in entries)  # each once
        print(f"failover: served again {resumed_after_s:.1f} s after the kill")
    finally:
        await store.aclose()
        cluster.stop()


class LosingReplies:
    """A Redis client whose shard script calls named in ``lose`` run on the server and then
    fail as a dropped connection does (``ConnectionError``), once each: the reply is lost
    after the step was made. The cluster client sends the same call again by itself in
    that case (its connections are closed under calls in flight each time it refreshes
    its slot map, as it does every few MOVED replies of a reshard), and so does the store."""

    def __init__(self, client: Any, lose: set[str]) -> None:
        self._client = client
        self.lose = lose
        self.lost: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def register_script(self, text: str) -> Any:
        script = self._client.register_script(text)
        name = next((n for n in SHARD_SCRIPTS if script_text(n) == text), None)

        async def call(**kwargs: Any) -> Any:
            raw = await script(**kwargs)
            if name in self.lose and raw != [b"moving"]:
                self.lose.discard(name)
                self.lost.append(name)
                raise RedisConnectionError("Connection closed by server.")
            return raw

        return call


async def test_a_step_sent_again_after_its_reply_was_lost_answers_as_the_first_time(
    crawl: tuple[str, str],
) -> None:
    """ADD, LEASE, COMPLETE and RELEASE whose replies are lost and that are sent again
    return what their first run did: a URL queued is reported queued (not seen), a lease
    made is the lease returned (not a second one, nor a host left leased), a completion
    made is not reported fenced."""
    url, name = crawl
    client = LosingReplies(connect(url), set())
    store = RedisStore(
        client,
        name,
        QueueConfig(max_back_queues=64),
        layout=RedisLayout(shards=4),
        rng=random.Random(0),
        probe_interval_s=0.0,
    )
    try:
        entries = [QueuedUrl(f"http://h{h}.test/a", f"h{h}.test", 0) for h in range(2)]
        client.lose = {"add"}
        assert await store.add(entries, 0.0, NO_BUDGET) == [AddStatus.QUEUED] * 2
        client.lose = {"lease"}
        leases: list[Lease] = []
        for _ in range(20):  # the due index may name one shard at a time
            leases.extend((await store.lease(0.0, 30.0, 2)).leases)
            if len(leases) == 2:
                break
        assert sorted(lease.url for lease in leases) == sorted(e.url for e in entries)
        first, second = leases
        found = [QueuedUrl(f"{first.url}x", first.host_key, 0, 1)]  # same host: own shard
        client.lose = {"complete"}
        state = replace(first.host, next_allowed_at=0.0)
        assert await store.complete(first, state, found, 0.0, NO_BUDGET) == [AddStatus.QUEUED]
        client.lose = {"release"}
        assert await store.release(second, replace(second.host, next_allowed_at=0.0), 0.0)
        assert client.lost == ["add", "lease", "complete", "release"]
        rest: list[Lease] = []
        for _ in range(20):
            batch = (await store.lease(0.0, 30.0, 2)).leases
            rest.extend(batch)
            for lease in batch:
                state = replace(lease.host, next_allowed_at=0.0)
                assert await store.complete(lease, state, (), 0.0, NO_BUDGET) == []
            counts = await store.counts(0.0)
            if counts.queued == 0 and counts.leased == 0:
                break
        assert sorted(lease.url for lease in rest) == sorted([found[0].url, second.url])
    finally:
        await store.aclose()


async def test_an_add_reads_each_hosts_rows_and_the_seen_sets_counts_once() -> None:
    """A page's links are mostly its own host's: one ADD (or COMPLETE) of many URLs of a
    host reads the host's rows (retired, leased, queued, held) and the Bloom filter's
    layer counts once, and writes the counts once, not once a URL (the Redis server runs
    every script on one thread: its time per discovered URL bounds the crawl's pages/s).
    Counted with the server's own command statistics, on a server of this test's own."""
    url, server = start_standalone()
    client = connect(url)
    store = RedisStore(client, new_crawl_name(), QueueConfig(), layout=RedisLayout(shards=1))
    try:
        now = 1_000.0
        await store.add([QueuedUrl("http://h0.test/", "h0.test", 0)], now, NO_BUDGET)
        lease = (await store.lease(now, 30.0, 1)).leases[0]
        found = [QueuedUrl(f"http://h0.test/p{i}", "h0.test", 1) for i in range(60)]
        await client.config_resetstat()
        statuses = await store.complete(lease, lease.host, found, now, NO_BUDGET)
        assert statuses == [AddStatus.QUEUED] * 60
        again = await store.add(found, now, NO_BUDGET)
        assert again == [AddStatus.SEEN] * 60
        calls = {
            name.removeprefix("cmdstat_"): stat["calls"]
            for name, stat in (await client.info("commandstats")).items()
        }
        # once a URL before: HGET 4 (hq, bl, the layer count, its insert count), HEXISTS 2,
        # HINCRBY 4 a new URL (hq, bl, the insert count, the seen total)
        assert calls.get("hget", 0) < 30
        assert calls.get("hexists", 0) < 10
        assert calls.get("hincrby", 0) < 10
        counts = await store.counts(now)
        assert counts.queued == 60 and counts.seen == 61  # the page itself was completed
    finally:
        await client.aclose()
        stop_server(server)

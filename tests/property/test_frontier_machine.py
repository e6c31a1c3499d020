"""Hypothesis stateful test: the frontier's invariants under arbitrary interleavings.

A model tracks, independently of the store, which URLs were added, which are
leased, and when each host may next be served (computed with the pure policy).
Checked after every step:

* never two live leases on one host;
* no lease before the host's next allowed time;
* every added URL is leased exactly once (re-delivery only after its lease
  expired) or recognised as seen; a final drain leases every queued URL;
* FIFO within a host and level (a URL promoted in its back queue arrives at its new
  level when promoted; one promoted while its host has URLs in the front tier may
  move when it reaches its back queue, so its place is not checked);
* across hosts (ageing among due hosts off), one lease batch hands out heads of
  non-decreasing level: a ready host
  with a better head goes first, and a front-tier URL of a better level than every
  ready head is taken in before them (the news lane and hinted URLs aside, whose rank
  the front tier does not show; every store, Redis per shard: the machine runs it with
  one shard);
* a promotion never queues a URL: a leased, fetched or unknown URL is left alone,
  and a promoted URL is still leased exactly once;
* an expired lease returns its URL to the head of its queue and its late
  completion is fenced;
* a host whose next allowed time is more than ``inactive_after_s`` away holds
  no back-queue slot, and at most ``max_back_queues`` hosts hold one;
* a lease that hands out fewer hosts than asked for leaves no ready host
  behind: with a slot free, every host with URLs waiting must still wait out
  its delay (whether its URLs are in a back queue, inactive, or in the front
  tier), and ``next_ready_at`` names a time when one will be ready;
* a retired host's queued URLs are dropped and catalogued as such, never leased.

The machine runs for each store, with a cap of back-queue slots below and above
the number of hosts.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from courtly.clock import FakeClock
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import FrontierConfig, QueueConfig
from courtly.frontier.frontier import Frontier
from courtly.frontier.politeness import PolitenessConfig
from courtly.frontier.records import AddStatus, Lease, Outcome, OutcomeKind, QueuedUrl
from courtly.frontier.retry import RETRYABLE
from courtly.store.redis import RedisStore
from tests.stores import REPEATABLE_REDIS_STORE_FACTORIES, STORE_FACTORIES

T = TypeVar("T")
TTL_S = 30.0
INACTIVE_AFTER_S = 5.0
MAX_REQUESTS_PER_HOST = 3
HOSTS = [f"h{i}.test" for i in range(5)]


class FrontierMachine(RuleBasedStateMachine):
    store_name = "memory"
    slots = 3
    max_due_wait_s = float("inf")
    """Ageing among due hosts off: the batch order below is checked. The ``ageing``
    machines turn it on (3 s) and check every other invariant."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.dir = Path(tempfile.mkdtemp(prefix="courtly-prop-"))
        self.clock = FakeClock()
        queues = QueueConfig(
            levels=3,
            max_back_queues=self.slots,
            max_skips=4,
            inactive_after_s=INACTIVE_AFTER_S,
            max_due_wait_s=self.max_due_wait_s,
        )
        factory = {**STORE_FACTORIES, **REPEATABLE_REDIS_STORE_FACTORIES}[self.store_name]
        self.store = factory(self.dir, queues, random.Random(0))
        config = FrontierConfig(
            queues=queues,
            politeness=PolitenessConfig(min_delay_s=1.0, delay_factor=2.0, max_delay_s=10.0),
            budget=BudgetConfig(max_requests_per_host=MAX_REQUESTS_PER_HOST),
            lease_ttl_s=TTL_S,
        )
        self.frontier = Frontier(self.store, config, clock=self.clock, host_key=_host)
        self.seq = 0
        self.added: dict[str, tuple[str, int, int]] = {}  # url -> (host, level, seq)
        self.done: set[str] = set()
        self.live: dict[str, Lease] = {}  # host -> lease we hold
        self.expired: list[Lease] = []
        self.next_at: dict[str, float] = {}
        self.placed_at: dict[str, float] = {}  # host -> the time a step reclaimed its lease as of
        self.retired: set[str] = set()
        self.reasons: dict[str, str] = {}  # retired host -> why
        self.attempts: dict[str, int] = {}  # url -> failed attempts retried so far
        self.floating: set[str] = set()  # promoted with a hint: its place is not checked
        self.news: set[str] = set()  # revisited at level 0: the news lane, first in its host
        self.ahead_max = 0.0  # the most a lease was taken ahead (its step ran that late)
        # The Redis store keeps times as float milliseconds: near this clock's 1.7e9 s one
        # ulp is 2.4e-7 s, and a time sent as an offset from now (a next allowed time, a
        # lease's expiry: now + ahead + ttl, summed in ms) and read back moves by a few.
        self.resolution_s = 1e-5 if isinstance(self.store, RedisStore) else 0.0

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.loop.run_until_complete(self.frontier.aclose())
        self.loop.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- model helpers --------------------------------------------------------

    def pending(self) -> set[str]:
        """Added URLs still to be leased (neither done, nor held, nor dropped with a host)."""
        held = {lease.url for lease in self.live.values()}
        return {
            u
            for u in self.added
            if u not in self.done and u not in held and self.added[u][0] not in self.retired
        }

    def dropped(self) -> dict[str, str | None]:
        """URLs the store catalogued as dropped with their retired host: url -> skip reason."""
        if not self.retired:
            return {}  # nothing can have been dropped (checked when a host is retired)

        async def read() -> dict[str, str | None]:
            return {
                e.url: e.skip_reason
                async for e in self.store.catalogue()
                if (e.skip_reason or "").startswith("host_retired:")
            }

        return self.run(read())

    def due_at(self, host: str) -> float:
        """When ``host`` may be leased: its next allowed time, and not before the time as
        of which a step reclaimed its expired lease (a step taken ahead places it then)."""
        return max(self.next_at.get(host, 0.0), self.placed_at.get(host, 0.0))

    def check_short_batch(
        self, asked: int, got: int, next_ready_at: float | None, ahead_s: float = 0.0
    ) -> None:
        """Fewer leases than asked: no host is left ready (by ``ahead_s`` from now, for
        a lease taken that far ahead), and the wait named is right."""
        if got >= asked:
            return
        now = self.clock.now() + ahead_s
        counts = self.run(self.frontier.counts())
        assert counts.hosts_ready == 0, "a ready host was left unleased"
        if counts.hosts_active >= self.slots:
            return  # every slot is taken: a waiting host may be due, it waits for a slot
        waiting = {self.added[u][0] for u in self.pending()} - set(self.live)
        # A Redis store's times are float milliseconds (see ``resolution_s``): a host the
        # model has due at ``now`` may be stored a few microseconds later, and is then
        # rightly not leased yet (``next_ready_at`` names that moment); ``check_lease``
        # allows the same resolution the other way.
        due = [h for h in waiting if self.due_at(h) + self.resolution_s <= now]
        assert not due, f"hosts {due} were ready with a slot free but not leased"
        if waiting:
            assert next_ready_at is not None, "hosts are waiting but no wake time was given"
            assert next_ready_at > now
            earliest = min(self.due_at(h) for h in waiting)
            assert next_ready_at <= earliest + self.resolution_s

    def check_batch_order(self, leases: tuple[Lease, ...]) -> None:
        """Heads of one batch come in non-decreasing level (see the module doc)."""
        if self.max_due_wait_s != float("inf"):
            return  # an aged host goes first whatever its head (tests/property/test_due_ageing)
        levels = [
            self.added[lease.url][1]
            for lease in leases
            if lease.url not in self.news and lease.url not in self.floating
        ]
        assert levels == sorted(levels), f"a worse head was leased before a better: {levels}"

    def check_lease(self, lease: Lease, ahead_s: float = 0.0) -> None:
        now = self.clock.now() + ahead_s
        holder = self.live.get(lease.host_key)
        assert holder is None, f"two live leases on {lease.host_key}"
        allowed_at = self.next_at.get(lease.host_key, 0.0)
        assert now + self.resolution_s >= self.due_at(lease.host_key), (
            "leased before next allowed time (less the lease-ahead), or before the time as "
            "of which its expired lease was reclaimed"
        )
        self.placed_at.pop(lease.host_key, None)
        # the request waits for the host's time, which the lease says exactly
        assert lease.host.next_allowed_at == pytest.approx(allowed_at, abs=1e-6 + self.resolution_s)
        assert lease.url in self.added and lease.url not in self.done, "leased twice"
        host, level, seq = self.added[lease.url]
        assert host == lease.host_key
        news = lease.url in self.news
        earlier = [
            u
            for u in self.pending() - self.floating
            if self.added[u][0] == host
            and self.added[u][1] == level
            and self.added[u][2] < seq
            and (u in self.news) == news  # the news lane and the rest are each in order
        ]
        if lease.url in self.floating:
            earlier = []
        assert not earlier, f"FIFO broken on {host} level {level}: {earlier} before {lease.url}"
        assert lease.attempts == self.attempts.get(lease.url, 0), "attempt count lost"
        assert lease.attempts < self.frontier.config.politeness.max_attempts
        self.live[lease.host_key] = lease

    def end_fetch(
        self, data: st.DataObject, kind: OutcomeKind, took: float, retry_after: float | None
    ) -> tuple[Lease, Outcome]:
        """Take one live lease whose fetch took ``took`` s and ended with ``kind``; the
        model's next allowed time and retirement follow its outcome."""
        host = data.draw(st.sampled_from(sorted(self.live)))
        lease = self.live.pop(host)
        start = self.clock.now()
        self.clock.advance(took)
        outcome = Outcome(kind, start, self.clock.now(), retry_after_s=retry_after)
        expected = self.frontier.next_host_state(lease, outcome)
        self.next_at[host] = expected.next_allowed_at
        if expected.retired is not None:
            self.retired.add(host)
            self.reasons[host] = expected.retired
        return lease, outcome

    # -- rules ------------------------------------------------------------------

    @rule(
        items=st.lists(
            st.tuples(st.integers(0, 4), st.integers(0, 12), st.integers(0, 2)),
            min_size=1,
            max_size=6,
        )
    )
    def add(self, items: list[tuple[int, int, int]]) -> None:
        entries = [
            QueuedUrl(f"http://{HOSTS[h]}/p{p}", HOSTS[h], level, 0) for h, p, level in items
        ]
        statuses = self.run(self.frontier.add_queued(entries))
        batch_seen: set[str] = set()
        for entry, status in zip(entries, statuses, strict=True):
            known = entry.url in self.added or entry.url in batch_seen
            if entry.host_key in self.retired:
                assert status is AddStatus.HOST_RETIRED
            elif known:
                assert status is AddStatus.SEEN
            else:
                assert status is AddStatus.QUEUED
                self.seq += 1
                self.added[entry.url] = (entry.host_key, entry.level, self.seq)
                batch_seen.add(entry.url)

    @rule(data=st.data(), level=st.integers(0, 2))
    def revisit(self, data: st.DataObject, level: int) -> None:
        """A recrawl's due URL: fetched before, queued again through ``store.revisit``
        (the seen-set is not asked), at the back of its host's queue like a new URL."""
        known = sorted(u for u in self.done if self.added[u][0] not in self.retired)
        if not known:
            return
        url = data.draw(st.sampled_from(known))
        host = self.added[url][0]
        entry = QueuedUrl(url, host, level, 0)
        budget = self.frontier.config.budget
        assert self.run(self.store.revisit([entry], self.clock.now(), budget)) == [AddStatus.QUEUED]
        self.done.discard(url)
        self.attempts.pop(url, None)
        self.seq += 1
        self.added[url] = (host, level, self.seq)
        if level == 0:
            self.news.add(url)
        else:
            self.news.discard(url)

    @rule(
        items=st.lists(
            st.tuples(st.integers(0, 4), st.integers(0, 12), st.integers(0, 2)),
            min_size=1,
            max_size=6,
        )
    )
    def promote(self, items: list[tuple[int, int, int]]) -> None:
        entries = [
            QueuedUrl(f"http://{HOSTS[h]}/p{p}", HOSTS[h], level, 0) for h, p, level in items
        ]
        before = self.run(self.frontier.counts())
        moved = self.run(self.frontier.promote(entries))
        held = {lease.url for lease in self.live.values()}
        pending = self.pending()
        for entry, did in zip(entries, moved, strict=True):
            known = self.added.get(entry.url)
            if entry.url not in pending or entry.url in held:
                assert not did, f"{entry.url} moved while not queued"
                continue
            assert known is not None
            host, level, _ = known
            if did:
                assert entry.level < level, "moved to a level no better"
                self.seq += 1
                self.added[entry.url] = (host, entry.level, self.seq)
            elif entry.level < level:
                self.floating.add(entry.url)  # its host had URLs in the front tier
        after = self.run(self.frontier.counts())
        assert (after.queued, after.leased) == (before.queued, before.leased)

    @rule(n=st.integers(1, 4), ahead_s=st.sampled_from([0.0, 0.05, 0.5]))
    def lease(self, n: int, ahead_s: float) -> None:
        batch = self.run(self.frontier.lease(n, ahead_s=ahead_s))
        self.ahead_max = max(self.ahead_max, ahead_s)
        self.reap_model(ahead_s)
        self.check_batch_order(batch.leases)
        for lease in batch.leases:
            self.check_lease(lease, ahead_s)
            assert lease.leased_at == pytest.approx(self.clock.now() + ahead_s)
        if batch.next_ready_at is not None and not batch.leases:
            assert batch.next_ready_at > self.clock.now() + ahead_s
        self.check_short_batch(n, len(batch.leases), batch.next_ready_at, ahead_s)

    @precondition(lambda self: bool(self.live))
    @rule(
        data=st.data(),
        kind=st.sampled_from(list(OutcomeKind)),
        took=st.floats(0, 5),
        retry_after=st.none() | st.floats(0, 120),
    )
    def complete(
        self, data: st.DataObject, kind: OutcomeKind, took: float, retry_after: float | None
    ) -> None:
        lease, outcome = self.end_fetch(data, kind, took, retry_after)
        result = self.run(self.frontier.complete(lease, outcome))
        assert result is not None, "an unreclaimed lease must complete"
        self.done.add(lease.url)

    @precondition(lambda self: bool(self.live))
    @rule(
        data=st.data(),
        kind=st.sampled_from(sorted(RETRYABLE, key=lambda k: k.value)),
        took=st.floats(0, 5),
    )
    def fail(self, data: st.DataObject, kind: OutcomeKind, took: float) -> None:
        """A retryable failure: retried (counted, after the back-off) or, at the last
        attempt, completed."""
        lease, outcome = self.end_fetch(data, kind, took, None)
        if self.frontier.retries(lease, outcome):
            assert self.run(self.frontier.retry(lease, outcome))
            self.attempts[lease.url] = lease.attempts + 1
        else:
            assert lease.attempts + 1 == self.frontier.config.politeness.max_attempts
            assert self.run(self.frontier.complete(lease, outcome)) is not None
            self.done.add(lease.url)

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        host = data.draw(st.sampled_from(sorted(self.live)))
        lease = self.live.pop(host)
        assert self.run(self.frontier.release(lease))

    @rule(dt=st.floats(0.0, 20.0))
    def advance(self, dt: float) -> None:
        self.clock.advance(dt)

    @precondition(lambda self: bool(self.live))
    @rule()
    def lose_a_fetcher(self) -> None:
        """A fetcher vanishes: its lease expires, its URL returns, its late completion is fenced."""
        host = sorted(self.live)[0]
        lease = self.live[host]
        self.clock.set(max(self.clock.now(), lease.expires_at + self.resolution_s))
        batch = self.run(self.frontier.lease(len(HOSTS)))
        self.reap_model()
        assert lease.url in self.pending() or any(new.url == lease.url for new in batch.leases), (
            "the URL of an expired lease did not come back"
        )
        for new in batch.leases:
            self.check_lease(new)
        late = self.run(self.frontier.complete(lease, Outcome.no_request(self.clock.now())))
        assert late is None, "a late completion was accepted"

    def reap_model(self, ahead_s: float = 0.0) -> None:
        now = self.clock.now() + ahead_s
        for host, lease in list(self.live.items()):
            if lease.expires_at <= now:
                del self.live[host]
                self.expired.append(lease)
                # the step that reclaimed it ran as of ``now`` and placed the host then: a
                # later step taken less far ahead does not hand it out before that time
                self.placed_at[host] = max(self.placed_at.get(host, 0.0), now)

    @rule()
    def drain(self) -> None:
        """Complete everything held, then lease until empty: every queued URL comes out once."""
        for lease in list(self.live.values()):
            out = Outcome.no_request(self.clock.now())
            assert self.run(self.frontier.complete(lease, out)) is not None
            self.done.add(lease.url)
        self.live.clear()
        for _ in range(10 * (len(self.added) + 1)):
            batch = self.run(self.frontier.lease(8))
            self.reap_model()
            self.check_batch_order(batch.leases)
            for lease in batch.leases:
                self.check_lease(lease)
            self.check_short_batch(8, len(batch.leases), batch.next_ready_at)
            for lease in batch.leases:
                out = Outcome.no_request(self.clock.now())
                assert (
                    self.run(self.frontier.complete(self.live.pop(lease.host_key), out)) is not None
                )
                self.done.add(lease.url)
            if batch.next_ready_at is None and not batch.leases:
                break
            if not batch.leases:
                assert batch.next_ready_at is not None
                self.clock.set(batch.next_ready_at)
        assert self.pending() == set(), "URLs left behind after a drain"
        counts = self.run(self.frontier.counts())
        assert counts.queued == 0 and counts.leased == 0
        assert counts.hosts_active == counts.hosts_held == counts.hosts_inactive == 0
        # every URL of a retired host not fetched before is in the catalogue as dropped
        lost = {u for u, (h, _, _) in self.added.items() if h in self.retired} - self.done
        assert set(self.dropped()) == lost

    @invariant()
    def counts_match(self) -> None:
        counts = self.run(self.frontier.counts())
        assert counts.leased == len(self.live)
        dropped = self.dropped()
        assert all(self.added[u][0] in self.retired for u in dropped)
        assert not set(dropped) & self.done, "a URL was both fetched and dropped"
        assert set(dropped) <= {u for u, v in self.added.items() if v[0] in self.retired}
        # the reason is the host's own: budget, blocked (address guard), dead, failing
        assert all(
            reason == f"host_retired:{self.reasons[self.added[u][0]]}"
            for u, reason in dropped.items()
        )
        assert counts.queued + counts.leased == len(self.added) - len(self.done) - len(dropped)

    @invariant()
    def far_hosts_hold_no_slot(self) -> None:
        counts = self.run(self.frontier.counts())
        assert counts.hosts_active <= self.slots
        assert counts.hosts_active + counts.hosts_inactive == counts.hosts_held
        now = self.clock.now()
        waiting = {self.added[u][0] for u in self.pending()} - set(self.live)
        # a snoozed host (holding a slot, not ready) waits less than the threshold (from the
        # step that placed it: a lease taken ahead runs that much later than now)
        horizon = now + INACTIVE_AFTER_S + self.ahead_max
        # ... and a host due now can be snoozed for a lease-ahead's time: an expired
        # lease's host is placed at that step's time, now + ahead
        near = [
            h
            for h in waiting
            if self.next_at.get(h, 0.0) <= horizon
            and (self.ahead_max > 0 or now < self.next_at.get(h, 0.0))
        ]
        assert counts.hosts_snoozed <= len(near), (counts, near)


def _host(url: str) -> str:
    return url.split("/", 3)[2]


FULL = settings(
    max_examples=100,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
"""The budget of each machine on the local stores (2-5 s each). Set on every machine's own
``TestCase``: Hypothesis builds one per subclass, so settings given to the base class's
``TestCase`` reach no subclass (they ran on Hypothesis's defaults, 100 and 50)."""


def _machine_stores() -> list[str]:
    """The stores every machine runs on in full: the local ones; with
    ``COURTLY_PROPERTY_REDIS=1`` the Redis ones too (standalone and the 3-master cluster:
    minutes each over the network)."""
    names = list(STORE_FACTORIES)
    if os.environ.get("COURTLY_PROPERTY_REDIS") == "1":
        names += list(REPEATABLE_REDIS_STORE_FACTORIES)
    return names


REDIS_SHORT = settings(
    max_examples=30,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
"""``make test`` runs the machine on each Redis store too, one machine each and fewer
examples (about 10-30 s a store), so the one contract's model checks every store in every
run; ``COURTLY_PROPERTY_REDIS=1`` runs every machine on them with the full budget."""


def _machines() -> dict[str, type[FrontierMachine]]:
    out: dict[str, type[FrontierMachine]] = {}
    for name in _machine_stores():
        for slots in (3, 8):
            key = f"{name}_{slots}_slots"
            attrs: dict[str, object] = {"store_name": name, "slots": slots}
            out[key] = type(f"FrontierMachine_{key}", (FrontierMachine,), attrs)
        key = f"{name}_ageing"
        attrs = {"store_name": name, "slots": 8, "max_due_wait_s": 3.0}
        out[key] = type(f"FrontierMachine_{key}", (FrontierMachine,), attrs)
    for full in out.values():
        full.TestCase.settings = FULL
    for name in REPEATABLE_REDIS_STORE_FACTORIES:
        if f"{name}_8_slots" in out:
            continue
        key = f"{name}_short"
        attrs = {"store_name": name, "slots": 8}
        machine: type[FrontierMachine] = type(f"FrontierMachine_{key}", (FrontierMachine,), attrs)
        machine.TestCase.settings = REDIS_SHORT
        out[key] = machine
    return out


for _name, _cls in _machines().items():
    globals()[f"TestFrontierInvariants_{_name}"] = _cls.TestCase

"""Hypothesis stateful test: the frontier's invariants under arbitrary interleavings.

A model tracks, independently of the store, which URLs were added, which are
leased, and when each host may next be served (computed with the pure policy).
Checked after every step:

* never two live leases on one host;
* no lease before the host's next allowed time;
* every added URL is leased exactly once (re-delivery only after its lease
  expired) or recognised as seen; a final drain leases every queued URL;
* FIFO within a host and level;
* an expired lease returns its URL to the head of its queue and its late
  completion is fenced.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from courtly.clock import FakeClock
from courtly.frontier.config import FrontierConfig, QueueConfig
from courtly.frontier.frontier import Frontier
from courtly.frontier.politeness import PolitenessConfig
from courtly.frontier.records import AddStatus, Lease, Outcome, OutcomeKind, QueuedUrl
from tests.stores import STORE_FACTORIES

T = TypeVar("T")
TTL_S = 30.0
HOSTS = [f"h{i}.test" for i in range(5)]


class FrontierMachine(RuleBasedStateMachine):
    store_name = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.dir = Path(tempfile.mkdtemp(prefix="courtly-prop-"))
        self.clock = FakeClock()
        queues = QueueConfig(levels=3, max_back_queues=3, max_skips=4)
        store = STORE_FACTORIES[self.store_name](self.dir, queues, random.Random(0))
        config = FrontierConfig(
            queues=queues,
            politeness=PolitenessConfig(min_delay_s=1.0, delay_factor=2.0, max_delay_s=10.0),
            lease_ttl_s=TTL_S,
        )
        self.frontier = Frontier(store, config, clock=self.clock, host_key=_host)
        self.seq = 0
        self.added: dict[str, tuple[str, int, int]] = {}  # url -> (host, level, seq)
        self.done: set[str] = set()
        self.live: dict[str, Lease] = {}  # host -> lease we hold
        self.expired: list[Lease] = []
        self.next_at: dict[str, float] = {}
        self.retired: set[str] = set()  # hosts retired (blocked, dead, failing)
        self.dropped: set[str] = set()  # their URLs, never to be leased

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.loop.run_until_complete(self.frontier.aclose())
        self.loop.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- model helpers --------------------------------------------------------

    def pending(self) -> set[str]:
        held = {lease.url for lease in self.live.values()}
        return {
            u for u in self.added if u not in self.done and u not in held and u not in self.dropped
        }

    def check_lease(self, lease: Lease) -> None:
        now = self.clock.now()
        holder = self.live.get(lease.host_key)
        assert holder is None, f"two live leases on {lease.host_key}"
        assert now >= self.next_at.get(lease.host_key, 0.0), "leased before next allowed time"
        assert lease.url in self.added and lease.url not in self.done, "leased twice"
        assert lease.url not in self.dropped, "a URL of a retired host was leased"
        host, level, seq = self.added[lease.url]
        assert host == lease.host_key
        earlier = [
            u
            for u in self.pending()
            if self.added[u][0] == host and self.added[u][1] == level and self.added[u][2] < seq
        ]
        assert not earlier, f"FIFO broken on {host} level {level}: {earlier} before {lease.url}"
        self.live[lease.host_key] = lease

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

    @rule(n=st.integers(1, 4))
    def lease(self, n: int) -> None:
        batch = self.run(self.frontier.lease(n))
        self.reap_model()
        for lease in batch.leases:
            self.check_lease(lease)
        if batch.next_ready_at is not None and not batch.leases:
            assert batch.next_ready_at > self.clock.now()

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data(), kind=st.sampled_from(list(OutcomeKind)), took=st.floats(0, 5))
    def complete(self, data: st.DataObject, kind: OutcomeKind, took: float) -> None:
        host = data.draw(st.sampled_from(sorted(self.live)))
        lease = self.live.pop(host)
        start = self.clock.now()
        self.clock.advance(took)
        outcome = Outcome(kind, start, self.clock.now(), retry_after_s=None)
        expected = self.frontier.next_host_state(lease, outcome)
        result = self.run(self.frontier.complete(lease, outcome))
        assert result is not None, "an unreclaimed lease must complete"
        self.done.add(lease.url)
        self.next_at[host] = expected.next_allowed_at
        if expected.retired is not None:  # its queued URLs are dropped
            self.retired.add(host)
            self.dropped |= {u for u in self.pending() if self.added[u][0] == host}

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
        self.clock.set(max(self.clock.now(), lease.expires_at))
        batch = self.run(self.frontier.lease(len(HOSTS)))
        self.reap_model()
        assert lease.url in self.pending() or any(new.url == lease.url for new in batch.leases), (
            "the URL of an expired lease did not come back"
        )
        for new in batch.leases:
            self.check_lease(new)
        late = self.run(self.frontier.complete(lease, Outcome.no_request(self.clock.now())))
        assert late is None, "a late completion was accepted"

    def reap_model(self) -> None:
        now = self.clock.now()
        for host, lease in list(self.live.items()):
            if lease.expires_at <= now:
                del self.live[host]
                self.expired.append(lease)

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
            for lease in batch.leases:
                self.check_lease(lease)
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

    @invariant()
    def counts_match(self) -> None:
        counts = self.run(self.frontier.counts())
        assert counts.leased == len(self.live)
        # A retired host's URLs leave the count when the front tier is next drawn from.
        left = len(self.added) - len(self.done)
        assert left - len(self.dropped) <= counts.queued + counts.leased <= left


def _host(url: str) -> str:
    return url.split("/", 3)[2]


FrontierMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _machines() -> dict[str, type[FrontierMachine]]:
    out: dict[str, type[FrontierMachine]] = {}
    for name in STORE_FACTORIES:
        cls = type(f"FrontierMachine_{name}", (FrontierMachine,), {"store_name": name})
        out[name] = cls
    return out


for _name, _cls in _machines().items():
    globals()[f"TestFrontierInvariants_{_name}"] = _cls.TestCase

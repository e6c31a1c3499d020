"""The host table's kept counts against a full pass, every delay source by name, and the
front tier's depth per priority level."""

from __future__ import annotations

import random
import re
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from courtly.events import HostLeased, HostStateChanged, LeaseExpired
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.records import DelaySource, FrontierCounts, HostState, QueuedUrl
from courtly.observe.hosts import HostTable
from courtly.observe.metrics import metrics_text
from courtly.observe.observation import Observation, merge_observed
from courtly.observe.server import Dashboard
from courtly.observe.snapshot import DELAY_SOURCES, schema_errors, snapshot_json
from courtly.observe.sources import LiveSource
from courtly.progress import format_waiting
from courtly.store.base import FrontDepths
from courtly.store.memory import MemoryStore
from courtly.store.sqlite import SqliteStore
from tests.unit.observe.test_hosts_and_metrics import COUNTS, snapshot

T0 = 5_000.0
PAGE = Path(__file__).parents[3] / "src" / "courtly" / "observe" / "static" / "index.html"


def random_state(rng: random.Random, key: str, at: float) -> HostState:
    return HostState(
        key,
        next_allowed_at=at + rng.choice((-1.0, 0.0, 0.3, 2.0, 7.5, 40.0)),
        error_streak=rng.choice((0, 0, 1, 3)),
        parks=rng.choice((0, 0, 0, 1)),
        requests_made=rng.randint(0, 50),
        delay_source=rng.choice(list(DelaySource)),
        retired=rng.choice((None,) * 15 + ("dead",)),
    )


def test_the_kept_counts_equal_a_full_pass_at_every_census() -> None:
    rng = random.Random(7)
    table = HostTable({f"h{i}.test": i % 9 for i in range(0, 60, 2)}.get)
    keys = [f"h{i}.test" for i in range(60)]
    now = T0
    for step in range(400):
        key = rng.choice(keys)
        kind = rng.random()
        if kind < 0.4:
            table.notify(HostLeased(now, key))
        elif kind < 0.5:
            table.notify(LeaseExpired(now, key))
        else:
            table.notify(HostStateChanged(now, random_state(rng, key, now)))
        if step % 7 == 0:
            now += rng.choice((0.0, 0.2, 1.0, 3.0, 10.0))
            if step % 70 == 0:  # a clock set back: the table answers by a full pass
                assert table.census(now - 5.0) == table.scan(now - 5.0)
            assert table.census(now) == table.scan(now), step
            assert table.census(now).by_state == table.by_state(now)
            assert table.census(now).waiting_by_source == table.waiting_by_source(now)
    assert table.census(now + 100.0) == table.scan(now + 100.0)


def test_the_due_heap_keeps_one_live_entry_a_host() -> None:
    table = HostTable()
    for round_ in range(3_000):
        at = T0 + round_ * 0.01
        state = HostState("a.test", next_allowed_at=at + 1e6, delay_source=DelaySource.PARKED)
        table.notify(HostStateChanged(at, state))  # a host parked again and again
        table.census(at)
    assert table.census(T0 + 31).waiting_by_source == {"parked": 1}
    assert len(table._due) <= 4_096 + 2  # stale entries are dropped, not kept for ever


def test_the_tops_rank_as_a_full_sort_does() -> None:
    rng = random.Random(3)
    queued = {f"h{i}.test": rng.randint(0, 30) for i in range(80)}
    table = HostTable(queued.get)
    for key in queued:
        table.notify(HostLeased(T0, key))
        table.notify(HostStateChanged(T0 + 1, random_state(rng, key, T0 + 1)))
    views = list(table.hosts.values())
    expected = {
        "queued": sorted(views, key=lambda v: queued[v.state.host_key], reverse=True),
        "next_allowed": sorted(
            views,
            key=lambda v: v.state.next_allowed_at if v.state.retired is None else float("-inf"),
            reverse=True,
        ),
        "errors": sorted(views, key=lambda v: (v.state.error_streak, v.state.parks), reverse=True),
        "requests": sorted(views, key=lambda v: v.state.requests_made, reverse=True),
        "delay": sorted(
            views, key=lambda v: max(0.0, v.state.next_allowed_at - v.changed_at), reverse=True
        ),
    }
    for sort, ranked in expected.items():
        for n in (1, 10, 80, 200):
            got = [r["host"] for r in table.top(sort, n, T0 + 2)]
            assert got == [v.state.host_key for v in ranked[:n]], (sort, n)


def test_the_kept_tops_equal_a_full_sort_after_every_change() -> None:
    """Keys that rise, fall, repeat and tie; hosts retired; heaps compacted."""
    rng = random.Random(11)
    table = HostTable()
    keys = [f"h{i}.test" for i in range(40)]
    now = T0
    for step in range(3_000):
        key = rng.choice(keys)
        if rng.random() < 0.3:
            table.notify(HostLeased(now, key))
        else:
            table.notify(HostStateChanged(now, random_state(rng, key, now)))
        now += rng.choice((0.0, 0.5))
        if step % 5 == 0:
            for sort in ("next_allowed", "errors", "delay", "requests"):
                n = rng.choice((1, 3, 10, 40, 60))
                assert table.top(sort, n, now) == table.top_by_scan(sort, n, now), (step, sort)


def waiting_for_each_source() -> Observation:
    """One host waiting for each delay source (the 8 terms of ``DelaySource``)."""
    obs = Observation()
    for source in DelaySource:
        key = f"{source.value.replace('_', '-')}.test"
        obs.notify(HostLeased(T0, key))
        state = HostState(key, next_allowed_at=T0 + 30, delay_source=source, last_status=200)
        obs.notify(HostStateChanged(T0 + 0.5, state))
    return obs


async def test_every_reason_a_host_can_wait_is_shown_by_name() -> None:
    assert len(DelaySource) == 9 and tuple(s.value for s in DelaySource) == DELAY_SOURCES
    obs = waiting_for_each_source()
    # /api/hosts: each host's row names its source
    source = LiveSource(lambda: T0 + 1, obs.hosts)
    async with Dashboard(source) as served, aiohttp.ClientSession() as session:
        answer = await session.get(served.url + "api/hosts?sort=next_allowed&n=50")
        rows = (await answer.json())["hosts"]
    assert sorted(r["delay_source"] for r in rows) == sorted(DELAY_SOURCES)
    assert {r["state"] for r in rows} == {"snoozed", "parked"}
    # the snapshot (/api/snapshot, /events, status.json) counts each by name
    snap = snapshot_json(snapshot(obs), T0 + 1)
    assert schema_errors(snap) == []
    assert snap["waiting_by_source"] == dict.fromkeys(DELAY_SOURCES, 1)
    # /metrics: one series per source
    families = {
        f.name: f for f in text_string_to_metric_families(metrics_text(lambda: snap).decode())
    }
    waiting = {s.labels["delay_source"]: s.value for s in families["courtly_hosts_waiting"].samples}
    assert waiting == dict.fromkeys(DELAY_SOURCES, 1.0)
    # the page: a label for each source, in the bars and in the table's reason column
    labels = re.search(r"const SOURCES = \{(.*?)\};", PAGE.read_text(), re.S)
    assert labels is not None
    named = dict(re.findall(r'(\w+):"([^"]+)"', labels.group(1)))
    assert set(named) == set(DELAY_SOURCES) and all(named.values())
    # the terminal: the verdict and the top reasons, in words
    assert "Crawl-delay 1" in format_waiting(snapshot(obs), top=7)
    # a source the schema does not know is an error
    bad = {**snap, "hosts": [{**snap["hosts"][0], "delay_source": "whim"}]}
    assert schema_errors(bad) == ["hosts[0]: unknown delay_source whim"]


async def test_the_stores_say_the_front_depth_of_each_level(tmp_path: Path) -> None:
    memory = MemoryStore()
    sqlite = SqliteStore(tmp_path / "state.db")
    entries = [QueuedUrl(f"http://h{i}.test/{i}", f"h{i}.test", level=i % 3) for i in range(12)]
    entries += [QueuedUrl("http://h0.test/more", "h0.test", level=3)]
    try:
        for store in (memory, sqlite):
            assert isinstance(store, FrontDepths)
            await store.add(entries, T0, BudgetConfig())
            depths = store.front_by_level()
            counts = await store.counts(T0)
            assert depths == (4, 4, 4, 1) and sum(depths) == counts.front_queued
            batch = await store.lease(T0, 60.0, 2)
            assert sum(store.front_by_level()) == (await store.counts(T0)).front_queued
            assert len(batch.leases) == 2
    finally:
        await sqlite.aclose()


def test_the_snapshot_charts_queue_depth_by_priority_level() -> None:
    obs = Observation(front_of=lambda: (3, 0, 2, 1))
    one = obs.summary(T0, COUNTS)
    assert one["front_queued_by_level"] == [3, 0, 2, 1]
    snap = snapshot_json(snapshot(obs), T0)
    assert schema_errors(snap) == [] and snap["front_queued_by_level"] == [3, 0, 2, 1]
    assert schema_errors({**snap, "front_queued_by_level": [1, -2]}) == [
        "front_queued_by_level: not a list of counts"
    ]
    older = {k: v for k, v in one.items() if k != "front_queued_by_level"}
    merged = merge_observed([one, one, older], FrontierCounts(*([0] * 11)))
    assert merged["front_queued_by_level"] == [6, 0, 4, 2]
    text = metrics_text(lambda: snap).decode()
    family = {f.name: f for f in text_string_to_metric_families(text)}["courtly_front_queue_urls"]
    assert family.type == "gauge"
    assert {s.labels["level"]: s.value for s in family.samples} == {
        "0": 3.0, "1": 0.0, "2": 2.0, "3": 1.0
    }  # fmt: skip
    assert Observation().summary(T0, COUNTS)["front_queued_by_level"] == []

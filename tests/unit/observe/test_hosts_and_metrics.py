"""The host table, the tally, the snapshot schema and /metrics, driven by events."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from courtly.crawl import CrawlSnapshot
from courtly.events import FetchDone, HostLeased, HostStateChanged, LeaseExpired, RobotsResult
from courtly.frontier.records import DelaySource, FrontierCounts, HostState
from courtly.observe.hosts import SORTS, HostTable, log2_bin
from courtly.observe.metrics import metrics_text
from courtly.observe.observation import Observation, merge_observed
from courtly.observe.snapshot import schema_errors, snapshot_json
from courtly.observe.sources import FileSource, sort_rows
from courtly.observe.status_file import LISTED_SEEDS, StatusFile, status_record
from courtly.observe.tally import status_class
from courtly.progress import format_waiting

T0 = 1_000.0
COUNTS = FrontierCounts(5, 2, 3, 2, 0, 2, 0, 0, 1, 4, 7)


def state(host: str, **kw: object) -> HostState:
    return HostState(host, **kw)  # type: ignore[arg-type]


def observed() -> Observation:
    obs = Observation({"a.test": 3, "b.test": 40}.get)
    obs.notify(HostLeased(T0, "a.test"))
    obs.notify(RobotsResult(T0, "a.test", "ok", True))
    obs.notify(FetchDone(T0 + 0.2, "a.test", 200, None, 0.2, 1_000))
    cd = state(
        "a.test",
        next_allowed_at=T0 + 5.2,
        crawl_delay_s=5.0,
        last_status=200,
        delay_source=DelaySource.CRAWL_DELAY,
    )
    obs.notify(HostStateChanged(T0 + 0.2, cd))
    obs.notify(HostLeased(T0, "b.test"))
    obs.notify(FetchDone(T0 + 0.1, "b.test", 503, None, 0.1, 10))
    retry = state(
        "b.test",
        next_allowed_at=T0 + 60,
        delay_source=DelaySource.RETRY_AFTER,
        error_streak=1,
        last_status=503,
    )
    obs.notify(HostStateChanged(T0 + 0.1, retry))
    obs.notify(RobotsResult(T0 + 1, "b.test", "ok", False))
    return obs


def test_the_table_says_why_each_host_waits() -> None:
    obs = observed()
    assert obs.hosts.waiting_by_source(T0 + 1) == {"crawl_delay": 1, "retry_after": 1}
    assert obs.hosts.by_state(T0 + 1) == {"snoozed": 1, "parked": 1}
    assert obs.hosts.by_state(T0 + 100) == {"ready": 2}
    top = obs.hosts.top("queued", 1, T0 + 1)
    assert [r["host"] for r in top] == ["b.test"] and top[0]["queued"] == 40
    assert top[0]["delay_source"] == "retry_after" and top[0]["next_allowed_in_s"] == 59.0
    assert obs.hosts.queue_bins() == {"2-3": 1, "32-63": 1}


def test_every_sort_orders_largest_first_like_the_row_sort() -> None:
    obs = observed()
    for sort in SORTS:
        rows = obs.hosts.top(sort, 10, T0 + 1)
        assert [r["host"] for r in sort_rows(rows, sort, 10)] == [r["host"] for r in rows]


def test_overlap_and_early_leases_are_violations() -> None:
    table = HostTable()
    table.notify(HostLeased(T0, "a.test"))
    table.notify(HostLeased(T0, "a.test"))  # overlap
    table.notify(LeaseExpired(T0, "a.test"))
    table.notify(HostStateChanged(T0 + 1, state("a.test", next_allowed_at=T0 + 9)))
    table.notify(HostLeased(T0 + 5, "a.test"))  # early
    assert table.violations == {"overlap": 1, "early": 1}


def test_log2_bins() -> None:
    assert [log2_bin(n) for n in (0, 1, 2, 3, 4, 7, 8, 100)] == [
        "0", "1", "2-3", "2-3", "4-7", "4-7", "8-15", "64-127"
    ]  # fmt: skip


def test_status_classes_keep_429_and_503_apart() -> None:
    assert [status_class(s) for s in (200, 301, 404, 429, 500, 503, None)] == [
        "2xx", "3xx", "4xx", "429", "5xx", "503", "error"
    ]  # fmt: skip


def snapshot(obs: Observation) -> CrawlSnapshot:
    return CrawlSnapshot(
        elapsed_s=2.0,
        pages=2,
        pages_per_s=1.0,
        robots_fetches=1,
        bytes_received=1_010,
        redirects=0,
        in_flight=0,
        counts=COUNTS,
        errors={},
        skipped={},
        statuses={200: 1, 503: 1},
        warc_files=(),
        state_dir="/tmp/x",
        finished=False,
        stop_reason=None,
        observed=obs.summary(T0 + 1, COUNTS),
    )


def test_the_snapshot_keeps_its_schema_and_names_the_verdict() -> None:
    snap = snapshot_json(snapshot(observed()), T0 + 1)
    assert schema_errors(snap) == []
    assert snap["verdict"] == "politeness-bound"  # 5 queued, none ready
    assert snap["waiting_by_source"]["crawl_delay"] == 1
    assert snap["waiting_by_source"]["min_delay"] == 0  # every source is named
    assert schema_errors({**snap, "extra": 1}) == ["snapshot: unknown extra"]


def test_the_terminal_shows_the_verdict_and_top_reasons() -> None:
    assert format_waiting(snapshot(observed())) == (
        "politeness-bound: Retry-After 1, Crawl-delay 1"
    )


def test_merged_observations_sum() -> None:
    one = observed().summary(T0 + 1, COUNTS)
    merged = merge_observed([one, one], COUNTS)
    assert merged["fetches"] == {"2xx": 2, "503": 2}
    assert merged["fetch_duration"]["count"] == 4
    assert len(merged["hosts"]) == 2 * len(one["hosts"])


def test_metrics_follow_the_conventions() -> None:
    snap = snapshot_json(snapshot(observed()), T0 + 1)
    text = metrics_text(lambda: snap).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["courtly_fetches"].type == "counter"
    fetches = {s.labels["status_class"]: s.value for s in families["courtly_fetches"].samples}
    assert fetches == {"2xx": 1.0, "503": 1.0}
    delay = families["courtly_host_delay_seconds"]
    assert delay.type == "histogram"
    sources = {s.labels["delay_source"] for s in delay.samples}
    assert sources == {"crawl_delay", "retry_after"}
    for family in families.values():
        assert family.name.startswith("courtly_")
        for sample in family.samples:
            assert not {"host", "url"} & set(sample.labels)
            if family.type == "counter":
                assert sample.name.endswith("_total")
    assert metrics_text(lambda: None) == b""


def test_a_partitioned_state_directory_is_read_and_merged(tmp_path: Path) -> None:
    snap = snapshot_json(snapshot(observed()), T0 + 1)
    for i in range(2):
        part = tmp_path / f"part-{i}-of-2"
        part.mkdir()
        (part / "status.json").write_text(json.dumps({"snapshot": snap}), encoding="utf-8")
    merged = FileSource(tmp_path).latest()
    assert merged is not None and schema_errors(merged) == []
    assert merged["pages"] == 2 * snap["pages"]
    assert merged["frontier"]["queued"] == 2 * snap["frontier"]["queued"]
    assert merged["fetches"] == {"2xx": 2, "503": 2}
    assert merged["waiting_by_source"]["crawl_delay"] == 2
    assert merged["statuses"] == {"200": 2, "503": 2}


def test_status_json_holds_the_status_record_with_the_configuration_encoded_once(
    tmp_path: Path,
) -> None:
    seeds = [f"http://h{i}.test/" for i in range(50)]
    identity: dict[str, object] = {"seeds": seeds, "min_delay_s": 1.0}
    path = tmp_path / "status.json"
    status = StatusFile(path, identity, lambda: T0 + 1)
    snap = snapshot(observed())
    status.write(snap)
    assert json.loads(path.read_text()) == json.loads(
        json.dumps(status_record(snap, identity, T0 + 1))
    )
    seeds.append("http://late.test/")  # encoded at the start: not in the file
    status.write(snap)
    config = json.loads(path.read_text())["config"]
    assert len(config["seeds"]) == 50
    assert config["seeds_total"] == 50


def test_status_json_lists_the_first_seeds_and_their_number_whatever_their_count(
    tmp_path: Path,
) -> None:
    """The file is rewritten at every tick: its size must not grow with the seed list."""
    snap = snapshot(observed())
    sizes = []
    for count in (LISTED_SEEDS + 1, 100_000):
        seeds = [f"http://h{i}.test/" for i in range(count)]
        path = tmp_path / f"status-{count}.json"
        StatusFile(path, {"seeds": seeds, "min_delay_s": 1.0}, lambda: T0 + 1).write(snap)
        config = json.loads(path.read_text())["config"]
        assert config["seeds"] == seeds[:LISTED_SEEDS]
        assert config["seeds_total"] == count
        assert config["min_delay_s"] == 1.0
        sizes.append(path.stat().st_size)
    # the two files differ only in the digits of the count
    assert sizes[1] - sizes[0] == len(str(100_000)) - len(str(LISTED_SEEDS + 1))

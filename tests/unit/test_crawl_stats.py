"""The crawl's counters keep, beside each error count, the first message of its kind."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from courtly.crawl.records import CrawlSnapshot
from courtly.crawl.stats import CrawlStats
from courtly.events import AttemptFailed, FetchDone
from courtly.frontier.records import FrontierCounts
from courtly.parallel.aggregate import merge_snapshots


def test_the_first_message_of_each_error_kind_is_kept_beside_its_count() -> None:
    stats = CrawlStats()
    stats.notify(FetchDone(1.0, "a.test", None, "dns", 0.1, 0, "a.test: no such name"))
    stats.notify(FetchDone(2.0, "b.test", None, "dns", 0.1, 0, "b.test: no such name"))
    stats.notify(FetchDone(3.0, "c.test", None, "timeout", 0.1, 0))  # no words: none kept
    stats.notify(AttemptFailed(4.0, "d.test", "robots_unreachable", "http://d.test/robots.txt: x"))
    stats.notify(AttemptFailed(5.0, "e.test", "http_503"))
    assert stats.errors == {"dns": 2, "timeout": 1, "robots_unreachable": 1, "http_503": 1}
    assert stats.error_examples == {
        "dns": "a.test: no such name",
        "robots_unreachable": "http://d.test/robots.txt: x",
    }


def test_partitions_examples_merge_with_the_first_partitions_first() -> None:
    counts = FrontierCounts(*([0] * 11))
    base = CrawlSnapshot(0.0, 0, 0.0, 0, 0, 0, 0, counts, {}, {}, {}, (), "S", True, None)
    one = replace(base, errors={"dns": 1}, error_examples={"dns": "one"})
    two = replace(
        base, errors={"dns": 1, "connect": 2}, error_examples={"dns": "two", "connect": "c"}
    )
    merged = merge_snapshots([one, two], Path("S"))
    assert merged.errors == {"dns": 2, "connect": 2}
    assert merged.error_examples == {"dns": "one", "connect": "c"}

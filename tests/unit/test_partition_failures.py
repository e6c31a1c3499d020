"""How a partitioned crawl words its partitions' failures (``failure_details``)."""

from __future__ import annotations

from pathlib import Path

from courtly.parallel.supervisor import failure_details
from courtly.write_failure import RESUME_HINT


def test_partitions_that_failed_alike_are_named_once_together() -> None:
    root = Path("st")
    locked = ": the state file is in use by another process"
    errors = {i: f"st/part-{i}-of-3/frontier.sqlite3{locked}" for i in range(3)}
    assert failure_details(errors, root, 3) == (
        f"partitions 0, 1, 2: st/part-*-of-3/frontier.sqlite3{locked}"
    )


def test_different_failures_are_each_said_with_their_own_partition() -> None:
    root = Path("/data/crawl")
    errors = {
        1: f"/data/crawl/part-1-of-2/warc: no space left on device; {RESUME_HINT}",
        0: "/data/crawl/part-0-of-2/frontier.sqlite3: the state file is corrupt",
    }
    assert failure_details(errors, root, 2) == (
        "partition 0: /data/crawl/part-0-of-2/frontier.sqlite3: the state file is corrupt; "
        "partition 1: /data/crawl/part-1-of-2/warc: no space left on device"
    )


def test_a_message_naming_no_directory_is_grouped_as_it_is() -> None:
    errors = {0: "ended by signal 9", 1: "ended by signal 9", 2: "exit code 1"}
    assert failure_details(errors, Path("s"), 3) == (
        "partitions 0, 1: ended by signal 9; partition 2: exit code 1"
    )

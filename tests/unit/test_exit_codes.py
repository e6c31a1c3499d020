"""A crawl's exit code follows how it ended; the summary never suggests what cannot work."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from courtly.cli.crawl_command import _export_command
from courtly.config import CrawlConfig
from courtly.crawl import CrawlSnapshot
from courtly.exit_codes import STOP_REASONS, ExitCode, exit_code_for, stop_reason_words
from courtly.frontier.records import FrontierCounts
from courtly.progress import format_summary

NONE = CrawlSnapshot(
    elapsed_s=1.0,
    pages=0,
    pages_per_s=0.0,
    robots_fetches=0,
    bytes_received=0,
    redirects=0,
    in_flight=0,
    counts=FrontierCounts(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    errors={},
    skipped={},
    statuses={},
    warc_files=(),
    state_dir="S",
    finished=True,
    stop_reason="done",
)
SOME = replace(NONE, pages=3, robots_fetches=1, statuses={200: 3})
TRIED = replace(NONE, robots_fetches=1, errors={"robots_unreachable": 1})


@pytest.mark.parametrize(
    ("snapshot", "code"),
    [
        (SOME, ExitCode.DONE),
        (NONE, ExitCode.DONE),  # a complete crawl resumed: nothing to try
        (TRIED, ExitCode.NOTHING_FETCHED),
        (replace(NONE, stop_reason="nothing_fetchable"), ExitCode.NOTHING_FETCHED),
        (replace(SOME, stop_reason="max_time"), ExitCode.LIMIT),
        (replace(SOME, stop_reason="max_pages"), ExitCode.LIMIT),
        (replace(TRIED, stop_reason="max_time"), ExitCode.NOTHING_FETCHED),
        (replace(SOME, stop_reason="signal"), ExitCode.SIGNAL),
        (replace(TRIED, stop_reason="aborted"), ExitCode.SIGNAL),
        (replace(SOME, stop_reason="error"), ExitCode.FAILED),
        # one process of a shared crawl whose others fetched the pages
        (replace(TRIED, others_fetched=True), ExitCode.DONE),
        (replace(TRIED, others_fetched=True, stop_reason="max_time"), ExitCode.LIMIT),
    ],
)
def test_the_exit_code_follows_the_outcome(snapshot: CrawlSnapshot, code: ExitCode) -> None:
    assert exit_code_for(snapshot) is code


def test_the_codes_are_distinct_and_refused_input_keeps_clicks_usage_code() -> None:
    assert len({int(code) for code in ExitCode}) == len(ExitCode)
    assert int(ExitCode.REFUSED) == 2 and int(ExitCode.DONE) == 0


def test_every_stop_reason_has_words() -> None:
    for reason, words in STOP_REASONS.items():
        assert stop_reason_words(reason) == words and "_" not in words
    assert stop_reason_words(None) == "not stopped"


def test_a_memory_crawl_does_not_suggest_an_export() -> None:
    assert format_summary(SOME).startswith("crawl ended after 1.0 s: done: nothing left to fetch")
    assert "courtly export --state S" in format_summary(SOME)
    summary = format_summary(SOME, catalogue_kept=False)
    assert "courtly export" not in summary and "--store memory" in summary


def test_a_shared_crawl_suggests_the_export_that_reads_the_whole_crawl() -> None:
    """A crawl on a Redis store keeps its catalogue in Redis, not in its state directory."""
    config = CrawlConfig(
        state_dir=Path("S"),
        user_agent="courtly-test/1.0 (+https://example.invalid/bot)",
        seeds=("http://a.test/",),
        store="redis://:secret@127.0.0.1:6379/0",
        crawl_name="shop",
    )
    summary = format_summary(SOME, export=_export_command(config))
    line = next(line for line in summary.splitlines() if "catalogue" in line)
    assert "courtly export --store redis://:***@127.0.0.1:6379/0 --crawl-name shop" in line
    assert "secret" not in summary and "--state S" not in line
    assert _export_command(replace(config, store="sqlite")) is None

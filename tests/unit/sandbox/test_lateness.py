"""Lateness from the request log: each request against the host's previous one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtly.sandbox import (
    RequestRecord,
    SandboxTruth,
    lateness,
    lateness_summary,
)
from tests.unit.sandbox.conftest import PORT, T0, host_with_robots, small_truth


def _rec(
    host: str, start: float, end: float, status: int = 200, retry_after_s: float | None = None
) -> RequestRecord:
    return RequestRecord(
        start_at=T0 + start,
        end_at=T0 + end,
        host=host,
        ip="127.0.0.2",
        port=PORT,
        path=f"/p/{start}.html",
        status=status,
        ua="courtly/0.1 (+mailto:t@example.org)",
        bytes=100,
        conn=1,
        retry_after_s=retry_after_s,
    )


def test_lateness_counts_from_the_end_of_the_previous_response(truth: SandboxTruth) -> None:
    host = host_with_robots(truth, "rules")
    rows = lateness(
        [_rec(host, 0.0, 0.2), _rec(host, 1.25, 1.3), _rec(host, 2.3, 2.4)],
        truth=truth,
        min_delay_s=1.0,
    )
    assert [round(row.late_s, 6) for row in rows] == [0.05, 0.0]
    assert all(row.required_s == 1.0 for row in rows)


def test_the_required_gap_takes_retry_after_crawl_delay_and_slow_fetches(
    truth: SandboxTruth,
) -> None:
    delayed = host_with_robots(truth, "crawl_delay")
    crawl_delay = truth.crawl_delay_s(delayed, "courtly")
    assert crawl_delay > 0.05
    plain = host_with_robots(truth, "rules")
    rows = lateness(
        [
            _rec(plain, 0.0, 0.1, status=429, retry_after_s=3.0),
            _rec(plain, 3.1, 3.5),  # a slow answer: 2 x 0.4 s
            _rec(plain, 4.5, 4.6),
            _rec(delayed, 0.0, 0.01),
            _rec(delayed, 0.01 + crawl_delay, 0.02 + crawl_delay),
        ],
        truth=truth,
        min_delay_s=0.05,
        delay_factor=2.0,
    )
    required = {(row.record.host, round(row.record.start_at - T0, 3)): row for row in rows}
    assert required[(plain, 3.1)].required_s == 3.0
    assert required[(plain, 4.5)].required_s == pytest.approx(0.8)
    assert required[(plain, 4.5)].late_s == pytest.approx(0.2)
    after_delay = required[(delayed, round(0.01 + crawl_delay, 3))]
    assert after_delay.required_s == crawl_delay
    assert after_delay.late_s == pytest.approx(0.0, abs=1e-6)


@given(st.lists(st.tuples(st.floats(0, 5), st.floats(0, 2)), min_size=1, max_size=20))
def test_lateness_is_start_less_earliest_allowed_start(gaps: list[tuple[float, float]]) -> None:
    world_truth = small_truth()
    at, records = 0.0, []
    for gap, duration in gaps:
        records.append(_rec("unknown.test", at, at + duration))
        at += duration + gap
    rows = lateness(records, truth=world_truth, min_delay_s=1.0)
    assert len(rows) == len(records) - 1
    for row in rows:
        earliest = row.previous.end_at + row.required_s
        assert row.late_s == pytest.approx(row.record.start_at - earliest, abs=1e-6)
        assert row.required_s == 1.0
    summary = lateness_summary(rows)
    assert summary["n"] == len(rows)
    if rows:
        assert summary["p50"] is not None and summary["p99"] is not None
        assert summary["p50"] <= summary["p99"]

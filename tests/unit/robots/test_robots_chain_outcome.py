"""The politeness outcome of a redirected robots.txt: its last request's own fetch time."""

from __future__ import annotations

import pytest

from courtly.clock import FakeClock
from courtly.errors import FetchError
from courtly.fetch.records import FetchResult
from courtly.frontier.politeness import PolitenessConfig, apply_outcome
from courtly.frontier.records import HostState
from courtly.robots import RobotsCache, authority_of, fetch_robots
from courtly.robots_lease import PacedFetcher, robots_outcome

ROBOTS = "https://example.org/robots.txt"
MOVED = "https://example.org/moved.txt"
FINAL = "https://example.org/final.txt"
UA = "courtly"
EXCHANGE_S = 0.01


class TimedFetcher:
    """Answers from a table, each exchange taking ``EXCHANGE_S`` on the fake clock; a URL
    missing from the table fails after that long."""

    def __init__(self, clock: FakeClock, table: dict[str, tuple[int, str | None]]) -> None:
        self.clock = clock
        self.table = table
        self.starts: list[float] = []

    async def fetch(self, url: str) -> FetchResult:
        started = self.clock.now()
        self.starts.append(started)
        self.clock.advance(EXCHANGE_S)
        if url not in self.table:
            raise FetchError("connect", f"nothing at {url}")
        status, location = self.table[url]
        headers = (("Location", location),) if location else ()
        body = b"User-agent: *\nDisallow:\n" if status == 200 else b""
        return FetchResult(url, status, headers, body, started, self.clock.now())


@pytest.mark.parametrize("last", ["answered", "failed"])
async def test_a_redirect_chain_is_timed_by_its_last_request_not_the_whole_chain(
    last: str,
) -> None:
    clock = FakeClock()
    politeness = PolitenessConfig(min_delay_s=1.0, delay_factor=2.0)
    table: dict[str, tuple[int, str | None]] = {ROBOTS: (301, MOVED), MOVED: (302, FINAL)}
    if last == "answered":
        table[FINAL] = (200, None)
    inner = TimedFetcher(clock, table)
    paced = PacedFetcher(inner, clock, politeness)
    fetched = await fetch_robots(paced, ROBOTS)
    # three requests, each a gap after the previous one's end
    assert [b - a for a, b in zip(inner.starts, inner.starts[1:], strict=False)] == [
        pytest.approx(EXCHANGE_S + 1.0)
    ] * 2
    now = clock.now()
    decision = RobotsCache().store(authority_of(ROBOTS), fetched, now)
    outcome = robots_outcome(
        fetched, decision, UA, now, started_at=paced.started_at, ended_at=paced.ended_at
    )
    assert outcome.ended_at == pytest.approx(inner.starts[-1] + EXCHANGE_S)
    assert outcome.elapsed_s == pytest.approx(EXCHANGE_S)  # not the chain's 2.03 s
    host = apply_outcome(HostState("example.org"), outcome, politeness)
    if last == "answered":  # the next request a minimum delay after the last one
        assert host.next_allowed_at == pytest.approx(outcome.ended_at + 1.0)
    else:  # a failure's back-off, whatever the chain took
        assert host.next_allowed_at == pytest.approx(outcome.ended_at + politeness.error_backoff_s)

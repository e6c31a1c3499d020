"""Which term set a host's next allowed time: a pure function, and apply_outcome's record."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtly.frontier.politeness import (
    PolitenessConfig,
    apply_outcome,
    delay_source,
    politeness_delay_s,
)
from courtly.frontier.records import DelaySource, HostState, Outcome, OutcomeKind

CFG = PolitenessConfig(min_delay_s=1.0, delay_factor=2.0, max_delay_s=10.0, park_after_errors=3)
T0 = 1_000.0


@pytest.mark.parametrize(
    ("fetch_s", "crawl_delay", "backoff", "retry_after", "expected"),
    [
        (0.1, None, 0.0, False, DelaySource.MIN_DELAY),
        (0.5, None, 0.0, False, DelaySource.MIN_DELAY),  # a tie goes to the floor
        (3.0, None, 0.0, False, DelaySource.FETCH_TIME),
        (100.0, None, 0.0, False, DelaySource.FETCH_TIME),  # capped, still k x fetch time
        (0.1, 5.0, 0.0, False, DelaySource.CRAWL_DELAY),
        (3.0, 5.0, 0.0, False, DelaySource.FETCH_TIME),
        (0.1, 5.0, 20.0, False, DelaySource.BACKOFF),
        (0.1, None, 20.0, True, DelaySource.RETRY_AFTER),
        (0.1, 30.0, 20.0, True, DelaySource.CRAWL_DELAY),
    ],
)
def test_delay_source_names_the_winning_term(
    fetch_s: float,
    crawl_delay: float | None,
    backoff: float,
    retry_after: bool,
    expected: DelaySource,
) -> None:
    assert delay_source(fetch_s, crawl_delay, backoff, CFG, retry_after=retry_after) is expected


@given(
    st.floats(0, 200),
    st.one_of(st.none(), st.floats(0, 500)),
    st.floats(0, 500),
)
def test_the_named_term_equals_the_gap(
    fetch_s: float, crawl_delay: float | None, backoff: float
) -> None:
    """Invariant: the term the source names is the value politeness_delay_s returns."""
    gap = politeness_delay_s(fetch_s, crawl_delay, backoff, CFG)
    source = delay_source(fetch_s, crawl_delay, backoff, CFG)
    term = {
        DelaySource.MIN_DELAY: CFG.min_delay_s,
        DelaySource.FETCH_TIME: min(CFG.delay_factor * fetch_s, CFG.max_delay_s),
        DelaySource.CRAWL_DELAY: crawl_delay,
        DelaySource.BACKOFF: backoff,
    }[source]
    assert term == gap


def test_apply_outcome_records_crawl_delay_and_status() -> None:
    state = apply_outcome(
        HostState("a.test"), Outcome.from_status(200, T0, T0 + 0.1, crawl_delay_s=4.0), CFG
    )
    assert (state.delay_source, state.last_status) == (DelaySource.CRAWL_DELAY, 200)


def test_apply_outcome_records_retry_after() -> None:
    outcome = Outcome.from_status(429, T0, T0 + 0.1, retry_after_s=30.0)
    state = apply_outcome(HostState("a.test"), outcome, CFG)
    assert (state.delay_source, state.last_status, state.error_streak) == (
        DelaySource.RETRY_AFTER,
        429,
        1,
    )


def test_apply_outcome_records_backoff_then_parking() -> None:
    state = HostState("a.test")
    sources = []
    for i in range(CFG.park_after_errors):
        outcome = Outcome(OutcomeKind.NETWORK_ERROR, T0 + i, T0 + i + 0.1)
        state = apply_outcome(state, outcome, CFG)
        sources.append(state.delay_source)
    assert sources[:-1] == [DelaySource.BACKOFF] * (CFG.park_after_errors - 1)
    assert sources[-1] is DelaySource.PARKED
    assert state.last_status is None


def test_a_deferral_is_robots_unreachable_and_an_earlier_one_changes_nothing() -> None:
    state = apply_outcome(HostState("a.test"), Outcome.deferred(T0, 60.0), CFG)
    assert state.delay_source is DelaySource.ROBOTS_UNREACHABLE
    assert state.next_allowed_at == T0 + 60.0
    assert apply_outcome(state, Outcome.deferred(T0, 5.0), CFG) == state


def test_a_later_deadline_kept_keeps_its_source() -> None:
    parked = HostState("a.test", next_allowed_at=T0 + 500, delay_source=DelaySource.PARKED)
    state = apply_outcome(parked, Outcome.from_status(200, T0, T0 + 0.1), CFG)
    assert state.next_allowed_at == T0 + 500
    assert state.delay_source is DelaySource.PARKED


def test_fast_success_is_min_delay() -> None:
    state = apply_outcome(HostState("a.test"), Outcome.from_status(200, T0, T0 + 0.1), CFG)
    assert state.delay_source is DelaySource.MIN_DELAY

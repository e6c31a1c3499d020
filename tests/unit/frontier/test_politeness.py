from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtly.frontier.politeness import (
    PolitenessConfig,
    apply_outcome,
    is_parked,
    parse_retry_after,
    politeness_delay_s,
)
from courtly.frontier.records import HostState, Outcome, OutcomeKind

CFG = PolitenessConfig(min_delay_s=1.0, delay_factor=2.0, max_delay_s=10.0)


def test_delay_is_min_delay_for_fast_fetches() -> None:
    assert politeness_delay_s(0.1, None, 0.0, CFG) == 1.0


def test_delay_grows_with_fetch_time() -> None:
    assert politeness_delay_s(3.0, None, 0.0, CFG) == 6.0


def test_delay_factor_term_is_capped_by_max_delay() -> None:
    assert politeness_delay_s(100.0, None, 0.0, CFG) == 10.0


def test_crawl_delay_is_not_capped_by_max_delay() -> None:
    assert politeness_delay_s(0.1, 600.0, 0.0, CFG) == 600.0


def test_backoff_is_not_capped_by_max_delay() -> None:
    assert politeness_delay_s(0.1, None, 120.0, CFG) == 120.0


def test_crawl_delay_below_min_delay_does_not_shorten_the_gap() -> None:
    assert politeness_delay_s(0.1, 0.2, 0.0, CFG) == 1.0


def test_config_rejects_negative_and_inverted_values() -> None:
    with pytest.raises(ValueError):
        PolitenessConfig(min_delay_s=-1)
    with pytest.raises(ValueError):
        PolitenessConfig(min_delay_s=5, max_delay_s=1)
    with pytest.raises(ValueError):
        PolitenessConfig(delay_factor=float("nan"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (" 7 ", 7.0),
        ("1.5", 1.5),
        ("", None),
        (None, None),
        ("soon", None),
        ("-3", None),
    ],
)
def test_parse_retry_after_seconds(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, 0.0) == expected


def test_parse_retry_after_http_date() -> None:
    now = 1_445_412_480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    assert parse_retry_after("Wed, 21 Oct 2015 07:30:00 GMT", now) == pytest.approx(120.0)
    assert parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now) == 0.0


def _ok(at: float, elapsed: float, status: int = 200) -> Outcome:
    return Outcome.from_status(status, at, at + elapsed)


def test_gap_is_measured_from_the_end_of_the_response() -> None:
    state = apply_outcome(HostState("h"), _ok(100.0, 0.5), CFG)
    assert state.next_allowed_at == pytest.approx(100.5 + 1.0)
    assert state.requests_made == 1
    assert state.last_fetch_s == pytest.approx(0.5)


def test_slow_server_earns_a_longer_pause() -> None:
    state = apply_outcome(HostState("h"), _ok(100.0, 4.0), CFG)
    assert state.next_allowed_at == pytest.approx(104.0 + 8.0)


def test_retry_after_sets_the_backoff() -> None:
    outcome = Outcome.from_status(429, 10.0, 10.1, retry_after_s=300.0)
    assert outcome.kind is OutcomeKind.THROTTLED
    state = apply_outcome(HostState("h"), outcome, CFG)
    assert state.next_allowed_at == pytest.approx(10.1 + 300.0)
    assert is_parked(state, CFG)


def _answers(
    state: HostState, statuses: list[int], retry_after_s: float | None, cfg: PolitenessConfig
) -> tuple[HostState, list[float]]:
    """``state`` after answers of ``statuses``, each asked at the host's next allowed
    time, and the gap each answer left (from its end)."""
    gaps = []
    t = state.next_allowed_at
    for status in statuses:
        ended = t + 0.01
        outcome = Outcome.from_status(status, t, ended, retry_after_s=retry_after_s)
        state = apply_outcome(state, outcome, cfg)
        gaps.append(round(state.next_allowed_at - ended, 9))
        t = state.next_allowed_at
    return state, gaps


def test_an_overload_window_with_retry_after_is_waited_out_exactly() -> None:
    """Five 429/503 in a row, each with ``Retry-After: 2``: the host is asked again
    after each 2 s, as the server said, and not parked (a failure streak of five
    unguided errors would park it: see the next test)."""
    state, gaps = _answers(HostState("h"), [429, 503, 429, 429, 503], 2.0, CFG)
    assert gaps == [2.0] * 5
    assert state.parks == 0 and state.error_streak == 5
    state, gaps = _answers(state, [200], None, CFG)
    assert gaps == [1.0] and state.error_streak == 0


def test_guided_throttles_park_only_after_park_after_throttles_in_a_row() -> None:
    cfg = PolitenessConfig(park_after_errors=3, park_after_throttles=6, park_s=60.0)
    state, gaps = _answers(HostState("h"), [429] * 6, 2.0, cfg)
    assert gaps == [2.0] * 5 + [60.0]
    assert state.parks == 1


def test_unguided_failures_after_guided_ones_park_at_the_error_threshold() -> None:
    cfg = PolitenessConfig(park_after_errors=3, park_after_throttles=20, park_s=60.0)
    state, _ = _answers(HostState("h"), [429, 429], 2.0, cfg)
    assert state.parks == 0
    state, gaps = _answers(state, [503], None, cfg)
    assert state.parks == 1 and gaps == [60.0]


def test_throttles_without_retry_after_park_after_park_after_errors() -> None:
    cfg = PolitenessConfig(park_after_errors=3, park_s=60.0)
    state, gaps = _answers(HostState("h"), [429, 429, 429], None, cfg)
    assert gaps == [5.0, 10.0, 60.0]
    assert state.parks == 1


def test_503_without_retry_after_backs_off_exponentially() -> None:
    state = HostState("h")
    gaps = []
    t = 0.0
    for _ in range(3):
        state = apply_outcome(state, Outcome.from_status(503, t, t), CFG)
        gaps.append(state.next_allowed_at - t)
        t = state.next_allowed_at
    assert gaps == [5.0, 10.0, 20.0]


def test_error_streak_resets_on_success_and_backoff_decays() -> None:
    state = apply_outcome(HostState("h"), Outcome(OutcomeKind.NETWORK_ERROR, 0.0, 1.0), CFG)
    assert state.error_streak == 1 and state.backoff_s == 5.0
    state = apply_outcome(state, _ok(10.0, 0.1), CFG)
    assert state.error_streak == 0
    assert state.backoff_s == 2.5
    state = apply_outcome(state, _ok(20.0, 0.1), CFG)
    assert state.backoff_s == 1.25
    state = apply_outcome(state, _ok(30.0, 0.1), CFG)
    assert state.backoff_s == 0.0


def test_latency_doubling_backs_off() -> None:
    state = HostState("h")
    t = 0.0
    for _ in range(5):
        state = apply_outcome(state, _ok(t, 0.2), CFG)
        t = state.next_allowed_at
    assert state.backoff_s == 0.0
    slow = apply_outcome(state, _ok(t, 0.5), CFG)
    assert slow.backoff_s >= 2 * CFG.min_delay_s
    assert slow.next_allowed_at - (t + 0.5) >= 2.0 - 1e-9


def test_loopback_jitter_is_not_a_latency_doubling() -> None:
    state = apply_outcome(HostState("h"), _ok(0.0, 0.001), CFG)
    state = apply_outcome(state, _ok(5.0, 0.004), CFG)
    assert state.backoff_s == 0.0


def test_failing_host_is_parked_with_growing_intervals_then_retired() -> None:
    cfg = PolitenessConfig(park_after_errors=2, park_s=60.0, retire_after_parks=3)
    state = HostState("h")
    t = 0.0
    parks_seen: list[float] = []
    for _ in range(6):  # a failing host answers, with 5xx (no answer at all: see "dead")
        state = apply_outcome(state, Outcome(OutcomeKind.SERVER_ERROR, t, t + 1.0, 500), cfg)
        if state.parks > len(parks_seen):
            parks_seen.append(state.next_allowed_at - (t + 1.0))
        t = state.next_allowed_at
    assert parks_seen == [60.0, 120.0, 240.0]
    assert state.retired == "failing"


def test_no_request_leaves_state_unchanged() -> None:
    state = HostState("h", next_allowed_at=50.0, requests_made=3)
    assert apply_outcome(state, Outcome.no_request(10.0), CFG) is state


def test_robots_crawl_delay_is_remembered() -> None:
    outcome = Outcome.from_status(200, 0.0, 0.1, crawl_delay_s=30.0)
    state = apply_outcome(HostState("h"), outcome, CFG)
    assert state.crawl_delay_s == 30.0
    later = apply_outcome(state, _ok(100.0, 0.1), CFG)
    assert later.next_allowed_at == pytest.approx(100.1 + 30.0)


def test_deferred_only_moves_the_next_allowed_time() -> None:
    state = HostState("h", next_allowed_at=10.0, error_streak=2, requests_made=7)
    held = apply_outcome(state, Outcome.deferred(20.0, 60.0), CFG)
    assert held.next_allowed_at == 80.0
    assert (held.error_streak, held.requests_made, held.parks) == (2, 7, 0)
    assert apply_outcome(held, Outcome.deferred(20.0, 1.0), CFG) is held


def test_a_host_refused_by_the_address_guard_is_retired_blocked_at_once() -> None:
    before = HostState("h", next_allowed_at=5.0, requests_made=3)
    state = apply_outcome(before, Outcome(OutcomeKind.BLOCKED, 10.0, 10.0), CFG)
    assert state.retired == "blocked"
    # nothing was sent: no counter moves
    assert (state.requests_made, state.error_streak, state.next_allowed_at) == (3, 0, 5.0)


def test_a_host_that_never_answers_is_retired_dead_after_the_bounded_attempts() -> None:
    cfg = PolitenessConfig(dead_after_failures=4, error_backoff_s=5.0)
    state = HostState("h")
    t = 0.0
    attempts: list[float] = []
    while state.retired is None:
        attempts.append(t)
        state = apply_outcome(state, Outcome(OutcomeKind.NETWORK_ERROR, t, t + 0.1), cfg)
        assert state.next_allowed_at > t + 0.1  # each retry waits out a back-off
        t = state.next_allowed_at
    assert state.retired == "dead"
    assert len(attempts) == 4
    assert [round(b - a, 6) for a, b in itertools.pairwise(attempts)] == [
        5.1,
        10.1,
        20.1,
    ]


def test_any_response_resets_the_unanswered_count() -> None:
    cfg = PolitenessConfig(dead_after_failures=2, park_after_errors=10)
    state = apply_outcome(HostState("h"), Outcome(OutcomeKind.NETWORK_ERROR, 0.0, 1.0), cfg)
    assert state.unanswered == 1
    state = apply_outcome(state, Outcome(OutcomeKind.SERVER_ERROR, 10.0, 11.0, 500), cfg)
    assert state.unanswered == 0
    state = apply_outcome(state, Outcome(OutcomeKind.NETWORK_ERROR, 20.0, 21.0), cfg)
    assert (state.unanswered, state.retired) == (1, None)
    state = apply_outcome(state, Outcome(OutcomeKind.NETWORK_ERROR, 30.0, 31.0), cfg)
    assert state.retired == "dead"


_KINDS = st.sampled_from(
    [
        OutcomeKind.SUCCESS,
        OutcomeKind.THROTTLED,
        OutcomeKind.SERVER_ERROR,
        OutcomeKind.NETWORK_ERROR,
        OutcomeKind.NO_REQUEST,
        OutcomeKind.DEFERRED,
    ]
)


@given(kinds=st.lists(_KINDS, max_size=40), dead_after=st.integers(1, 6))
def test_dead_means_exactly_that_many_unanswered_requests_in_a_row(
    kinds: list[OutcomeKind], dead_after: int
) -> None:
    cfg = PolitenessConfig(dead_after_failures=dead_after, park_after_errors=1000)
    state = HostState("h")
    run = 0
    t = 0.0
    for kind in kinds:
        state = apply_outcome(state, Outcome(kind, t, t + 0.5, retry_after_s=1.0), cfg)
        if kind is OutcomeKind.NETWORK_ERROR:
            run += 1
        elif kind not in (OutcomeKind.NO_REQUEST, OutcomeKind.DEFERRED):
            run = 0
        if run >= dead_after:
            assert state.retired == "dead"
            return
        assert state.retired is None
        t = max(t + 1.0, state.next_allowed_at)

"""The revisit state machine: what counts as a change, how a visit is archived, scheduling."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtly.frontier.recrawl import DAY_S, LaneSchedule
from courtly.frontier.revisit import (
    Archive,
    RevisitState,
    Visit,
    estimate_rate,
    observe,
    schedule,
)

LANE = LaneSchedule(min_s=600.0, max_s=30 * DAY_S, default_s=DAY_S)
T0 = 1_800_000_000.0


def visit(
    state: RevisitState, at: float, status: int | None, body: str, text: int, **h: str
) -> Visit:
    headers = tuple((k.replace("_", "-"), v) for k, v in h.items())
    return observe(
        state,
        status=status,
        headers=headers,
        at=at,
        body_digest=f"sha1:{body}",
        text_digest=text,
        simhash=text,
    )


def test_first_visit_is_not_a_change_and_is_a_full_response() -> None:
    v = visit(RevisitState("http://a/"), T0, 200, "A", 1)
    assert not v.changed and v.archive is Archive.RESPONSE
    assert v.state.visits == 1 and v.state.comparisons == 0


def test_a_304_is_unchanged_keeps_the_digests_and_is_a_server_not_modified_revisit() -> None:
    s = visit(RevisitState("http://a/"), T0, 200, "A", 1, ETag='"1"').state
    v = visit(s, T0 + 100, 304, "", 0, ETag='"1"')
    assert not v.changed and v.archive is Archive.NOT_MODIFIED
    assert v.state.body_digest == "sha1:A" and v.state.text_digest == 1
    assert v.state.unchanged_s == 100 and v.state.comparisons == 1


def test_same_bytes_is_an_identical_payload_revisit_same_text_new_bytes_a_response() -> None:
    s = visit(RevisitState("http://a/"), T0, 200, "A", 1).state
    same = visit(s, T0 + 10, 200, "A", 1)
    assert not same.changed and same.archive is Archive.IDENTICAL_DIGEST
    clock_only = visit(s, T0 + 10, 200, "B", 1)
    assert not clock_only.changed and clock_only.archive is Archive.RESPONSE


def test_a_text_change_and_a_status_flip_are_changes_transient_errors_are_not() -> None:
    s = visit(RevisitState("http://a/"), T0, 200, "A", 1).state
    changed = visit(s, T0 + 50, 200, "B", 2)
    assert changed.changed and changed.state.changes == 1
    assert changed.state.changed_ring == (50.0,) and changed.state.last_change_at == T0 + 50
    assert visit(s, T0 + 50, 404, "A", 1).changed
    for status in (None, 429, 503):
        transient = visit(s, T0 + 50, status, "B", 2)
        assert not transient.changed and transient.state.comparisons == s.comparisons


@given(
    st.lists(
        st.tuples(st.floats(1.0, 10 * DAY_S), st.sampled_from([200, 304, 404, 503, None])),
        max_size=30,
    ),
    st.integers(0, 3),
)
def test_counts_stay_consistent_and_next_due_is_never_in_the_past(
    steps: list[tuple[float, int | None]], text_seed: int
) -> None:
    state = RevisitState("http://a/")
    now = T0
    for index, (gap, status) in enumerate(steps):
        now += gap
        text = (index * text_seed) % 3
        state = visit(state, now, status, str(text), text).state
        state = schedule(state, now=now, mu=1e4, lane=LANE, jitter=1.0)
        assert 0 <= state.changes <= state.comparisons <= state.visits
        assert len(state.changed_ring) <= min(state.changes, 32)
        assert state.next_due_at is not None and state.next_due_at >= now + LANE.min_s
        assert state.interval_s is not None and LANE.min_s <= state.interval_s <= LANE.max_s


def test_a_fast_page_is_revisited_sooner_than_a_slow_one_but_not_proportionally() -> None:
    def run(changes_every: int) -> float:
        state = RevisitState("http://a/")
        now = T0
        for index in range(60):
            now += 3600.0
            text = index // changes_every
            state = visit(state, now, 200, str(text), text).state
            state = schedule(state, now=now, mu=1e5, lane=LANE)
        assert state.interval_s is not None
        return state.interval_s

    fast, slow = run(1), run(16)
    assert fast < slow
    assert slow / fast < 16


def test_the_estimate_of_a_long_history_stays_near_the_true_rate() -> None:
    # 240 daily visits of a page changing at λ = ln 2 a day (seen changed at every other
    # visit, about 120 changes): the ring keeps 32 changed intervals, and only their share
    # of the unchanged time may be set against them. All of it would give about λ/3.
    rng = random.Random(11)
    rate = math.log(2) / DAY_S
    estimates = []
    for _ in range(40):
        state = RevisitState("http://a/")
        now, text, next_change = T0, 0, T0 + rng.expovariate(rate)
        for _ in range(240):
            now += DAY_S
            while next_change <= now:
                text += 1
                next_change += rng.expovariate(rate)
            state = visit(state, now, 200, str(text), text).state
        assert state.changes > len(state.changed_ring) == 32
        estimates.append(estimate_rate(state, LANE))
    assert abs(statistics.median(estimates) / rate - 1) < 0.1


def test_a_trusted_last_modified_keeps_the_binary_estimate_until_a_change_is_seen() -> None:
    # An honest Last-Modified that never moved in 5 daily comparisons: its own estimator
    # is 0 then (it would send the page, doubling, to the longest interval), so the
    # binary one stands: a small positive rate, an interval short of the cap.
    lm = "Tue, 01 Dec 2026 10:00:00 GMT"
    state = visit(RevisitState("http://a/"), T0, 200, "A", 1, Last_Modified=lm).state
    for day in range(1, 6):
        state = visit(state, T0 + day * DAY_S, 200, "A", 1, Last_Modified=lm).state
    assert state.validators.lm_trusted and state.comparisons == 5 and state.changes == 0
    rate = estimate_rate(state, LANE)
    assert 0 < rate < 1 / DAY_S
    scheduled = schedule(state, now=T0 + 5 * DAY_S, mu=1e5, lane=LANE)
    assert scheduled.interval_s is not None and scheduled.interval_s < LANE.max_s
    # once a change is seen with its Last-Modified, its estimator takes over: 1 change in
    # the observed time (the time after the change plus the unchanged intervals)
    new_lm = "Sun, 06 Dec 2026 10:00:00 GMT"
    at = T0 + 6 * DAY_S
    changed = visit(state, at, 200, "B", 2, Last_Modified=new_lm).state
    assert changed.lm_changes == changed.changes == 1
    observed = changed.lm_observed_s + changed.unchanged_s
    n = changed.comparisons
    expected = -1 / (n * math.log(1 - 1 / n)) / observed
    assert estimate_rate(changed, LANE) == pytest.approx(expected, rel=1e-12)


def test_intervals_run_from_the_copy_compared_with_not_a_failed_attempt() -> None:
    s = visit(RevisitState("http://a/"), T0, 200, "A", 1, ETag='"1"').state
    for status in (None, 429, 503):  # a transient failure 60 s later
        failed = visit(s, T0 + 60, status, "", 0).state
        assert failed.last_fetch_at == T0 + 60 and failed.judged_at == T0
        changed = visit(failed, T0 + 100, 200, "B", 2).state
        assert changed.changed_ring == (100.0,) and changed.judged_at == T0 + 100
        unchanged = visit(failed, T0 + 100, 304, "", 0, ETag='"1"').state
        assert unchanged.unchanged_s == 100.0 and unchanged.judged_at == T0 + 100
        # the next due time counts the interval from the copy too (not before now + floor)
        due = schedule(failed, now=T0 + 60, mu=1e5, lane=LANE).next_due_at
        assert due is not None and due == max(T0 + 60 + LANE.min_s, T0 + LANE.default_s)

"""The verdict is a pure function of the queue and the due hosts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from courtly.observe.verdict import Verdict, verdict


def test_nothing_queued_is_starved_whatever_is_ready() -> None:
    assert verdict(queued=0, hosts_ready=0) is Verdict.STARVED
    assert verdict(queued=0, hosts_ready=3) is Verdict.STARVED


def test_queued_with_due_hosts_is_capacity_bound() -> None:
    assert verdict(queued=10, hosts_ready=1) is Verdict.CAPACITY_BOUND


def test_queued_with_no_due_host_is_politeness_bound() -> None:
    assert verdict(queued=10, hosts_ready=0) is Verdict.POLITENESS_BOUND


@given(st.integers(0, 10**6), st.integers(0, 10**5))
def test_exactly_one_verdict_and_it_follows_the_rule(queued: int, ready: int) -> None:
    result = verdict(queued=queued, hosts_ready=ready)
    expected = (
        Verdict.STARVED
        if queued == 0
        else Verdict.CAPACITY_BOUND
        if ready
        else Verdict.POLITENESS_BOUND
    )
    assert result is expected

"""Leases held per address: the limit, the give-back wait and the bookkeeping."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from courtly.fetch.address_holds import (
    GIVE_BACK_MAX_S,
    AddressHolds,
    give_back_wait_s,
    holds_per_address,
    may_hold,
)
from courtly.frontier.politeness import PolitenessConfig, apply_outcome
from courtly.frontier.records import DelaySource, HostState, Outcome


def test_a_process_holds_its_places_and_as_many_waiting() -> None:
    assert holds_per_address(2) == 4
    assert holds_per_address(3) == 6
    assert holds_per_address(1) == 2


@given(
    mean_s=st.one_of(st.none(), st.floats(0.0, 1e6)),
    ahead_s=st.floats(0.0, 1.0),
)
def test_a_host_given_back_waits_past_the_lease_ahead_window(
    mean_s: float | None, ahead_s: float
) -> None:
    wait_s = give_back_wait_s(mean_s, ahead_s)
    # beyond the caller's lease-ahead window: its next lease step cannot take it at once
    assert wait_s >= 2 * ahead_s
    assert wait_s <= max(GIVE_BACK_MAX_S, 2 * ahead_s)


def test_the_wait_follows_the_address_s_hold_time() -> None:
    assert give_back_wait_s(None, 0.05) == 0.1
    assert give_back_wait_s(0.01, 0.05) == 0.1  # fast answers: the floor
    assert give_back_wait_s(3.0, 0.05) == 1.5  # about when a waiting lease has its place
    assert give_back_wait_s(600.0, 0.05) == GIVE_BACK_MAX_S


def test_more_only_while_the_address_is_not_busy() -> None:
    assert may_hold(held=3, due=3, waiting=5, per_ip=2)
    assert not may_hold(held=4, due=0, waiting=1, per_ip=2)  # requests wait there
    assert not may_hold(held=4, due=4, waiting=0, per_ip=2)  # they will wait
    # leases taken ahead on an address where nothing waits: they start at their time
    assert may_hold(held=9, due=3, waiting=0, per_ip=2)


def test_holds_count_per_address_up_to_the_limit() -> None:
    holds = AddressHolds(per_ip=2)
    for _ in range(4):
        assert holds.room("10.0.0.1", now=10.0, waiting=0)
        holds.take("10.0.0.1", due_at=10.0)
    assert not holds.room("10.0.0.1", now=10.0, waiting=0)
    assert holds.room("10.0.0.2", now=10.0, waiting=0)  # another address has its own count
    holds.give("10.0.0.1", due_at=10.0, held_s=0.4)
    assert holds.room("10.0.0.1", now=10.0, waiting=2) and holds.held("10.0.0.1") == 3
    assert holds.wait_s("10.0.0.1", 0.05) == 0.2
    assert holds.wait_s("10.0.0.2", 0.05) == 0.1  # no hold ended there yet


def test_a_lease_taken_ahead_counts_from_its_host_s_time() -> None:
    holds = AddressHolds(per_ip=1)
    holds.take("a", due_at=10.0)
    holds.take("a", due_at=10.04)  # leased ahead: it starts at 10.04 unless the address is full
    holds.take("a", due_at=10.05)
    assert holds.held("a") == 3
    assert holds.due("a", now=10.0) == 1 and holds.room("a", now=10.0, waiting=0)
    assert not holds.room("a", now=10.0, waiting=1)  # a request waits at the address
    assert holds.due("a", now=10.04) == 2 and not holds.room("a", now=10.04, waiting=0)
    holds.give("a", due_at=10.0, held_s=0.05)
    assert holds.due("a", now=10.05) == 2 and holds.held("a") == 2


def test_the_mean_hold_time_moves_towards_new_holds() -> None:
    holds = AddressHolds(per_ip=1)
    holds.take("a", 0.0)
    holds.give("a", 0.0, 1.0)
    holds.take("a", 5.0)
    holds.give("a", 5.0, 11.0)
    assert holds.held("a") == 0
    assert holds.wait_s("a", 0.0) == (1.0 + 0.2 * 10.0) / 2


def test_a_host_given_back_for_its_address_moves_only_its_time() -> None:
    cfg = PolitenessConfig(min_delay_s=0.25)
    state = HostState("a.test", next_allowed_at=100.0, requests_made=3, error_streak=0)
    after = apply_outcome(state, Outcome.deferred(100.0, 0.5, DelaySource.ADDRESS_BUSY), cfg)
    assert after.next_allowed_at == 100.5
    assert after.delay_source is DelaySource.ADDRESS_BUSY
    assert after.requests_made == 3 and after.error_streak == 0 and after.backoff_s == 0.0
    # never earlier than the host's own time (a lease taken ahead of it)
    later = HostState("a.test", next_allowed_at=101.0)
    kept = apply_outcome(later, Outcome.deferred(100.0, 0.5, DelaySource.ADDRESS_BUSY), cfg)
    assert kept == later

"""The per-IP gate: never more than the cap in flight per address, FIFO among the waiting."""

from __future__ import annotations

from collections import defaultdict, deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtly.integrations.scrapy.gate import IpGate

IPS = ("10.0.0.1", "10.0.0.2", "10.0.0.3")


@given(
    cap=st.integers(1, 3),
    ops=st.lists(st.tuples(st.booleans(), st.sampled_from(IPS)), max_size=200),
)
def test_the_cap_holds_and_waiting_items_go_in_order(cap: int, ops: list[tuple[bool, str]]) -> None:
    gate: IpGate[int] = IpGate(cap)
    running: dict[str, int] = defaultdict(int)
    waiting: dict[str, deque[int]] = defaultdict(deque)
    for n, (is_admit, ip) in enumerate(ops):
        if is_admit:
            if gate.admit(ip, n):
                running[ip] += 1
            else:
                waiting[ip].append(n)
        elif running[ip]:
            successor = gate.release(ip)
            if waiting[ip]:
                assert successor == waiting[ip].popleft()  # first come, first served
            else:
                assert successor is None
                running[ip] -= 1
        assert gate.in_flight(ip) == running[ip] <= cap
        assert gate.waiting() == sum(len(q) for q in waiting.values())
        # Nobody waits while there is room at their address.
        assert all(running[a] == cap for a, q in waiting.items() if q)


def test_drain_empties_the_waiting_lists() -> None:
    gate: IpGate[str] = IpGate(1)
    assert gate.admit("a", "first")
    assert not gate.admit("a", "second")
    assert not gate.admit("a", "third")
    assert gate.drain_waiting() == ["second", "third"]
    assert gate.waiting() == 0
    assert gate.release("a") is None
    assert gate.in_flight("a") == 0


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError):
        IpGate(0)


def test_a_closed_gate_admits_nothing_and_keeps_the_items_for_the_drain() -> None:
    gate: IpGate[str] = IpGate(1)
    assert gate.admit("a", "first")
    assert not gate.admit("a", "second")
    gate.close()
    assert gate.release("a") is None  # the place frees: "second" is not handed on
    assert gate.in_flight("a") == 0
    assert not gate.admit("b", "elsewhere")  # room there, but the gate is closed
    assert sorted(gate.drain_waiting()) == ["elsewhere", "second"]
    assert gate.in_flight("b") == 0

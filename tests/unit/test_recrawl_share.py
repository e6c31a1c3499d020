"""--recrawl-share: revisits never take more than their share while discovery waits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from courtly.recrawl import revisit_allowance


@given(st.floats(0.0, 0.99), st.integers(0, 10_000), st.integers(0, 10_000))
def test_allowance_keeps_revisits_within_the_share(
    share: float, admitted: int, others: int
) -> None:
    fetches = admitted + others
    k = revisit_allowance(share, admitted, fetches, discovery_waiting=True)
    assert k >= 0
    if k and admitted:
        assert admitted + k <= share * (fetches + k) + 1e-6
    if k and not admitted:  # the first revisit may always start
        assert k == 1 or k <= share * (fetches + k) + 1e-6


@given(st.floats(0.0, 1.0), st.integers(0, 10_000), st.integers(0, 10_000))
def test_with_no_discovery_waiting_the_idle_share_is_lent(
    share: float, admitted: int, others: int
) -> None:
    assert revisit_allowance(share, admitted, admitted + others, discovery_waiting=False) > 0


def test_a_share_of_zero_admits_no_revisit_while_discovery_waits() -> None:
    assert revisit_allowance(0.0, 0, 100, discovery_waiting=True) == 0
    assert revisit_allowance(0.5, 10, 10, discovery_waiting=True) == 0  # 10 of 10 already
    assert revisit_allowance(0.5, 10, 30, discovery_waiting=True) == 10  # 20 of 40 then

"""Shard affinity across a Redis crawl's fetchers (``courtly.store.redis.affinity``)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from courtly.store.redis.affinity import held_back_until, owned_shards

members = st.lists(st.text("0123456789abcdef", min_size=4, max_size=16), min_size=1, max_size=8)


@given(members, st.integers(1, 300))
def test_every_shard_has_exactly_one_owner_and_all_agree(ids: list[str], shards: int) -> None:
    everyone = sorted(set(ids))
    splits = [owned_shards(me, everyone, shards) for me in everyone]
    assert sum(len(mine) for mine in splits) == shards
    assert frozenset().union(*splits) == frozenset(range(shards))
    # a member's own view does not depend on whether it lists itself, or on the order
    for me, mine in zip(everyone, splits, strict=True):
        others = [m for m in reversed(everyone) if m != me]
        assert owned_shards(me, others, shards) == mine


@given(members, st.text("ghijklmnop", min_size=4, max_size=8), st.integers(1, 300))
def test_a_member_joining_takes_shards_only_for_itself(
    ids: list[str], newcomer: str, shards: int
) -> None:
    everyone = sorted(set(ids))
    with_newcomer = [*everyone, newcomer]
    for me in everyone:
        before = owned_shards(me, everyone, shards)
        after = owned_shards(me, with_newcomer, shards)
        assert after <= before  # no shard moves between the members that stay
    taken = owned_shards(newcomer, everyone, shards)
    lost = frozenset().union(
        *(
            owned_shards(m, everyone, shards) - owned_shards(m, with_newcomer, shards)
            for m in everyone
        )
    )
    assert lost == taken


def test_a_lone_fetcher_owns_every_shard_and_the_split_is_near_even() -> None:
    assert owned_shards("a1", [], 64) == frozenset(range(64))
    assert owned_shards("a1", ["a1"], 64) == frozenset(range(64))
    four = ["m1", "m2", "m3", "m4"]
    counts = [len(owned_shards(m, four, 4096)) for m in four]
    assert sum(counts) == 4096 and min(counts) > 900  # about 1,024 each


def test_another_fetchers_shard_waits_out_the_grace_unless_aged() -> None:
    assert held_back_until(True, False, 1000.0, 500.0) is None  # mine: at once
    assert held_back_until(False, True, 1000.0, 500.0) is None  # aged: anyone, at once
    assert held_back_until(False, False, 1000.0, 500.0) == 1500.0  # due at 1,000 ms
    assert held_back_until(False, False, None, 500.0) == math.inf  # no offer: its owner's
    assert held_back_until(True, False, None, 500.0) is None

from __future__ import annotations

import random
from collections import Counter

import pytest

from courtly.frontier.front import FrontQueues, default_level_weights


def test_default_weights_fall_geometrically() -> None:
    assert default_level_weights(3) == (4.0, 2.0, 1.0)
    with pytest.raises(ValueError):
        default_level_weights(0)


def test_empty_front_pops_nothing() -> None:
    front: FrontQueues[str] = FrontQueues((1.0,), random.Random(1))
    assert front.pop() is None and len(front) == 0


def test_fifo_within_a_level() -> None:
    front: FrontQueues[int] = FrontQueues((4.0, 2.0, 1.0), random.Random(1))
    for i in range(10):
        front.push(1, i)
    assert [front.pop() for _ in range(10)] == [(1, i) for i in range(10)]


def test_bias_toward_high_levels_without_starvation() -> None:
    front: FrontQueues[int] = FrontQueues((8.0, 4.0, 2.0, 1.0), random.Random(7), max_skips=20)
    for i in range(4000):
        front.push(i % 4, i)
    served = Counter(level for level, _ in (front.pop() or (0, 0) for _ in range(2000)))
    assert served[0] > served[1] > served[2] > served[3] > 0


def test_ageing_serves_a_passed_over_level() -> None:
    # A weight so small the draw would practically never choose level 1.
    front: FrontQueues[int] = FrontQueues((1e9, 1e-9), random.Random(3), max_skips=5)
    front.push(1, -1)
    for i in range(100):
        front.push(0, i)
    order = [front.pop() for _ in range(7)]
    assert (1, -1) in order
    assert order.index((1, -1)) == 5


def test_levels_out_of_range_are_clamped() -> None:
    front: FrontQueues[str] = FrontQueues((2.0, 1.0), random.Random(0))
    front.push(-3, "a")
    front.push(9, "b")
    assert front.level_sizes() == (1, 1)

"""The crawl-order score: 1 for most-linked-first, lower for other orders."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from courtly.sandbox import SandboxSpec, SandboxTruth, SandboxWorld
from courtly.sandbox.order import in_degrees, order_score


def test_best_order_scores_one_and_worst_less() -> None:
    degrees = {"a": 5, "b": 3, "c": 1, "d": 0}
    assert order_score(["a", "b", "c", "d"], degrees) == 1.0
    worst = order_score(["d", "c", "b", "a"], degrees)
    assert worst is not None and worst < 0.5
    assert order_score(["a", "a", "b"], degrees) == 1.0  # repeats ignored
    assert order_score([], degrees) is None


@given(st.lists(st.integers(0, 20), min_size=1, max_size=30), st.randoms())
def test_the_score_is_between_zero_and_one(values: list[int], rng: object) -> None:
    degrees = {f"u{i}": v for i, v in enumerate(values)}
    order = list(degrees)
    rng.shuffle(order)  # type: ignore[attr-defined]
    score = order_score(order[: max(1, len(order) // 2)], degrees)
    assert score is None or 0.0 <= score <= 1.0


def test_front_pages_are_the_most_linked_in_the_small_web() -> None:
    world = SandboxWorld(SandboxSpec.small(), 8080)
    pages = SandboxTruth(world).expected_pages("courtly", scope="any")
    degrees = in_degrees(world, pages)
    top = max(degrees, key=degrees.__getitem__)
    assert top.endswith("/") and top.count("/") == 3  # a front page
    assert all(url in pages or degrees[url] >= 1 for url in degrees)

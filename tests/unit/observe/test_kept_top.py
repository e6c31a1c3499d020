"""KeptTop against a full sort, with keys that rise, fall, repeat and tie."""

from __future__ import annotations

import random

from courtly.observe.kept_top import KeptTop


class Item:
    def __init__(self, order: int) -> None:
        self.order = order
        self.key: int | None = None


def test_the_kept_top_equals_a_full_sort_after_every_change() -> None:
    rng = random.Random(5)
    items = [Item(i) for i in range(300)]
    top: KeptTop[Item] = KeptTop(lambda item: item.key, keep=8)

    def everyone() -> list[tuple[int | None, int, Item]]:
        return [(item.key, item.order, item) for item in items if item.key is not None]

    largest = 0
    for step in range(20_000):
        item = rng.choice(items)
        key = rng.choice((rng.randint(-50, 50), item.key if item.key is not None else 0))
        if key != item.key:
            item.key = key
            top.offer(key, item.order, item)
        if step % 7 == 0:
            n = rng.choice((1, 2, 4, 6))
            known = sorted(everyone(), key=lambda e: (e[0], e[1]))
            assert top.top(n, everyone) == [e[2] for e in known[:n]], step
        largest = max(largest, len(top))
    assert top.rebuilds > 0  # the candidates fell behind the bound, and were rebuilt
    assert largest <= 2 * 12 + 64 + 1  # the heap stays small: tightened, not grown
    assert top.top(500, everyone) == [e[2] for e in sorted(everyone(), key=lambda e: e[:2])]


def test_fewer_items_than_asked_are_all_given() -> None:
    items = [Item(i) for i in range(3)]
    top: KeptTop[Item] = KeptTop(lambda item: item.key, keep=2)
    for item, key in zip(items, (5, 1, 3), strict=True):
        item.key = key
        top.offer(key, item.order, item)
    chosen = top.top(10, lambda: [(i.key, i.order, i) for i in items])
    assert chosen == [items[1], items[2], items[0]]

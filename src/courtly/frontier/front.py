"""Front queues: one FIFO per priority level, and a biased selector that never starves.

The selector draws a level with probability proportional to its weight among the
non-empty levels (weights fall geometrically from level 0), and adds *ageing*:
a non-empty level passed over ``max_skips`` times in a row is served next,
whatever the draw. So high levels move first, and low levels still move.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable
from typing import Generic, TypeVar

__all__ = ["FrontQueues", "default_level_weights"]

T = TypeVar("T")


def default_level_weights(levels: int, ratio: float = 2.0) -> tuple[float, ...]:
    """Weights ``ratio**(levels-1-i)``: each level twice as likely as the next by default."""
    if levels < 1:
        raise ValueError("at least one front-queue level is needed")
    return tuple(ratio ** (levels - 1 - i) for i in range(levels))


class FrontQueues(Generic[T]):
    """F FIFO queues, one per level, with the biased selector of the module doc."""

    def __init__(
        self,
        weights: Iterable[float],
        rng: random.Random,
        *,
        max_skips: int = 32,
    ) -> None:
        self._weights = tuple(float(w) for w in weights)
        if not self._weights or any(w <= 0 for w in self._weights):
            raise ValueError("front-queue weights must be positive")
        self._queues: list[deque[T]] = [deque() for _ in self._weights]
        self._skips = [0] * len(self._weights)
        self._rng = rng
        self._max_skips = max_skips
        self._size = 0

    @property
    def levels(self) -> int:
        return len(self._queues)

    def __len__(self) -> int:
        return self._size

    def level_sizes(self) -> tuple[int, ...]:
        return tuple(len(q) for q in self._queues)

    def push(self, level: int, item: T) -> None:
        """Append ``item`` to level ``level`` (clamped into range)."""
        if level < 0:
            level = 0
        elif level >= len(self._queues):
            level = len(self._queues) - 1
        self._queues[level].append(item)
        self._size += 1

    def push_front(self, level: int, item: T) -> None:
        """Put ``item`` back at the head of its level (used when undoing a pop)."""
        self._queues[min(max(level, 0), len(self._queues) - 1)].appendleft(item)
        self._size += 1

    def choose_level(self) -> int | None:
        """The level the next pop will come from, or ``None`` if all are empty."""
        if self._size == 0:
            return None
        queues = self._queues
        skips = self._skips
        total = 0.0
        starving = -1
        for i, q in enumerate(queues):
            if q:
                total += self._weights[i]
                if starving < 0 and skips[i] >= self._max_skips:
                    starving = i
        if starving >= 0:
            return starving
        draw = self._rng.random() * total
        chosen = -1
        for i, q in enumerate(queues):
            if q:
                chosen = i
                draw -= self._weights[i]
                if draw < 0:
                    break
        return chosen

    def pop(self) -> tuple[int, T] | None:
        """Remove and return ``(level, item)`` from the level the selector picks."""
        level = self.choose_level()
        if level is None:
            return None
        skips = self._skips
        for i, q in enumerate(self._queues):
            if q:
                skips[i] += 1
        skips[level] = 0
        self._size -= 1
        return level, self._queues[level].popleft()

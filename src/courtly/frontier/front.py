"""Front queues: one FIFO per priority level, and a biased selector that never starves.

The selector draws a level with probability proportional to its weight among the
non-empty levels (weights fall geometrically from level 0), and adds *ageing*:
a non-empty level passed over ``max_skips`` times in a row is served next,
whatever the draw. So high levels move first, and low levels still move.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable, Sequence, Sized
from typing import Generic, TypeVar

__all__ = ["FrontQueues", "LevelSelector", "default_level_weights"]

T = TypeVar("T")


def default_level_weights(levels: int, ratio: float = 2.0) -> tuple[float, ...]:
    """Weights ``ratio**(levels-1-i)``: each level twice as likely as the next by default."""
    if levels < 1:
        raise ValueError("at least one front-queue level is needed")
    return tuple(ratio ** (levels - 1 - i) for i in range(levels))


class LevelSelector:
    """The biased, ageing draw of a level, over the sizes of the levels.

    Kept apart from the queues so that a store whose front queues live on disk
    draws exactly as the in-memory one does, from counts alone.
    """

    __slots__ = ("_max_skips", "_rng", "_skips", "_weights")

    def __init__(
        self, weights: Iterable[float], rng: random.Random, *, max_skips: int = 32
    ) -> None:
        self._weights = tuple(float(w) for w in weights)
        if not self._weights or any(w <= 0 for w in self._weights):
            raise ValueError("front-queue weights must be positive")
        self._rng = rng
        self._max_skips = max_skips
        self._skips = [0] * len(self._weights)

    @property
    def levels(self) -> int:
        return len(self._weights)

    def take(self, sizes: Sequence[Sized] | Sequence[int]) -> int | None:
        """Choose the level to serve next among the non-empty ones, and count the service.

        ``sizes[i]`` is level ``i``'s item count, or the level's queue itself (only
        truthiness is read: non-empty or not). ``None`` if all are empty.
        """
        skips = self._skips
        weights = self._weights
        total = 0.0
        chosen = -1
        for i, n in enumerate(sizes):
            if n:
                total += weights[i]
                if chosen < 0 and skips[i] >= self._max_skips:
                    chosen = i
        if total == 0.0:
            return None
        if chosen < 0:
            draw = self._rng.random() * total
            for i, n in enumerate(sizes):
                if n:
                    chosen = i
                    draw -= weights[i]
                    if draw < 0:
                        break
        for i, n in enumerate(sizes):
            if n:
                skips[i] += 1
        skips[chosen] = 0
        return chosen


class FrontQueues(Generic[T]):
    """F FIFO queues, one per level, served by a :class:`LevelSelector`."""

    def __init__(
        self,
        weights: Iterable[float],
        rng: random.Random,
        *,
        max_skips: int = 32,
    ) -> None:
        self._selector = LevelSelector(weights, rng, max_skips=max_skips)
        self._queues: list[deque[T]] = [deque() for _ in range(self._selector.levels)]
        self._size = 0

    @property
    def levels(self) -> int:
        return len(self._queues)

    def __len__(self) -> int:
        return self._size

    def level_sizes(self) -> tuple[int, ...]:
        return tuple(len(q) for q in self._queues)

    def best_level(self) -> int | None:
        """The best (smallest) non-empty level; ``None`` when all are empty."""
        if self._size:
            for level, queue in enumerate(self._queues):
                if queue:
                    return level
        return None

    def push(self, level: int, item: T) -> None:
        """Append ``item`` to level ``level`` (clamped into range)."""
        if level < 0:
            level = 0
        elif level >= len(self._queues):
            level = len(self._queues) - 1
        self._queues[level].append(item)
        self._size += 1

    def pop(self) -> tuple[int, T] | None:
        """Remove and return ``(level, item)`` from the level the selector picks."""
        if self._size == 0:
            return None
        level = self._selector.take(self._queues)
        assert level is not None
        self._size -= 1
        return level, self._queues[level].popleft()

"""When a partitioned crawl is over: every partition idle and every inbox read, twice
in a row with nothing moved (an empty frontier alone does not end a partition)."""

from __future__ import annotations

from collections.abc import Sequence

from courtly.parallel.messages import PartitionStatus

__all__ = ["TerminationDetector", "quiescent"]


def quiescent(statuses: Sequence[PartitionStatus]) -> bool:
    """Every partition idle, and every byte appended to an inbox consumed by its owner."""
    by_index = {s.index: s for s in statuses}
    if not all(s.idle for s in statuses):
        return False
    for s in statuses:
        for dest, written in enumerate(s.written):
            if dest != s.index and by_index[dest].consumed[s.index] != written:
                return False
    return True


class TerminationDetector:
    """Done after two consecutive quiescent probe rounds with equal counters.

    Sound when every probe of a round is sent after every answer of the previous
    round arrived: between its two answers no partition consumed anything
    (equal counters), and an idle partition only gets work by consuming, so all
    were idle together at the moment the second round began, with every inbox
    read to its end.
    """

    def __init__(self) -> None:
        self._last: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] | None = None

    def observe(self, statuses: Sequence[PartitionStatus]) -> bool:
        """Feed one complete round of answers; True once the crawl is over."""
        if not quiescent(statuses):
            self._last = None
            return False
        key = tuple((s.written, s.consumed) for s in sorted(statuses, key=lambda s: s.index))
        done = self._last == key
        self._last = key
        return done


# -- aggregation (progress, status, export) ---------------------------------------------------

"""The memory store's recrawl rows: a dict by URL and a heap by due time (stale heap
entries dropped when met), the in-memory twin of the SQLite ``revisit`` table."""

from __future__ import annotations

import dataclasses
import heapq

from courtly.store.revisit_rows import RevisitRow

__all__ = ["MemoryRevisitRows"]


class MemoryRevisitRows:
    """:class:`~courtly.store.revisit_rows.DueRows` in process memory."""

    __slots__ = ("_due_at", "_heap", "rows")

    def __init__(self) -> None:
        self.rows: dict[str, RevisitRow] = {}
        self._due_at: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []

    def put(self, row: RevisitRow) -> None:
        self.rows[row.url] = row
        due_at = row.state.next_due_at
        if due_at is None:
            self._due_at.pop(row.url, None)
        else:
            self._due_at[row.url] = due_at
            heapq.heappush(self._heap, (due_at, row.url))

    def set_due(self, url: str, due_at: float, *, out: bool) -> None:
        row = self.rows[url]
        state = row.state if out else dataclasses.replace(row.state, next_due_at=due_at)
        self.rows[url] = dataclasses.replace(row, state=state, out=out)
        self._due_at[url] = due_at
        heapq.heappush(self._heap, (due_at, url))

    def due(self, now_at: float, limit: int) -> list[RevisitRow]:
        taken: list[RevisitRow] = []
        seen: set[str] = set()
        heap = self._heap
        while heap and len(taken) < limit:
            due_at, url = heap[0]
            if due_at > now_at:
                break
            heapq.heappop(heap)
            if self._due_at.get(url) != due_at or url in seen:
                continue  # stale: the row was written again since
            seen.add(url)
            taken.append(self.rows[url])
        return taken

    def next_due_at(self) -> float | None:
        heap = self._heap
        while heap and self._due_at.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

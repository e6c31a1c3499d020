"""An hour of the crawl at 1 Hz, in memory, so the page's charts fill on load.

A point is a few dozen numbers (about 1 KB as JSON): 3,600 of them is a few MB at most.
Points are cumulative counters and gauges; the page derives rates from neighbours.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

__all__ = ["History", "history_point"]


def history_point(snap: Mapping[str, Any]) -> dict[str, Any]:
    """What the charts need of one snapshot."""
    frontier = snap["frontier"]
    return {
        "at": snap["at"],
        "pages": snap["pages"],
        "bytes": snap["bytes_received"],
        "fetches": dict(snap["fetches"]),
        "front": frontier["front_queued"],
        "levels": list(snap.get("front_queued_by_level", [])),
        "back": frontier["back_queued"],
        "hosts": {
            "ready": frontier["hosts_ready"],
            "snoozed": frontier["hosts_snoozed"],
            "leased": frontier["leased"],
            "parked": frontier["hosts_parked"],
            "inactive": frontier["hosts_inactive"],
            "retired": frontier["hosts_retired"],
        },
        "waiting": dict(snap["waiting_by_source"]),
        "in_flight": snap["in_flight"],
    }


class History:
    """A ring of points, at most one per ``min_step_s`` (the newest wins a tie)."""

    def __init__(self, seconds: int = 3_600, min_step_s: float = 1.0) -> None:
        self._points: deque[dict[str, Any]] = deque(maxlen=seconds)
        self._min_step_s = min_step_s

    def add(self, snap: Mapping[str, Any]) -> None:
        point = history_point(snap)
        if self._points and point["at"] - self._points[-1]["at"] < self._min_step_s:
            self._points[-1] = point
        else:
            self._points.append(point)

    def points(self) -> list[dict[str, Any]]:
        return list(self._points)

    def __len__(self) -> int:
        return len(self._points)

"""Where the dashboard's snapshots come from: the running crawl, or a state directory.

:class:`LiveSource` subscribes to a crawl's bus (a :class:`~courtly.events.Tick` each
``progress_interval_s``) and is also a progress sink, for a partitioned crawl whose
parent sees only merged snapshots. :class:`FileSource` reads ``status.json`` of a
running or finished crawl (``courtly dashboard --state DIR``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from courtly.events import Event, Tick
from courtly.observe.history import History
from courtly.observe.hosts import SORTS, HostTable
from courtly.observe.snapshot import merge_snapshot_json, snapshot_json

if TYPE_CHECKING:
    from courtly.crawl import CrawlSnapshot

__all__ = ["FileSource", "LiveSource", "SnapshotSource", "sort_rows", "status_paths"]


class SnapshotSource(Protocol):
    """The latest snapshot (``None`` before the first), top-N hosts, and history."""

    history: History

    def latest(self) -> dict[str, Any] | None: ...

    def hosts(self, sort: str, n: int) -> list[dict[str, Any]]: ...


_ROW_KEYS: Mapping[str, Callable[[Mapping[str, Any]], Any]] = {
    "queued": lambda r: r["queued"] or 0,
    "next_allowed": lambda r: r["next_allowed_at"] if r["retired"] is None else float("-inf"),
    "errors": lambda r: r["error_streak"],
    "delay": lambda r: r["delay_s"] or 0.0,
    "requests": lambda r: r["requests"],
}


def sort_rows(rows: Sequence[Mapping[str, Any]], sort: str, n: int) -> list[dict[str, Any]]:
    """Host rows largest first by ``sort`` (as :meth:`HostTable.top` orders them)."""
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {', '.join(SORTS)}")
    return [dict(r) for r in sorted(rows, key=_ROW_KEYS[sort], reverse=True)[:n]]


class LiveSource:
    """Snapshots of a crawl in this process (``table``: exact top-N over every host)."""

    def __init__(self, now: Callable[[], float], table: HostTable | None = None) -> None:
        self._now = now
        self._table = table
        self._latest: dict[str, Any] | None = None
        self.history = History()

    def attach(self, table: HostTable) -> None:
        """Answer :meth:`hosts` from ``table`` (exact top-N) from now on."""
        self._table = table

    def notify(self, event: Event) -> None:
        if isinstance(event, Tick):
            self.update(event.snapshot)

    def update(self, snapshot: CrawlSnapshot) -> None:
        """A progress sink's update: take the (merged) snapshot."""
        self._latest = snapshot_json(snapshot, self._now())
        self.history.add(self._latest)

    def close(self, snapshot: CrawlSnapshot) -> None:
        self.update(snapshot)

    def latest(self) -> dict[str, Any] | None:
        return self._latest

    def hosts(self, sort: str, n: int) -> list[dict[str, Any]]:
        if self._table is not None:
            return self._table.top(sort, n, self._now())
        return sort_rows(self._latest["hosts"] if self._latest else [], sort, n)


def status_paths(state_dir: Path) -> list[Path]:
    """The ``status.json`` files of a crawl: its own, or one per partition."""
    own = state_dir / "status.json"
    if own.exists():
        return [own]
    return sorted(state_dir.glob("part-*-of-*/status.json"))


class FileSource:
    """``status.json`` in ``state_dir`` (or its partitions'), re-read when it changes."""

    def __init__(self, state_dir: Path) -> None:
        self._dir = state_dir
        self._stamps: dict[Path, tuple[int, int]] = {}
        self._parts: dict[Path, dict[str, Any]] = {}
        self._latest: dict[str, Any] | None = None
        self.history = History()

    def latest(self) -> dict[str, Any] | None:
        changed = False
        for path in status_paths(self._dir):
            try:
                stat = path.stat()
            except OSError:
                continue
            stamp = (stat.st_mtime_ns, stat.st_size)
            if stamp == self._stamps.get(path):
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # being replaced: the next read gets it
            self._stamps[path] = stamp
            snap = data.get("snapshot") if isinstance(data, dict) else None
            if isinstance(snap, dict):
                self._parts[path] = snap
                changed = True
        if changed:
            parts = list(self._parts.values())
            self._latest = parts[0] if len(parts) == 1 else merge_snapshot_json(parts)
            self.history.add(self._latest)
        return self._latest

    def hosts(self, sort: str, n: int) -> list[dict[str, Any]]:
        latest = self.latest()
        return sort_rows(latest["hosts"] if latest else [], sort, n)

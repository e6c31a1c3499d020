"""The inbox files: URLs one partition found on hosts another one owns.

``STATE/part-<j>-of-<N>/inbox/from-<i>.jsonl`` holds what partition ``i`` forwarded
to partition ``j``, one JSON line per page and destination (``[referrer, [[url,
host_key, level, depth], ...]]``; a page's links carry a fifth item, the share of the
page's OPIC cash the link passes on: ``[url, host_key, level, depth, cash]``, see
:meth:`courtly.crawl.links.LinkAdmission.credit`). The writer (:class:`Outbox`) only appends whole
lines; the reader (:class:`Inbox`) only consumes whole lines, from offsets its
store keeps.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from courtly.frontier.records import QueuedUrl
from courtly.parallel.layout import fsync_dir, partition_dir

__all__ = ["Inbox", "InboxChunk", "Outbox", "decode_line", "encode_line"]

log = logging.getLogger("courtly.parallel")

_READ_BYTES = 256 * 1024
"""Inbox bytes read per ingest step (a few thousand URLs)."""


def _inbox_path(state_dir: Path, source: int, dest: int, processes: int) -> Path:
    return partition_dir(state_dir, dest, processes) / "inbox" / f"from-{source}.jsonl"


class Outbox:
    """The inbox files partition ``index`` appends to, one per other partition.

    Each :meth:`append` is handed to the OS before it returns (a killed process
    loses nothing appended); :meth:`sync` fsyncs what was appended since the
    last sync (for power cuts). Opening truncates a torn last line (left by a
    crash in the middle of a write; no reader ever consumes a line without its
    newline). ``written[j]`` is the size of the file for partition ``j``.
    """

    def __init__(self, state_dir: Path, index: int, processes: int, *, fsync: bool) -> None:
        self.index = index
        self.written = [0] * processes
        self._fds: dict[int, int] = {}
        self._dirty: set[int] = set()
        for dest in range(processes):
            if dest == index:
                continue
            path = _inbox_path(state_dir, index, dest, processes)
            created = not path.parent.exists()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            size = _complete_size(fd)
            if size != os.fstat(fd).st_size:
                os.ftruncate(fd, size)
            self._fds[dest] = fd
            self.written[dest] = size
            if fsync:
                os.fsync(fd)
                fsync_dir(path.parent)
                if created:
                    fsync_dir(path.parent.parent)

    def append(self, dest: int, data: bytes) -> None:
        """Append whole lines to partition ``dest``'s inbox (to the OS, not yet fsynced)."""
        fd = self._fds[dest]
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        self.written[dest] += len(data)
        self._dirty.add(dest)

    def sync(self) -> None:
        """fsync every file appended to since the last sync (blocking: run it off the loop)."""
        dirty, self._dirty = self._dirty, set()
        for dest in dirty:
            os.fsync(self._fds[dest])

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def _complete_size(fd: int) -> int:
    """The size of the file's prefix that ends with a newline (0 if none)."""
    size = os.fstat(fd).st_size
    end = size
    while end > 0:
        start = max(0, end - 65536)
        chunk = os.pread(fd, end - start, start)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


@dataclass(frozen=True, slots=True)
class InboxChunk:
    """Whole lines read from one source's inbox file, and the offset just after them."""

    source: int
    end_offset: int
    entries: list[QueuedUrl]
    referrers: list[str | None]
    cash: list[float | None]
    """Each entry's share of its page's cash (``None`` for an entry sent without)."""


class Inbox:
    """Partition ``index``'s inbox files, read from the consumed offsets on.

    :meth:`read` returns whole lines only; :meth:`consume` records, once their
    URLs are queued, how far a source has been read (``consumed[i]``).
    """

    def __init__(
        self, state_dir: Path, index: int, processes: int, consumed: Sequence[int]
    ) -> None:
        self.index = index
        self.consumed = list(consumed)
        self._paths = {
            source: _inbox_path(state_dir, source, index, processes)
            for source in range(processes)
            if source != index
        }
        self._files: dict[int, int] = {}
        self.full = False
        """True when the last :meth:`read` took ``max_bytes`` from a source: more may wait."""

    def read(self, max_bytes: int = _READ_BYTES) -> list[InboxChunk]:
        """New whole lines of every source (at most about ``max_bytes`` from each)."""
        chunks: list[InboxChunk] = []
        self.full = False
        for source, path in self._paths.items():
            fd = self._files.get(source)
            if fd is None:
                try:
                    fd = os.open(path, os.O_RDONLY)
                except FileNotFoundError:
                    continue
                self._files[source] = fd
            offset = self.consumed[source]
            data = os.pread(fd, max_bytes, offset)
            self.full = self.full or len(data) == max_bytes
            cut = data.rfind(b"\n")
            if cut < 0:
                if len(data) == max_bytes:  # one line longer than max_bytes
                    data = _read_line(fd, offset)
                    cut = len(data) - 1
                if cut < 0:
                    continue
            entries: list[QueuedUrl] = []
            referrers: list[str | None] = []
            cash: list[float | None] = []
            for line in data[: cut + 1].splitlines():
                decode_line(line, entries, referrers, cash)
            chunks.append(InboxChunk(source, offset + cut + 1, entries, referrers, cash))
        return chunks

    def consume(self, source: int, end_offset: int) -> None:
        self.consumed[source] = end_offset

    def close(self) -> None:
        for fd in self._files.values():
            os.close(fd)
        self._files.clear()


def _read_line(fd: int, offset: int) -> bytes:
    """The whole line at ``offset`` (with its newline), or b"" if it is not complete yet."""
    parts: list[bytes] = []
    while True:
        data = os.pread(fd, 1 << 20, offset)
        if not data:
            return b""
        cut = data.find(b"\n")
        if cut >= 0:
            parts.append(data[: cut + 1])
            return b"".join(parts)
        parts.append(data)
        offset += len(data)


def encode_line(
    referrer: str | None, entries: Iterable[QueuedUrl], cash: Sequence[float] | None = None
) -> bytes:
    """One inbox line; with ``cash``, one share per entry (a fifth item each)."""
    items: list[list[object]] = [[e.url, e.host_key, e.level, e.depth] for e in entries]
    if cash is not None:
        for item, share in zip(items, cash, strict=True):
            item.append(share)
    return (json.dumps([referrer, items], separators=(",", ":")) + "\n").encode("utf-8")


def decode_line(
    line: bytes,
    entries: list[QueuedUrl],
    referrers: list[str | None],
    cash: list[float | None] | None = None,
) -> None:
    """Append a line's entries, their referrer and (into ``cash``) their shares."""
    try:
        referrer, items = json.loads(line)
        decoded: list[tuple[QueuedUrl, float | None]] = []
        for url, key, level, depth, *share in items:
            entry = QueuedUrl(str(url), str(key), int(level), int(depth))
            decoded.append((entry, float(share[0]) if share else None))
    except (ValueError, TypeError) as error:
        log.warning("skipping an unreadable inbox line (%s): %r", error, line[:200])
        return
    for entry, share in decoded:
        entries.append(entry)
        referrers.append(None if referrer is None else str(referrer))
        if cash is not None:
            cash.append(share)

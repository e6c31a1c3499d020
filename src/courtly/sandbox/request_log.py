"""The sandbox request log: one JSON object per line, one line per request.

A line is written when the request is over: after the last byte of the
response was handed to the socket, or when the client went away. Fields::

    start_at           epoch seconds (float): the request head was parsed (so the
                       client sent it no later than this)
    end_at             epoch seconds: stamped immediately *before* the write that
                       handed the response's last byte to the socket (so the client
                       cannot have received the whole response earlier); for a
                       streamed page, the last write the client was still there
                       after; for a request without a response (status 0) when the
                       server gave up or noticed the client had gone
    host               the Host header, lower-cased, port and trailing dot stripped
    ip, port           the local address the connection arrived on
    path               the request target as sent (path and query, not normalised)
    status             the status sent; 0 when no response was sent (hang, client gone)
    ua                 the User-Agent header ("" if none)
    bytes              body bytes written (as sent, i.e. compressed for the gzip bomb)
    conn               a connection id, unique within one log file
    retry_after_s      the Retry-After sent with a 429/503, else null
    method             the request method
    cut                true when the server cut the connection off on purpose
                       (:class:`~courtly.sandbox.server.DropPlan`): the answer is not
                       whole, so the client may ask again

Lines are buffered and flushed at least every ``flush_every_s`` seconds and on
close, so a reader sees everything once the server has stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["RequestLogWriter", "RequestRecord", "load_log"]


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as the server saw it (see the module docstring for the fields)."""

    start_at: float
    end_at: float
    host: str
    ip: str
    port: int
    path: str
    status: int
    ua: str
    bytes: int
    conn: int
    retry_after_s: float | None = None
    method: str = "GET"
    cut: bool = False

    def to_json(self) -> str:
        """One JSON line (without the newline)."""
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> RequestRecord:
        retry = raw.get("retry_after_s")
        return cls(
            start_at=float(raw["start_at"]),
            end_at=float(raw["end_at"]),
            host=str(raw["host"]),
            ip=str(raw["ip"]),
            port=int(raw["port"]),
            path=str(raw["path"]),
            status=int(raw["status"]),
            ua=str(raw.get("ua", "")),
            bytes=int(raw.get("bytes", 0)),
            conn=int(raw.get("conn", 0)),
            retry_after_s=None if retry is None else float(retry),
            method=str(raw.get("method", "GET")),
            cut=bool(raw.get("cut", False)),
        )


class RequestLogWriter:
    """Appends records to a JSON-lines file; flushes every ``flush_every_s`` seconds and on close.

    Use :meth:`start` inside a running event loop to begin the periodic flush,
    :meth:`write` per request, and :meth:`aclose` (or :meth:`close`) at the end.
    """

    def __init__(self, path: Path, *, flush_every_s: float = 0.5) -> None:
        self.path = path
        self.flush_every_s = flush_every_s
        self._lines: list[str] = []
        self._file: IO[str] | None = None
        self._task: asyncio.Task[None] | None = None
        self.count = 0

    def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("a", encoding="utf-8")
        self._task = asyncio.get_running_loop().create_task(self._flush_forever())

    def write(self, record: RequestRecord) -> None:
        self._lines.append(record.to_json())
        self.count += 1

    def flush(self) -> None:
        """Write out buffered lines now."""
        if self._file is None or not self._lines:
            return
        lines, self._lines = self._lines, []
        self._file.write("\n".join(lines) + "\n")
        self._file.flush()

    async def _flush_forever(self) -> None:
        while True:
            await asyncio.sleep(self.flush_every_s)
            self.flush()

    async def aclose(self) -> None:
        """Stop the periodic flush, flush what is left and close the file."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.close()

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None


def load_log(path: Path | str | Iterable[Path | str]) -> list[RequestRecord]:
    """Read records from a log file, a directory of ``requests*.jsonl`` files, or several files.

    Records from all files are merged and sorted by ``start_at``. A torn last
    line (a server killed mid-write) is skipped.
    """
    if isinstance(path, str | Path):
        base = Path(path)
        files = sorted(base.glob("requests*.jsonl")) if base.is_dir() else [base]
    else:
        files = [Path(p) for p in path]
    records: list[RequestRecord] = []
    for file in files:
        with file.open(encoding="utf-8") as handle:
            for line in handle:
                line = line.strip()
                if not line:
                    continue
                try:
                    records.append(RequestRecord.from_dict(json.loads(line)))
                except (ValueError, KeyError):
                    continue
    records.sort(key=lambda r: (r.start_at, r.end_at))
    return records

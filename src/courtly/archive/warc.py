"""The WARC writer: one ``response`` + one ``request`` record per fetch, gzip per record.

Contract:

* Files are WARC/1.1, named ``<prefix>-<seq:05d>.warc.gz`` in ``directory``; each
  begins with a ``warcinfo`` record. Every record is its own gzip member, so any
  record can be read by seeking to its offset (what the catalogue stores).
* :meth:`WarcWriter.write_exchange` writes the response record first, then the
  request record (the order Heritrix uses), each pointing at the other with
  ``WARC-Concurrent-To``, and returns where the response record starts.
* The response record holds the status line, the headers as received and the
  body as received (``FetchResult.raw_body``: still content-encoded, never
  re-encoded). Transfer coding is already undone by the HTTP client, so a
  ``Transfer-Encoding`` header is kept as ``X-Archive-Orig-Transfer-Encoding``
  (readers would otherwise try to de-chunk). When the fetcher kept no raw body
  and the headers name a ``Content-Encoding``, the decoded body is stored and
  ``Content-Encoding``/``Content-Length`` are renamed the same way, so the record
  never lies about its bytes. A body cut by the size cap carries
  ``WARC-Truncated: length``.
* Digests: ``WARC-Block-Digest`` and ``WARC-Payload-Digest`` are sha1 in base32
  (``sha1:...``), as the standard expects.
* Rotation: after a write leaves the file at or over ``max_file_bytes`` the next
  write starts a new file, so a file exceeds the limit by at most one exchange.
* Durability: records go to a Python buffered file. :meth:`flush` hands them to
  the OS; :meth:`sync` also ``fsync``\\s. The crawl calls :meth:`sync` before it
  commits catalogue rows that point into the file. After a crash the file may
  end with a torn record: :func:`truncate_torn_tail` cuts it, and
  :meth:`WarcWriter.open_existing` does that and appends to the last file.
  Complete records written after the last sync survive with no catalogue row;
  they are harmless duplicates once the URL is fetched again.
* Threads: every public method takes an internal lock, so the writer may be
  called from a worker thread (``asyncio.to_thread``) to keep compression off
  the event loop; calls are serialised.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import uuid
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

from fastwarc.stream_io import GzipWriter
from fastwarc.warc import WarcRecord, WarcRecordType
from yarl import URL

from courtly.clock import Clock, SystemClock
from courtly.fetch.records import FetchResult

__all__ = [
    "DEFAULT_MAX_WARC_FILE_BYTES",
    "WarcPosition",
    "WarcWriter",
    "truncate_torn_tail",
    "warc_date",
]

DEFAULT_MAX_WARC_FILE_BYTES = 1 << 30
_SCAN_CHUNK_BYTES = 1 << 20
_SCAN_PIECE_BYTES = 1 << 16
_ORIG = "X-Archive-Orig-"
_CRLF_RUN = re.compile(r"[\r\n]+")


@dataclass(frozen=True, slots=True)
class WarcPosition:
    """Where a record lives: ``filename`` (base name inside the WARC directory),
    ``offset`` of its gzip member from the file start, ``length`` of that member, bytes."""

    filename: str
    offset: int
    length: int


def warc_date(at: float) -> str:
    """A WARC-Date for epoch seconds ``at``: UTC, ISO 8601, microseconds (WARC/1.1 allows them)."""
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _sha1(data: bytes) -> bytes:
    return hashlib.sha1(data).digest()


def _clean(text: str) -> bytes:
    """A header name or value as bytes on one line (CR/LF folded to a space)."""
    if "\r" in text or "\n" in text:
        text = _CRLF_RUN.sub(" ", text)
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def _header_block(first_line: str, headers: Iterable[tuple[str, str]]) -> bytes:
    parts = [_clean(first_line), b"\r\n"]
    for name, value in headers:
        parts += [_clean(name), b": ", _clean(value), b"\r\n"]
    parts.append(b"\r\n")
    return b"".join(parts)


def _response_headers(result: FetchResult) -> list[tuple[str, str]]:
    """Wire headers, with the renames that keep the record faithful to the stored body."""
    body_is_decoded = result.raw_body is None and result.header("Content-Encoding") is not None
    renamed = {"transfer-encoding"}
    if body_is_decoded:
        renamed |= {"content-encoding", "content-length"}
    return [
        (_ORIG + name if name.lower() in renamed else name, value) for name, value in result.headers
    ]


def _request_block(result: FetchResult) -> bytes:
    try:
        url = URL(result.url)
        target = url.raw_path_qs or "/"
        host = url.raw_authority
    except (ValueError, TypeError):
        target, host = result.url, ""
    headers = list(result.request_headers)
    if host and not any(name.lower() == "host" for name, _ in headers):
        headers.insert(0, ("Host", host))
    return _header_block(f"GET {target} HTTP/{result.http_version}", headers)


def _status_line(result: FetchResult) -> str:
    reason = result.reason
    if not reason:
        try:
            reason = HTTPStatus(result.status).phrase
        except ValueError:
            reason = ""
    return f"HTTP/{result.http_version} {result.status} {reason}".rstrip()


class WarcWriter:
    """Append fetches to size-rotated, per-record-gzipped WARC files (see the module docstring).

    ``clock`` dates the ``warcinfo`` records (exchanges are dated by their own
    ``started_at``). ``software`` and ``warcinfo_fields`` go into each
    ``warcinfo`` record. A new writer never touches existing files: it starts at
    the sequence number after the highest one present; use :meth:`open_existing`
    to continue the last file after a crash.
    """

    def __init__(
        self,
        directory: Path,
        *,
        prefix: str = "courtly",
        max_file_bytes: int = DEFAULT_MAX_WARC_FILE_BYTES,
        gzip_level: int = 6,
        clock: Clock | None = None,
        software: str = "courtly",
        warcinfo_fields: Mapping[str, str] | None = None,
    ) -> None:
        if not re.fullmatch(r"[A-Za-z0-9._-]+", prefix):
            raise ValueError(f"WARC prefix must be [A-Za-z0-9._-]+, got {prefix!r}")
        if max_file_bytes <= 0:
            raise ValueError("max_file_bytes must be positive")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.max_file_bytes = max_file_bytes
        self.gzip_level = gzip_level
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._software = software
        self._warcinfo_fields = dict(warcinfo_fields or {})
        self._lock = threading.Lock()
        self._name_pattern = re.compile(rf"^{re.escape(prefix)}-(\d{{5,}})\.warc\.gz$")
        existing = self.existing_files()
        self._next_seq = self._seq_of(existing[-1]) + 1 if existing else 0
        self._file: BinaryIO | None = None
        self._gzip: GzipWriter | None = None
        self._path: Path | None = None
        self._size = 0
        self._closed = False
        self.bytes_cut_on_open = 0

    # -- files -------------------------------------------------------------------------------

    def _seq_of(self, path: Path) -> int:
        match = self._name_pattern.match(path.name)
        return int(match.group(1)) if match else -1

    def existing_files(self) -> list[Path]:
        """This writer's WARC files in ``directory``, oldest (lowest sequence) first."""
        found = [p for p in self.directory.iterdir() if self._name_pattern.match(p.name)]
        return sorted(found, key=self._seq_of)

    @classmethod
    def open_existing(
        cls,
        directory: Path,
        *,
        prefix: str = "courtly",
        max_file_bytes: int = DEFAULT_MAX_WARC_FILE_BYTES,
        gzip_level: int = 6,
        clock: Clock | None = None,
        software: str = "courtly",
        warcinfo_fields: Mapping[str, str] | None = None,
        trusted_offset: int = 0,
    ) -> Self:
        """A writer that continues the last file in ``directory`` after cutting its torn tail.

        ``trusted_offset`` is a gzip member boundary known to be good (e.g. the
        end of the last record the catalogue committed in that file); the scan
        for a torn tail starts there. ``bytes_cut_on_open`` reports the cut.
        With no existing file this is the same as the constructor.
        """
        writer = cls(
            directory,
            prefix=prefix,
            max_file_bytes=max_file_bytes,
            gzip_level=gzip_level,
            clock=clock,
            software=software,
            warcinfo_fields=warcinfo_fields,
        )
        existing = writer.existing_files()
        if existing:
            last = existing[-1]
            writer.bytes_cut_on_open = truncate_torn_tail(last, start_offset=trusted_offset)
            writer._next_seq = writer._seq_of(last)
            writer._open(last)
        return writer

    def _open(self, path: Path) -> None:
        handle = open(path, "ab")  # noqa: SIM115 - owned by the writer until _close_file
        self._file = handle
        self._gzip = GzipWriter(handle, compression_level=self.gzip_level)
        self._path = path
        self._size = handle.tell()
        self._next_seq = self._seq_of(path) + 1
        if self._size == 0:
            self._write_warcinfo()

    def _close_file(self) -> None:
        if self._gzip is not None:
            self._gzip.flush()
        if self._file is not None:
            self._file.flush()
            self._file.close()
        self._gzip = None
        self._file = None
        self._path = None
        self._size = 0

    def _ensure_file(self) -> None:
        if self._closed:
            raise ValueError("the WARC writer is closed")
        if self._file is not None and self._size >= self.max_file_bytes:
            self._close_file()
        if self._file is None:
            self._open(self.directory / f"{self.prefix}-{self._next_seq:05d}.warc.gz")

    @property
    def current_path(self) -> Path | None:
        """The file being appended to, or ``None`` before the first write / after rotation."""
        return self._path

    # -- records -----------------------------------------------------------------------------

    def _write_record(
        self,
        record_type: WarcRecordType,
        record_id: str,
        headers: list[tuple[str, str]],
        block: bytes,
        payload_digest: bytes | None,
        is_http: bool,
    ) -> WarcPosition:
        assert self._gzip is not None and self._file is not None and self._path is not None
        record = WarcRecord()
        record.init_headers(record_type, f"uuid:{record_id}".encode())
        for name, value in headers:
            if name == "WARC-Date":
                record.headers.set(name, value)
            else:
                record.headers.append(name, value)
        record.set_bytes_content(block)
        if is_http:
            record.is_http = True
        record.write(self._gzip, checksum_data=True, payload_digest=payload_digest)
        self._gzip.finish()
        offset = self._size
        self._size = self._file.tell()
        return WarcPosition(filename=self._path.name, offset=offset, length=self._size - offset)

    def _write_warcinfo(self) -> None:
        assert self._path is not None
        fields = {
            "software": self._software,
            "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/"
            "warc-format/warc-1.1/",
            "robots": "obey",
            **self._warcinfo_fields,
        }
        block = b"".join(_clean(k) + b": " + _clean(v) + b"\r\n" for k, v in fields.items())
        self._write_record(
            WarcRecordType.warcinfo,
            str(uuid.uuid4()),
            [
                ("WARC-Date", warc_date(self._clock.now())),
                ("WARC-Filename", self._path.name),
                ("Content-Type", "application/warc-fields"),
            ],
            block,
            None,
            False,
        )

    def write_exchange(self, result: FetchResult) -> WarcPosition:
        """Archive one fetch (page or robots.txt alike); returns the response record's position."""
        with self._lock:
            self._ensure_file()
            response_id = str(uuid.uuid4())
            request_id = str(uuid.uuid4())
            date = warc_date(result.started_at)
            payload = result.raw_body if result.raw_body is not None else result.body
            common = [("WARC-Date", date), ("WARC-Target-URI", result.url)]
            if result.ip:
                common.append(("WARC-IP-Address", result.ip))
            response_headers = [
                *common,
                ("WARC-Concurrent-To", f"<urn:uuid:{request_id}>"),
            ]
            if result.truncated:
                response_headers.append(("WARC-Truncated", "length"))
            position = self._write_record(
                WarcRecordType.response,
                response_id,
                response_headers,
                _header_block(_status_line(result), _response_headers(result)) + payload,
                _sha1(payload),
                True,
            )
            self._write_record(
                WarcRecordType.request,
                request_id,
                [*common, ("WARC-Concurrent-To", f"<urn:uuid:{response_id}>")],
                _request_block(result),
                _sha1(b""),
                True,
            )
            return position

    # -- durability --------------------------------------------------------------------------

    def flush(self) -> None:
        """Hand everything written so far to the operating system."""
        with self._lock:
            if self._gzip is not None:
                self._gzip.flush()
            if self._file is not None:
                self._file.flush()

    def sync(self) -> None:
        """:meth:`flush`, then ``fsync`` the file: what was written survives a power cut."""
        with self._lock:
            if self._file is not None:
                if self._gzip is not None:
                    self._gzip.flush()
                self._file.flush()
                os.fsync(self._file.fileno())

    def close(self) -> None:
        """Flush and close the current file; further writes raise ``ValueError``."""
        with self._lock:
            self._close_file()
            self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _complete_records(data: bytes) -> bool:
    """True when ``data`` is one or more whole WARC records, nothing more, nothing less."""
    at = 0
    while at < len(data):
        if not data.startswith(b"WARC/", at):
            return False
        end = data.find(b"\r\n\r\n", at)
        if end < 0:
            return False
        length: int | None = None
        for line in data[at:end].split(b"\r\n")[1:]:
            name, sep, value = line.partition(b":")
            if sep and name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    return False
                break
        if length is None or length < 0:
            return False
        at = end + 4 + length
        if data[at : at + 4] != b"\r\n\r\n":
            return False
        at += 4
    return True


def truncate_torn_tail(path: Path, *, start_offset: int = 0) -> int:
    """Cut ``path`` after its last complete, valid record; return the number of bytes cut.

    Scans gzip members from ``start_offset`` (a known member boundary, 0 = the
    start). A member is valid when it inflates completely (CRC and length
    trailer checked) to whole WARC records (``WARC/`` version line, headers,
    ``Content-Length`` bytes, closing CRLF CRLF). The file is truncated at the
    start of the first member that is not, so a record torn by ``kill -9`` or a
    power cut, or trailing zeros, disappears and the file ends on a record
    boundary. Costs one inflate of the scanned part.
    """
    path = Path(path)
    with open(path, "r+b") as handle:
        size = handle.seek(0, os.SEEK_END)
        good_end = min(max(0, start_offset), size)
        handle.seek(good_end)
        data = b""
        view = memoryview(data)
        pos = 0  # data[pos:] is not consumed yet
        data_at = good_end  # file offset of data[0]
        while True:
            if pos >= len(data):
                data_at += len(data)
                data = handle.read(_SCAN_CHUNK_BYTES)
                view, pos = memoryview(data), 0
                if not data:
                    break
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            pieces: list[bytes] = []
            complete = False
            try:
                while True:
                    piece = view[pos : pos + _SCAN_PIECE_BYTES]
                    pieces.append(inflater.decompress(piece))
                    if inflater.eof:
                        pos += len(piece) - len(inflater.unused_data)
                        complete = True
                        break
                    pos += len(piece)
                    if pos >= len(data):
                        data_at += len(data)
                        data = handle.read(_SCAN_CHUNK_BYTES)
                        view, pos = memoryview(data), 0
                        if not data:
                            break
            except zlib.error:
                complete = False
            if not complete or not _complete_records(b"".join(pieces)):
                break
            good_end = data_at + pos
        if good_end < size:
            handle.truncate(good_end)
            handle.flush()
            os.fsync(handle.fileno())
        return size - good_end

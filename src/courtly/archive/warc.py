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
  (``sha1:...``), as the standard expects; each is computed once, over bytes
  hashed once each (the block digest runs over the HTTP head, then the payload).
* Compression: ``gzip_level`` 0-3 deflates with ISA-L (``isal``, its levels 0-3;
  the default 2 is ISA-L's own default), 4-9 with zlib at that level. On HTML,
  ISA-L level 2 is about 7x cheaper than zlib level 6 for about 10% more bytes
  (docs/performance.md).
* Rotation: after a write leaves the file at or over ``max_file_bytes`` the next
  write starts a new file, so a file exceeds the limit by at most one exchange.
* Durability: an exchange's two gzip members go to the operating system in one
  ``write`` before :meth:`~WarcWriter.write_exchange` returns (the file is
  unbuffered), so a position it returns never points past what a killed process
  leaves on disk. :meth:`flush` is therefore a no-op kept for callers;
  :meth:`sync` ``fsync``\\s. After a crash the file may end with a torn record:
  :func:`truncate_torn_tail` cuts it, and :meth:`WarcWriter.open_existing` does
  that and appends to the last file. Complete records written after the last
  catalogue commit survive with no catalogue row; they are harmless duplicates
  once the URL is fetched again.
* Threads: every public method takes an internal lock, so the writer may be
  called from a worker thread; calls are serialised.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import re
import threading
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

from isal import isal_zlib
from yarl import URL

from courtly.clock import Clock, SystemClock
from courtly.errors import CrawlFailed
from courtly.fetch.records import FetchResult
from courtly.url.host import canonical_authority
from courtly.write_failure import RESUME_HINT, write_failure

__all__ = [
    "DEFAULT_GZIP_LEVEL",
    "DEFAULT_MAX_WARC_FILE_BYTES",
    "WarcPosition",
    "WarcWriter",
    "archive_prefix",
    "gzip_member",
    "new_record_id",
    "truncate_torn_tail",
    "warc_date",
]

DEFAULT_MAX_WARC_FILE_BYTES = 1 << 30
DEFAULT_GZIP_LEVEL = 2
"""ISA-L's default level: see the module docstring."""
_SCAN_CHUNK_BYTES = 1 << 20
_SCAN_PIECE_BYTES = 1 << 16
_ORIG = "X-Archive-Orig-"
_CRLF_RUN = re.compile(r"[\r\n]+")
_GZIP_WBITS = 16 + zlib.MAX_WBITS
_RECORD_END = b"\r\n\r\n"


@dataclass(frozen=True, slots=True)
class WarcPosition:
    """Where a record lives: ``filename`` (base name inside the WARC directory),
    ``offset`` of its gzip member from the file start, ``length`` of that member, bytes."""

    filename: str
    offset: int
    length: int


@functools.lru_cache(maxsize=64)
def _utc_seconds(whole_s: int) -> str:
    return datetime.fromtimestamp(whole_s, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def new_record_id() -> str:
    """A fresh random (version 4) UUID in its canonical text form, for a WARC-Record-ID.

    The same as ``str(uuid.uuid4())``, built without the ``uuid.UUID`` object (two of
    these per fetch)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def warc_date(at: float) -> str:
    """A WARC-Date for epoch seconds ``at``: UTC, ISO 8601, microseconds (WARC/1.1 allows them).

    The date and time of day are formatted once per second (exchanges of one second share it).
    """
    whole_s = math.floor(at)
    micros = round((at - whole_s) * 1_000_000)
    if micros >= 1_000_000:
        whole_s, micros = whole_s + 1, micros - 1_000_000
    return f"{_utc_seconds(whole_s)}.{micros:06d}Z"


_ARCHIVE_NAME = re.compile(r"^(courtly(?:-[0-9a-f]{8})?)-\d{5,}\.warc\.gz$")


def archive_prefix(directory: Path) -> str:
    """The WARC file-name prefix of the crawl archive in ``directory``.

    ``courtly-<8 hex digits>``, drawn at random when ``directory`` holds no archive
    yet, so that the files of different state directories never share a name: the
    partitions of one crawl (``--processes N``), the fetchers of a shared (Redis)
    crawl, and crawls gathered into one collection. The catalogue names a record's
    file by its base name (``warc_file``), which is then enough to find it. A
    directory that already holds files keeps their prefix (that of the newest one), so
    a resumed crawl goes on in its own series; archives written before this rule
    (``courtly-00000.warc.gz``) keep theirs.
    """
    try:
        entries = list(Path(directory).iterdir())
    except FileNotFoundError:
        entries = []
    found = [(p, m.group(1)) for p in entries if (m := _ARCHIVE_NAME.match(p.name))]
    if found:  # only the archive's files are looked at (stat) for the newest
        return max(found, key=lambda item: item[0].stat().st_mtime)[1]
    return f"courtly-{os.urandom(4).hex()}"


def gzip_member(data: bytes, level: int) -> bytes:
    """``data`` as one gzip member: ISA-L for ``level`` 0-3, zlib for 4-9."""
    if level <= isal_zlib.ISAL_BEST_COMPRESSION:
        return isal_zlib.compress(data, level, wbits=_GZIP_WBITS)
    return zlib.compress(data, level, wbits=_GZIP_WBITS)


_B32_TABLE = bytes(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[i] if i < 32 else 0 for i in range(256))


def _b32_spread_stages() -> tuple[tuple[int, int], ...]:
    # Halving blocks of 5-bit groups: the upper half of each block moves up by 3 bits a group.
    stages = []
    for groups in (32, 16, 8, 4, 2):
        half = groups // 2
        mask = sum(
            ((1 << (5 * half)) - 1) << (8 * groups * j + 5 * half) for j in range(32 // groups)
        )
        stages.append((mask, 3 * half))
    return tuple(stages)


_B32_STAGES = _b32_spread_stages()


def _b32_of_sha1(digest: bytes) -> bytes:
    """``base64.b32encode`` of a 20-byte digest (32 digits, no padding), about 3x faster.

    The 160 bits are 32 five-bit groups; five shift-and-mask steps on one integer move group
    ``k`` to byte ``k``, and a byte translation maps each to its digit.
    """
    value = int.from_bytes(digest, "big")
    for mask, shift in _B32_STAGES:
        high = value & mask
        value = (value ^ high) | (high << shift)
    return value.to_bytes(32, "big").translate(_B32_TABLE)


def _sha1_label(digest: bytes) -> bytes:
    return b"sha1:" + _b32_of_sha1(digest)


_EMPTY_SHA1 = _sha1_label(hashlib.sha1(b"").digest())


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
    authority = canonical_authority(result.url)
    if authority is not None and "#" not in result.url:
        # A canonical URL (the crawl's): the target and Host header are slices of it.
        host = authority
        target = result.url[result.url.index("/", result.url.index("://") + 3) :]
    else:
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


def _request_record(
    result: FetchResult, record_id: str, common: list[tuple[str, str]], concurrent_to: str
) -> bytes:
    """The ``request`` record of ``result``, ``WARC-Concurrent-To`` the record it goes with."""
    block = _request_block(result)
    return _record(
        "request",
        record_id,
        [*common, ("WARC-Concurrent-To", f"<urn:uuid:{concurrent_to}>")],
        "application/http; msgtype=request",
        block,
        [
            ("WARC-Payload-Digest", _EMPTY_SHA1),
            ("WARC-Block-Digest", _sha1_label(hashlib.sha1(block).digest())),
        ],
    )


def _status_line(result: FetchResult) -> str:
    reason = result.reason
    if not reason:
        try:
            reason = HTTPStatus(result.status).phrase
        except ValueError:
            reason = ""
    return f"HTTP/{result.http_version} {result.status} {reason}".rstrip()


def _record(
    record_type: str,
    record_id: str,
    headers: Iterable[tuple[str, str]],
    content_type: str,
    block: bytes,
    digests: Iterable[tuple[str, bytes]],
) -> bytes:
    """One WARC/1.1 record, uncompressed: version line, named fields, block, CRLF CRLF.

    ``digests`` are ``(field name, "sha1:..." label)`` pairs, written as given.
    """
    head = [
        b"WARC/1.1\r\nWARC-Type: ",
        record_type.encode("ascii"),
        b"\r\nWARC-Record-ID: <urn:uuid:",
        record_id.encode("ascii"),
        b">\r\n",
    ]
    for name, value in headers:
        head += [name.encode("ascii"), b": ", _clean(value), b"\r\n"]
    head += [b"Content-Type: ", content_type.encode("ascii"), b"\r\n"]
    for name, label in digests:
        head += [name.encode("ascii"), b": ", label, b"\r\n"]
    head += [b"Content-Length: ", str(len(block)).encode("ascii"), b"\r\n\r\n"]
    head += [block, _RECORD_END]
    return b"".join(head)


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
        gzip_level: int = DEFAULT_GZIP_LEVEL,
        clock: Clock | None = None,
        software: str = "courtly",
        warcinfo_fields: Mapping[str, str] | None = None,
    ) -> None:
        if not re.fullmatch(r"[A-Za-z0-9._-]+", prefix):
            raise ValueError(f"WARC prefix must be [A-Za-z0-9._-]+, got {prefix!r}")
        if max_file_bytes <= 0:
            raise ValueError("max_file_bytes must be positive")
        if not 0 <= gzip_level <= 9:
            raise ValueError(f"gzip_level must be 0-9, got {gzip_level}")
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
        gzip_level: int = DEFAULT_GZIP_LEVEL,
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
        # Unbuffered: each write goes straight to the OS (see Durability in the module doc).
        handle = open(path, "ab", buffering=0)  # noqa: SIM115 - owned until _close_file
        self._file = handle
        self._path = path
        self._size = handle.seek(0, os.SEEK_END)
        self._next_seq = self._seq_of(path) + 1
        if self._size == 0:
            self._write_warcinfo()

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
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

    def _append(self, members: list[bytes]) -> int:
        """Write gzip members in one go; the file offset where the first one starts.

        A write that fails (a full disk) is undone: the file is cut back to where the
        members began, so that it ends with a whole record (a later writer would cut a
        torn tail on open anyway), and :class:`~courtly.errors.CrawlFailed` names the file."""
        assert self._file is not None
        data = members[0] if len(members) == 1 else b"".join(members)
        view = memoryview(data)
        offset = self._size
        try:
            while view:
                written = self._file.write(view)
                if not written:  # pragma: no cover - a regular file takes every byte or raises
                    raise OSError("the WARC file accepted no bytes")
                view = view[written:]
        except OSError as error:
            with contextlib.suppress(OSError):
                self._file.truncate(offset)
            raise CrawlFailed(
                f"{self._path}: the WARC file failed ({write_failure(error)}); {RESUME_HINT}"
            ) from error
        self._size = offset + len(data)
        return offset

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
        record = _record(
            "warcinfo",
            new_record_id(),
            [("WARC-Date", warc_date(self._clock.now())), ("WARC-Filename", self._path.name)],
            "application/warc-fields",
            block,
            [("WARC-Block-Digest", _sha1_label(hashlib.sha1(block).digest()))],
        )
        self._append([gzip_member(record, self.gzip_level)])

    def write_exchange(self, result: FetchResult, *, record_id: str | None = None) -> WarcPosition:
        """Archive one fetch (page or robots.txt alike); returns the response record's position.

        ``record_id`` (a UUID string) names the response record, so that a later
        revisit record can refer to it; a fresh one by default. Both records are with
        the operating system when this returns.
        """
        response_id = record_id if record_id is not None else new_record_id()
        request_id = new_record_id()
        common = [("WARC-Date", warc_date(result.started_at)), ("WARC-Target-URI", result.url)]
        if result.ip:
            common.append(("WARC-IP-Address", result.ip))
        response_fields = [*common, ("WARC-Concurrent-To", f"<urn:uuid:{request_id}>")]
        if result.truncated:
            response_fields.append(("WARC-Truncated", "length"))
        payload = result.raw_body if result.raw_body is not None else result.body
        http_head = _header_block(_status_line(result), _response_headers(result))
        block_digest = hashlib.sha1(http_head)
        block_digest.update(payload)
        response = _record(
            "response",
            response_id,
            response_fields,
            "application/http; msgtype=response",
            http_head + payload,
            [
                ("WARC-Payload-Digest", _sha1_label(hashlib.sha1(payload).digest())),
                ("WARC-Block-Digest", _sha1_label(block_digest.digest())),
            ],
        )
        request = _request_record(result, request_id, common, response_id)
        return self.write_records([response, request])

    def write_records(self, records: list[bytes]) -> WarcPosition:
        """Append whole uncompressed records, each as its own gzip member, in one write;
        returns the first one's position (the others follow it)."""
        level = self.gzip_level
        members = [gzip_member(record, level) for record in records]
        with self._lock:
            self._ensure_file()
            assert self._path is not None
            offset = self._append(members)
            return WarcPosition(self._path.name, offset, len(members[0]))

    # -- durability --------------------------------------------------------------------------

    def flush(self) -> None:
        """Hand everything written so far to the operating system: every write already has."""
        with self._lock:
            return

    def sync(self) -> None:
        """:meth:`flush`, then ``fsync`` the file: what was written survives a power cut."""
        with self._lock:
            if self._file is not None:
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

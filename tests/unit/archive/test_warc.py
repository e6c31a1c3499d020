from __future__ import annotations

import base64
import errno
import gzip
import io
import random
import re
import threading
import uuid
from pathlib import Path
from typing import BinaryIO

import pytest
from fastwarc.warc import ArchiveIterator as FastArchiveIterator
from fastwarc.warc import WarcRecordType
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from courtly.archive import WarcPosition, WarcWriter, truncate_torn_tail, warc_date
from courtly.archive.warc import _sha1_label, archive_prefix, new_record_id
from courtly.clock import FakeClock
from courtly.errors import CrawlFailed
from courtly.fetch.records import FetchResult
from courtly.write_failure import RESUME_HINT


def make_result(index: int, *, body_bytes: int = 300, noise: bool = False) -> FetchResult:
    """A varied exchange: encodings, truncation, robots.txt, errors, odd headers."""
    filler = random.Random(index).randbytes(body_bytes) if noise else b"x" * body_bytes
    body = f"<html><body>page {index} ".encode() + filler + b"</body></html>"
    headers: list[tuple[str, str]] = [("Content-Type", "text/html; charset=utf-8")]
    raw_body: bytes | None = None
    url = f"http://site{index % 3}.test/page/{index}?q={index}"
    status = 200
    truncated = False
    kind = index % 5
    if kind == 1:  # gzip on the wire, raw kept
        raw_body = gzip.compress(body)
        headers += [("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")]
    elif kind == 2:  # decoded body only, fetcher kept no raw bytes
        headers += [("Content-Encoding", "gzip"), ("Content-Length", "77")]
    elif kind == 3:
        url = f"http://site{index % 3}.test/robots.txt"
        body = b"User-agent: *\nDisallow: /private\n"
        headers = [("Content-Type", "text/plain"), ("X-Odd", "caf\u00e9\r\ninjected: 1")]
    elif kind == 4:
        status = 404 if index % 2 else 301
        headers.append(("Location", "/elsewhere"))
        truncated = index % 2 == 0
    return FetchResult(
        url=url,
        status=status,
        headers=tuple(headers),
        body=body,
        raw_body=raw_body,
        started_at=1_700_000_000.0 + index,
        ended_at=1_700_000_000.25 + index,
        truncated=truncated,
        ip="127.0.0.1",
        request_headers=(("User-Agent", "courtly/0.1 (+mailto:ops@example.org)"),),
    )


def read_all(path: Path) -> list[tuple[str, dict[str, str], bytes, bool]]:
    """(type, WARC headers, block after HTTP headers, digests ok) per record, via warcio."""
    out = []
    with open(path, "rb") as handle:
        for record in ArchiveIterator(handle, check_digests=True):
            raw = record.raw_stream.read()
            headers = dict(record.rec_headers.headers)
            ok = record.digest_checker.passed is True and not record.digest_checker.problems
            out.append((record.rec_type, headers, raw, ok))
    return out


@pytest.fixture
def writer(tmp_path: Path) -> WarcWriter:
    return WarcWriter(tmp_path, clock=FakeClock(), gzip_level=1)


def test_twenty_exchanges_read_back_with_valid_digests(writer: WarcWriter, tmp_path: Path) -> None:
    results = [make_result(i) for i in range(20)]
    positions = [writer.write_exchange(r) for r in results]
    writer.close()
    files = sorted(tmp_path.glob("*.warc.gz"))
    assert [f.name for f in files] == ["courtly-00000.warc.gz"]
    records = read_all(files[0])
    assert [r[0] for r in records] == ["warcinfo"] + ["response", "request"] * 20
    assert all(ok for *_, ok in records)
    for result, (_, headers, block, _) in zip(results, records[1::2], strict=True):
        assert headers["WARC-Target-URI"] == result.url
        assert headers["WARC-IP-Address"] == "127.0.0.1"
        assert headers["WARC-Date"] == warc_date(result.started_at)
        payload = result.raw_body if result.raw_body is not None else result.body
        assert block == payload
        assert ("WARC-Truncated" in headers) == result.truncated
    assert {p.filename for p in positions} == {"courtly-00000.warc.gz"}

    fast_count = 0
    for record in FastArchiveIterator(str(files[0]), parse_http=False):
        fast_count += 1
        assert record.verify_block_digest()
        if record.record_type == WarcRecordType.response:
            record.parse_http()
            assert record.verify_payload_digest()
    assert fast_count == 41


def test_request_and_response_point_at_each_other(writer: WarcWriter, tmp_path: Path) -> None:
    writer.write_exchange(make_result(0))
    writer.close()
    _, response, request = read_all(next(tmp_path.glob("*.warc.gz")))
    assert response[1]["WARC-Concurrent-To"] == request[1]["WARC-Record-ID"]
    assert request[1]["WARC-Concurrent-To"] == response[1]["WARC-Record-ID"]
    assert request[2] == b""  # a GET carries no body


def test_positions_point_at_the_response_records(writer: WarcWriter, tmp_path: Path) -> None:
    results = [make_result(i) for i in range(20)]
    positions = [writer.write_exchange(r) for r in results]
    writer.close()
    data = (tmp_path / positions[0].filename).read_bytes()
    for result, pos in zip(results, positions, strict=True):
        member = data[pos.offset : pos.offset + pos.length]
        (record,) = list(ArchiveIterator(io.BytesIO(member)))
        assert record.rec_type == "response"
        assert record.rec_headers.get_header("WARC-Target-URI") == result.url
        assert record.http_headers.get_statuscode() == str(result.status)
        # a reader can also start at the offset and read on
        stream = io.BytesIO(data)
        stream.seek(pos.offset)
        first = next(iter(ArchiveIterator(stream)))
        assert first.rec_headers.get_header("WARC-Target-URI") == result.url


def test_headers_are_renamed_when_the_stored_body_differs_from_the_wire(
    writer: WarcWriter, tmp_path: Path
) -> None:
    writer.write_exchange(make_result(1))  # raw gzip kept: Content-Encoding stays
    writer.write_exchange(make_result(2))  # decoded only: Content-Encoding renamed
    writer.write_exchange(make_result(3))  # header value with CR/LF folded
    writer.close()
    with open(next(tmp_path.glob("*.warc.gz")), "rb") as handle:
        http = [r.http_headers for r in ArchiveIterator(handle) if r.rec_type == "response"]
    assert http[0].get_header("Content-Encoding") == "gzip"
    assert http[0].get_header("Transfer-Encoding") is None
    assert http[0].get_header("X-Archive-Orig-Transfer-Encoding") == "chunked"
    assert http[1].get_header("Content-Encoding") is None
    assert http[1].get_header("X-Archive-Orig-Content-Encoding") == "gzip"
    assert http[1].get_header("X-Archive-Orig-Content-Length") == "77"
    assert http[2].get_header("injected") is None


def test_rotation_by_size(tmp_path: Path) -> None:
    writer = WarcWriter(tmp_path, clock=FakeClock(), max_file_bytes=3000, gzip_level=1)
    results = [make_result(i * 5, body_bytes=1500, noise=True) for i in range(12)]
    positions = [writer.write_exchange(r) for r in results]
    writer.close()
    files = sorted(tmp_path.glob("*.warc.gz"))
    assert len(files) > 1
    assert [f.name for f in files] == [f"courtly-{i:05d}.warc.gz" for i in range(len(files))]
    for path in files:
        records = read_all(path)
        assert records[0][0] == "warcinfo"
        assert records[0][1]["WARC-Filename"] == path.name
        assert all(ok for *_, ok in records)
        # a file is only left once it reached the limit, and only its last exchange crossed it
        last_start = max(p.offset for p in positions if p.filename == path.name)
        assert last_start < 3000
        if path != files[-1]:
            assert path.stat().st_size >= 3000
    for result, pos in zip(results, positions, strict=True):
        member = (tmp_path / pos.filename).read_bytes()[pos.offset : pos.offset + pos.length]
        (record,) = list(ArchiveIterator(io.BytesIO(member)))
        assert record.rec_headers.get_header("WARC-Target-URI") == result.url


def test_a_new_writer_never_overwrites_existing_files(tmp_path: Path) -> None:
    with WarcWriter(tmp_path, clock=FakeClock()) as first:
        first.write_exchange(make_result(0))
    before = (tmp_path / "courtly-00000.warc.gz").read_bytes()
    with WarcWriter(tmp_path, clock=FakeClock()) as second:
        pos = second.write_exchange(make_result(1))
    assert pos.filename == "courtly-00001.warc.gz"
    assert (tmp_path / "courtly-00000.warc.gz").read_bytes() == before


def test_writes_after_close_are_refused(writer: WarcWriter) -> None:
    writer.close()
    with pytest.raises(ValueError):
        writer.write_exchange(make_result(0))


def _synced_file(tmp_path: Path, count: int) -> tuple[Path, list[WarcPosition], int]:
    writer = WarcWriter(tmp_path, clock=FakeClock(), gzip_level=1)
    positions = [writer.write_exchange(make_result(i)) for i in range(count)]
    writer.sync()
    path = tmp_path / positions[0].filename
    size = path.stat().st_size
    writer.close()
    return path, positions, size


def test_torn_tail_inside_the_response_record_is_cut(tmp_path: Path) -> None:
    path, positions, _size = _synced_file(tmp_path, 6)
    last = positions[-1]
    cut_at = last.offset + last.length // 2
    with open(path, "r+b") as handle:
        handle.truncate(cut_at)
    assert truncate_torn_tail(path) == cut_at - last.offset
    assert path.stat().st_size == last.offset
    records = read_all(path)
    assert [r[0] for r in records] == ["warcinfo"] + ["response", "request"] * 5
    assert all(ok for *_, ok in records)
    assert truncate_torn_tail(path) == 0  # idempotent


def test_torn_request_keeps_the_complete_response_and_trailing_zeros_go(tmp_path: Path) -> None:
    path, positions, size = _synced_file(tmp_path, 3)
    last = positions[-1]
    response_end = last.offset + last.length
    cut_at = response_end + (size - response_end) // 2
    with open(path, "r+b") as handle:
        handle.truncate(cut_at)
        handle.seek(0, 2)
        handle.write(b"\0" * 4096)
    assert (
        truncate_torn_tail(path, start_offset=positions[0].offset) == cut_at + 4096 - response_end
    )
    assert path.stat().st_size == response_end
    assert [r[0] for r in read_all(path)][-2:] == ["request", "response"]


def test_a_corrupt_member_cuts_everything_after_it(tmp_path: Path) -> None:
    path, positions, size = _synced_file(tmp_path, 4)
    victim = positions[2]
    data = bytearray(path.read_bytes())
    data[victim.offset + victim.length // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert truncate_torn_tail(path) == size - victim.offset
    assert len(read_all(path)) == 1 + 2 * 2


def test_open_existing_cuts_the_tail_and_appends(tmp_path: Path) -> None:
    path, _positions, size = _synced_file(tmp_path, 4)
    with open(path, "r+b") as handle:
        handle.truncate(size - 7)
    writer = WarcWriter.open_existing(tmp_path, clock=FakeClock())
    assert writer.bytes_cut_on_open > 0
    pos = writer.write_exchange(make_result(99))
    writer.close()
    assert pos.filename == path.name
    records = read_all(path)
    assert [r[0] for r in records].count("warcinfo") == 1
    assert records[-2][1]["WARC-Target-URI"] == make_result(99).url
    assert all(ok for *_, ok in records)


def test_open_existing_on_an_empty_directory_starts_fresh(tmp_path: Path) -> None:
    writer = WarcWriter.open_existing(tmp_path / "new", clock=FakeClock())
    pos = writer.write_exchange(make_result(0))
    writer.close()
    assert pos.filename == "courtly-00000.warc.gz"
    assert read_all(tmp_path / "new" / pos.filename)[0][0] == "warcinfo"


def test_open_existing_rewrites_warcinfo_when_nothing_survived(tmp_path: Path) -> None:
    path, _, _ = _synced_file(tmp_path, 1)
    with open(path, "r+b") as handle:
        handle.truncate(10)
    writer = WarcWriter.open_existing(tmp_path, clock=FakeClock())
    writer.write_exchange(make_result(1))
    writer.close()
    assert [r[0] for r in read_all(path)] == ["warcinfo", "response", "request"]


def test_threads_can_share_a_writer(writer: WarcWriter, tmp_path: Path) -> None:
    def work(start: int) -> None:
        for i in range(start, start + 10):
            writer.write_exchange(make_result(i))

    threads = [threading.Thread(target=work, args=(k * 10,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    records = read_all(next(tmp_path.glob("*.warc.gz")))
    assert len(records) == 1 + 80
    assert all(ok for *_, ok in records)


_TEMPLATE: dict[str, tuple[bytes, list[int]]] = {}


def _template(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, list[int]]:
    """A 5-exchange WARC file and its record boundaries (0 and every record end)."""
    if "data" not in _TEMPLATE:
        path, _, _ = _synced_file(tmp_path_factory.mktemp("template"), 5)
        boundaries = [0]
        with open(path, "rb") as handle:
            iterator = ArchiveIterator(handle)
            for record in iterator:
                record.raw_stream.read()
                boundaries.append(iterator.get_record_offset() + iterator.get_record_length())
        _TEMPLATE["data"] = (path.read_bytes(), boundaries)
    return _TEMPLATE["data"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(fraction=st.floats(min_value=0.0, max_value=1.0), garbage=st.binary(max_size=64))
def test_any_torn_file_is_cut_to_a_readable_prefix(
    tmp_path_factory: pytest.TempPathFactory, fraction: float, garbage: bytes
) -> None:
    data, boundaries = _template(tmp_path_factory)
    cut_at = int(len(data) * fraction)
    path = tmp_path_factory.mktemp("torn") / "courtly-00000.warc.gz"
    path.write_bytes(data[:cut_at] + garbage)
    truncate_torn_tail(path)
    kept = path.read_bytes()
    assert data.startswith(kept)
    assert len(kept) in boundaries
    assert len(kept) >= max(b for b in boundaries if b <= cut_at)  # nothing whole was lost
    records = read_all(path) if kept else []
    assert len(records) == boundaries.index(len(kept))
    assert all(ok for *_, ok in records)


def test_torn_tail_scan_crosses_read_chunks(tmp_path: Path) -> None:
    writer = WarcWriter(tmp_path, clock=FakeClock(), gzip_level=1)
    positions = [
        writer.write_exchange(make_result(i * 5, body_bytes=400_000, noise=True)) for i in range(6)
    ]
    writer.close()
    path = tmp_path / positions[0].filename
    assert path.stat().st_size > 2 * 1024 * 1024
    last = positions[-1]
    with open(path, "r+b") as handle:
        handle.truncate(last.offset + last.length - 1)
    assert truncate_torn_tail(path) == last.length - 1
    assert [r[0] for r in read_all(path)] == ["warcinfo"] + ["response", "request"] * 5
    assert truncate_torn_tail(path, start_offset=positions[2].offset) == 0


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4, 6, 9])
def test_every_gzip_level_writes_valid_records(tmp_path: Path, level: int) -> None:
    writer = WarcWriter(tmp_path, clock=FakeClock(), gzip_level=level)
    results = [make_result(i, body_bytes=5_000) for i in range(5)]
    for result in results:
        writer.write_exchange(result)
    writer.close()
    records = read_all(next(tmp_path.glob("*.warc.gz")))
    assert [r[0] for r in records] == ["warcinfo"] + ["response", "request"] * 5
    assert all(ok for *_, ok in records)
    for result, (_, _, block, _) in zip(results, records[1::2], strict=True):
        assert block == (result.raw_body if result.raw_body is not None else result.body)


@pytest.mark.parametrize("level", [-1, 10])
def test_a_gzip_level_outside_0_to_9_is_refused(tmp_path: Path, level: int) -> None:
    with pytest.raises(ValueError, match="gzip_level"):
        WarcWriter(tmp_path, gzip_level=level)


def test_records_are_on_disk_when_write_exchange_returns(
    writer: WarcWriter, tmp_path: Path
) -> None:
    # No flush, no close: what another process reads now is what a kill -9 would leave.
    for index in range(6):
        position = writer.write_exchange(make_result(index))
        data = (tmp_path / position.filename).read_bytes()
        assert len(data) > position.offset + position.length  # the request member follows
        member = data[position.offset : position.offset + position.length]
        records = []
        for record in ArchiveIterator(io.BytesIO(member), check_digests=True):
            record.raw_stream.read()
            records.append(
                (record.rec_headers.get_header("WARC-Target-URI"), record.digest_checker)
            )
        ((url, digests),) = records
        assert url == make_result(index).url
        assert digests.passed is True
        assert truncate_torn_tail(tmp_path / position.filename) == 0
    writer.close()


@settings(max_examples=500, deadline=None)
@given(st.binary(min_size=20, max_size=20))
def test_digest_labels_are_standard_base32(digest: bytes) -> None:
    assert _sha1_label(digest) == b"sha1:" + base64.b32encode(digest)


def test_new_record_ids_are_distinct_version_4_uuids_in_canonical_form() -> None:
    ids = [new_record_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == text


def test_archive_prefixes_are_new_per_directory_and_kept_on_resume(tmp_path: Path) -> None:
    """Two state directories never name their WARC files alike (the partitions of one
    crawl, the fetchers of a shared one); a directory keeps its own series on resume,
    and an archive written before the rule keeps its plain ``courtly-`` names."""
    first, second = tmp_path / "a", tmp_path / "b"
    prefixes = {archive_prefix(first), archive_prefix(second), archive_prefix(tmp_path / "c")}
    assert len(prefixes) == 3
    assert all(re.fullmatch(r"courtly-[0-9a-f]{8}", p) for p in prefixes)
    prefix = archive_prefix(first)
    writer = WarcWriter(first, prefix=prefix, clock=FakeClock(1000.0))
    writer.write_exchange(make_result(0))
    writer.close()
    assert archive_prefix(first) == prefix  # resumed: the same series
    again = WarcWriter.open_existing(first, prefix=archive_prefix(first))
    again.write_exchange(make_result(1))
    again.close()
    assert [p.name for p in sorted(first.iterdir())] == [f"{prefix}-00000.warc.gz"]
    old = tmp_path / "old"
    old.mkdir()
    (old / "courtly-00003.warc.gz").write_bytes(gzip.compress(b""))
    (old / "notes.txt").write_text("not an archive")
    assert archive_prefix(old) == "courtly"


class _FillingFile:
    """A file that takes ``room`` more bytes, part of a write included, then fails with
    ENOSPC as a full disk does."""

    def __init__(self, real: BinaryIO, room: int) -> None:
        self._real = real
        self._room = room

    def write(self, data: memoryview) -> int:
        if self._room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        taken = self._real.write(data[: self._room])
        self._room -= taken
        return taken

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)


def test_a_write_to_a_full_disk_is_cut_back_and_names_the_file(
    writer: WarcWriter, tmp_path: Path
) -> None:
    writer.write_exchange(make_result(0))
    path = writer.current_path
    assert path is not None
    whole = path.stat().st_size
    assert writer._file is not None
    writer._file = _FillingFile(writer._file, room=100)  # type: ignore[assignment]
    with pytest.raises(CrawlFailed, match="the disk is full") as failed:
        writer.write_exchange(make_result(1))
    assert str(path) in str(failed.value) and str(failed.value).endswith(RESUME_HINT)
    assert path.stat().st_size == whole  # the 100 bytes written are cut off
    writer._file = writer._file._real  # type: ignore[union-attr]
    position = writer.write_exchange(make_result(2))  # space again: the file goes on
    writer.close()
    assert position.offset == whole
    records = read_all(path)
    assert [r[0] for r in records] == ["warcinfo", "response", "request", "response", "request"]
    assert all(ok for *_, ok in records)

"""WARC 1.1 revisit records, read back and digest-checked with warcio."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from courtly.archive import WarcWriter, warc_date
from courtly.archive.revisit import (
    IDENTICAL_PAYLOAD_DIGEST,
    SERVER_NOT_MODIFIED,
    RevisitRef,
    payload_digest,
    write_revisit,
)
from courtly.clock import FakeClock
from courtly.fetch.records import FetchResult

URL = "http://news.test/page"
BODY = b"<html><body>hello</body></html>"


def result(status: int, body: bytes, at: float) -> FetchResult:
    headers = (("Content-Type", "text/html"), ("ETag", '"v1"'))
    return FetchResult(
        url=URL,
        status=status,
        headers=headers,
        body=body,
        started_at=at,
        ended_at=at + 0.1,
        raw_body=body,
        request_headers=(("If-None-Match", '"v1"'),) if status == 304 else (),
    )


def test_a_304_and_a_repeated_payload_become_revisit_records(tmp_path: Path) -> None:
    clock = FakeClock()
    at = clock.now()
    with WarcWriter(tmp_path, clock=clock) as writer:
        first_id = str(uuid.uuid4())
        first = writer.write_exchange(result(200, BODY, at), record_id=first_id)
        ref = RevisitRef(first_id, URL, warc_date(at), payload_digest(BODY))
        not_modified = write_revisit(writer, result(304, b"", at + 60), SERVER_NOT_MODIFIED, ref)
        same = write_revisit(writer, result(200, BODY, at + 120), IDENTICAL_PAYLOAD_DIGEST, ref)
    records = []
    with (tmp_path / first.filename).open("rb") as handle:
        for record in ArchiveIterator(handle, check_digests=True):
            assert not record.digest_checker.problems
            records.append(
                (
                    record.rec_type,
                    dict(record.rec_headers.headers),
                    record.http_headers.get_statuscode() if record.http_headers else None,
                    record.content_stream().read(),
                )
            )
    types = [r[0] for r in records]
    assert types == ["warcinfo", "response", "request", "revisit", "request", "revisit", "request"]
    response, nm, ipd = records[1], records[3], records[5]
    assert response[1]["WARC-Record-ID"] == f"<urn:uuid:{first_id}>"
    for revisit, profile, status in (
        (nm, SERVER_NOT_MODIFIED, "304"),
        (ipd, IDENTICAL_PAYLOAD_DIGEST, "200"),
    ):
        fields = revisit[1]
        assert fields["WARC-Profile"] == profile
        assert fields["WARC-Refers-To"] == f"<urn:uuid:{first_id}>"
        assert fields["WARC-Refers-To-Target-URI"] == URL
        assert fields["WARC-Refers-To-Date"] == warc_date(at)
        assert fields["WARC-Payload-Digest"] == response[1]["WARC-Payload-Digest"]
        assert revisit[2] == status
        assert revisit[3] == b""  # no payload in a revisit block
    assert ipd[1]["WARC-Truncated"] == "length"
    assert not_modified.offset < same.offset


def test_an_unknown_profile_is_refused(tmp_path: Path) -> None:
    with WarcWriter(tmp_path) as writer, pytest.raises(ValueError):
        write_revisit(writer, result(304, b"", 1.0), "http://example.invalid/p", RevisitRef())

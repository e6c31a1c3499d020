from __future__ import annotations

import io
import json

from courtly.archive import CatalogueEntry, export_jsonl
from courtly.archive.catalogue import NOT_EXPORTED, fail_reason_for_status
from courtly.parse import content_hash, simhash64


def test_json_dict_has_every_exported_field_and_hex_fingerprints() -> None:
    body = b"<p>hello</p>"
    entry = CatalogueEntry(
        url="http://a.test/",
        status=200,
        fetched_at=1_700_000_000.5,
        content_hash=content_hash(body),
        simhash=simhash64("hello world again"),
        content_bytes=len(body),
        raw_bytes=len(body),
        warc_file="courtly-00000.warc.gz",
        warc_offset=331,
        warc_length=459,
    )
    data = entry.to_json_dict()
    exported = [name for name in CatalogueEntry.__dataclass_fields__ if name not in NOT_EXPORTED]
    assert list(data) == exported
    assert "simhash" not in data and "change_count" not in data  # not filled by the crawl yet
    assert data["content_hash"] == format(content_hash(body), "016x")
    assert data["skip_reason"] is None and data["fail_reason"] is None
    assert list(data)[-1] == "fail_reason"


def test_fail_reason_names_error_and_throttling_statuses_only() -> None:
    assert fail_reason_for_status(429) == "http_429"
    assert fail_reason_for_status(503) == "http_503"
    assert fail_reason_for_status(404) == "http_404"
    assert fail_reason_for_status(200) is None
    assert fail_reason_for_status(301) is None


def test_export_jsonl_writes_one_object_per_line() -> None:
    entries = [
        CatalogueEntry(url="http://a.test/", status=200, content_hash=2**64 - 1),
        CatalogueEntry(url="http://a.test/ünï", skip_reason="robots", depth=3),
        CatalogueEntry(url="http://a.test/r", status=301, redirect_to="http://a.test/"),
    ]
    out = io.StringIO()
    assert export_jsonl(entries, out) == 3
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    decoded = [json.loads(line) for line in lines]
    assert decoded[0]["content_hash"] == "ffffffffffffffff"
    assert decoded[1]["url"] == "http://a.test/ünï"
    assert decoded[1]["skip_reason"] == "robots" and decoded[1]["status"] is None
    assert decoded[2]["redirect_to"] == "http://a.test/"


def test_export_of_nothing_writes_nothing() -> None:
    out = io.StringIO()
    assert export_jsonl(iter(()), out) == 0
    assert out.getvalue() == ""

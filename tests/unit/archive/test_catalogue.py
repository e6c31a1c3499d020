from __future__ import annotations

import io
import json

from courtly.archive import CatalogueEntry, export_jsonl
from courtly.parse import content_hash, simhash64


def test_json_dict_has_every_field_and_hex_fingerprints() -> None:
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
    assert list(data) == list(CatalogueEntry.__dataclass_fields__)
    assert data["content_hash"] == format(content_hash(body), "016x")
    assert isinstance(data["simhash"], str) and len(data["simhash"]) == 16
    assert int(str(data["simhash"]), 16) == entry.simhash
    assert data["skip_reason"] is None


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

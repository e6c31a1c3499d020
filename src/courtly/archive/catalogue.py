"""The catalogue record: what the crawl knows about one URL, and its JSON Lines export.

Storing entries is the store's job; this module only defines the record and the
export format. One JSON object per line, keys in field order, ``null`` for
unknown values. 64-bit fingerprints (``content_hash``, ``simhash``) are written
as 16-digit lower-case hex strings, because JSON readers that use doubles would
silently round integers above 2**53.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import TextIO

__all__ = ["CatalogueEntry", "export_jsonl"]

_HEX_FIELDS = frozenset({"content_hash", "simhash"})


def _hex64(value: int) -> str:
    return format(value & 0xFFFF_FFFF_FFFF_FFFF, "016x")


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    """One URL's outcome.

    Fetched pages have ``status`` and ``fetched_at`` (epoch seconds); URLs that
    were never fetched carry ``skip_reason`` (e.g. ``"robots"``, ``"scope"``,
    ``"budget"``, ``"error:timeout"``) instead. ``content_hash`` is xxh3-64 of
    the decoded body, ``simhash`` the 64-bit text fingerprint (HTML only),
    ``content_bytes`` the decoded body length and ``raw_bytes`` the length as
    received. ``warc_file``/``warc_offset``/``warc_length`` locate the response
    record (one gzip member). ``redirect_to`` is the resolved ``Location`` of a
    3xx. ``etag``/``last_modified`` feed conditional GETs on recrawl;
    ``change_count`` counts fetches whose ``content_hash`` differed from the
    previous one.
    """

    url: str
    status: int | None = None
    fetched_at: float | None = None
    depth: int = 0
    referrer: str | None = None
    skip_reason: str | None = None
    content_type: str | None = None
    content_hash: int | None = None
    simhash: int | None = None
    content_bytes: int | None = None
    raw_bytes: int | None = None
    elapsed_s: float | None = None
    warc_file: str | None = None
    warc_offset: int | None = None
    warc_length: int | None = None
    redirect_to: str | None = None
    canonical: str | None = None
    title: str | None = None
    noindex: bool = False
    etag: str | None = None
    last_modified: str | None = None
    change_count: int = 0

    def to_json_dict(self) -> dict[str, object]:
        """A JSON-ready dict: every field, hashes as 16-digit hex strings, ``None`` kept."""
        out: dict[str, object] = {}
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.name in _HEX_FIELDS and value is not None:
                value = _hex64(value)
            out[spec.name] = value
        return out


def export_jsonl(entries: Iterable[CatalogueEntry], out: TextIO) -> int:
    """Write one JSON object per line to ``out`` (text, ``\\n`` endings); return the count."""
    count = 0
    for entry in entries:
        out.write(json.dumps(entry.to_json_dict(), ensure_ascii=False, separators=(",", ":")))
        out.write("\n")
        count += 1
    return count

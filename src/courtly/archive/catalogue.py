"""The catalogue record: what the crawl knows about one URL, and its JSON Lines export.

Storing entries is the store's job; this module only defines the record and the
export format. One JSON object per line, keys in field order, ``null`` for
unknown values. 64-bit fingerprints (``content_hash``) are written as 16-digit
lower-case hex strings, because JSON readers that use doubles would silently
round integers above 2**53. ``simhash`` and ``change_count`` are kept in the
record (and the state file) but left out of the export until the crawl fills
them (:data:`NOT_EXPORTED`).

``fail_reason`` says why a URL was not fetched, or not fetched well, in one
stable word (:data:`FAIL_REASONS`): ``http_<status>`` for an error or throttling
status (``http_429``, ``http_503``, ``http_404``...; a throttled URL not fetched since
has no ``status``), the fetch error kind for a
request that got no response (``connect``: refused or reset, ``timeout``,
``dns``, ``protocol``, ``too_long_url``), ``blocked`` for an address the guard
refused, ``robots_unreachable`` for a host whose robots.txt could not be read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import TextIO

__all__ = [
    "FAIL_REASONS",
    "NOT_EXPORTED",
    "CatalogueEntry",
    "export_jsonl",
    "fail_reason_for_status",
    "replaces",
]

_HEX_FIELDS = frozenset({"content_hash", "simhash"})
NOT_EXPORTED: frozenset[str] = frozenset({"simhash", "change_count"})
"""Fields the crawl does not fill yet: always null/0, so not exported."""
FAIL_REASONS: tuple[str, ...] = (
    "http_<status>",
    "connect",
    "timeout",
    "dns",
    "protocol",
    "interrupted",
    "too_long_url",
    "blocked",
    "robots_unreachable",
)
"""The values of ``CatalogueEntry.fail_reason`` (``http_<status>`` for any status >= 400)."""


def fail_reason_for_status(status: int) -> str | None:
    """``http_<status>`` for a status that is an error or a throttling answer (>= 400)."""
    return f"http_{status}" if status >= 400 else None


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
    previous one (``simhash`` and ``change_count`` are not filled yet).
    ``fail_reason`` says why the fetch failed (see the module doc), ``None``
    for a URL fetched with a status below 400 or not tried yet.
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
    fail_reason: str | None = None

    def to_json_dict(self) -> dict[str, object]:
        """A JSON-ready dict: every exported field (not :data:`NOT_EXPORTED`), hashes as
        16-digit hex strings, ``None`` kept."""
        out: dict[str, object] = {}
        for spec in fields(self):
            if spec.name in NOT_EXPORTED:
                continue
            value = getattr(self, spec.name)
            if spec.name in _HEX_FIELDS and value is not None:
                value = _hex64(value)
            out[spec.name] = value
        return out


def export_jsonl(
    entries: Iterable[CatalogueEntry],
    out: TextIO,
    extra: Mapping[str, Mapping[str, object]] | None = None,
) -> int:
    """Write one JSON object per line to ``out`` (text, ``\\n`` endings); return the count.
    ``extra`` maps a URL to more keys for its line (``recrawl``: the URL's recrawl row)."""
    count = 0
    for entry in entries:
        data = entry.to_json_dict()
        if extra is not None and entry.url in extra:
            data.update(extra[entry.url])
        out.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
        out.write("\n")
        count += 1
    return count


def replaces(new: CatalogueEntry, old: CatalogueEntry) -> bool:
    """Whether ``new`` may replace ``old``, the catalogue's entry for the same URL.

    Every entry does, except a refusal (``skip_reason`` set, no ``status``, no
    ``fail_reason``) over a URL that was fetched (``old.status`` set): a later link to a
    fetched page that scope, depth or a trap bound refuses says nothing about the page.
    The stores apply this rule (the SQLite upsert and the Redis scripts mirror it).
    """
    refusal = new.status is None and new.skip_reason is not None and new.fail_reason is None
    return not (refusal and old.status is not None)

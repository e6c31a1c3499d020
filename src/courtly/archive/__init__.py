"""Archiving: WARC files (one gzip member per record) and the catalogue record and export."""

from __future__ import annotations

from courtly.archive.catalogue import CatalogueEntry, export_jsonl
from courtly.archive.warc import (
    DEFAULT_MAX_WARC_FILE_BYTES,
    WarcPosition,
    WarcWriter,
    truncate_torn_tail,
    warc_date,
)

__all__ = [
    "DEFAULT_MAX_WARC_FILE_BYTES",
    "CatalogueEntry",
    "WarcPosition",
    "WarcWriter",
    "export_jsonl",
    "truncate_torn_tail",
    "warc_date",
]

"""The revisit book of crawls written before state version 6: one JSON blob
(``recrawl``/``book``) holding every URL's state. A crawl resumed with ``--recrawl`` reads
it once, writes its states as recrawl rows (:mod:`courtly.store.revisit_rows`) and empties
the blob."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Final

from courtly.fetch.validators import Validators
from courtly.frontier.revisit import RevisitState
from courtly.store.revisit_rows import RevisitRow

__all__ = ["BLOB", "rows_from_blob"]

BLOB: Final = ("recrawl", "book")
_FORMAT: Final = 1


def rows_from_blob(
    data: bytes, host_key: Callable[[str], str], lost_after_s: Callable[[int], float]
) -> list[RevisitRow]:
    """The rows of a saved book. A URL that was out (queued) when it was saved is due
    again ``lost_after_s(lane)`` after its due time unless its visit comes first, as the
    book itself did on a resume."""
    document = json.loads(data)
    if document.get("format") != _FORMAT:
        raise ValueError(f"unknown revisit book format {document.get('format')!r}")
    rows: list[RevisitRow] = []
    for raw in document["states"]:
        depth = int(raw.pop("depth"))
        out = bool(raw.pop("out"))
        validators = Validators(**raw.pop("validators"))
        ring = tuple(float(t) for t in raw.pop("changed_ring"))
        state = RevisitState(validators=validators, changed_ring=ring, **raw)
        if out and state.next_due_at is not None:
            later = state.next_due_at + lost_after_s(state.lane)
            state = dataclasses.replace(state, next_due_at=later)
        rows.append(RevisitRow(state, host_key(state.url), depth))
    return rows

"""Where each request's payload lives: a blob in the store, or this process's memory.

A request is serialised once, at :meth:`Payloads.encode` (Scrapy's ``to_dict``,
pickled: :class:`~courtly.integrations.scrapy.codec.RequestCodec`), and stored as a
blob under its payload id (:data:`~courtly.integrations.scrapy.keys.PAYLOAD_NAMESPACE`)
before its key enters the frontier, so the key never points at nothing. One that
cannot be serialised is kept in memory (``courtly/unserializable``) and is lost with
the process. A completed request's blob is emptied.

The refill task writes and reads payloads in batches, one store step each
(:meth:`~courtly.store.base.FrontierStore.put_blobs`: one transaction on SQLite, one
pipelined round trip on Redis): a step's new payloads in one write, a lease batch's
payloads in one read. Emptying the blobs of completed requests waits for the next
write (:meth:`Payloads.clear`): a kill before it leaves a completed request's blob
full, which nothing reads again (its key is in the seen-set).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from scrapy import Request

from courtly.integrations.scrapy.codec import RequestCodec
from courtly.integrations.scrapy.keys import PAYLOAD_NAMESPACE
from courtly.integrations.scrapy.stats import SchedulerStats
from courtly.store.base import FrontierStore

__all__ = ["PUT_CHUNK", "Payloads"]

log = logging.getLogger(__name__)

PUT_CHUNK: Final = 256
"""Payloads per store step: on Redis one pipeline, whose encoding and replies hold the
event loop for about 0.1 ms each, so a chunk holds it for tens of milliseconds at most."""


class Payloads:
    """The payloads of one spider's requests (see the module doc)."""

    def __init__(self, codec: RequestCodec, stats: SchedulerStats) -> None:
        self._codec = codec
        self._stats = stats
        self._in_memory: dict[str, Request] = {}
        self._to_clear: list[str] = []

    @property
    def in_memory(self) -> int:
        """Requests held only in this process's memory."""
        return len(self._in_memory)

    def encode(self, payload_id: str, request: Request) -> bytes | None:
        """``request`` serialised, or ``None``: then it is kept in memory (counted)."""
        payload = self._codec.encode(request)
        if payload is None:
            self._in_memory[payload_id] = request
            self._stats.inc("unserializable")
        return payload

    def keep(self, payload_id: str, request: Request) -> None:
        """Keep an unstored request in memory again (its lease was given back)."""
        self._in_memory[payload_id] = request

    def forget(self, payload_id: str) -> None:
        """The frontier refused the request: drop its in-memory copy, if any."""
        self._in_memory.pop(payload_id, None)

    def clear(self, payload_id: str) -> None:
        """The request is done: its blob is emptied with the next :meth:`put_many`."""
        self._to_clear.append(payload_id)

    async def put_many(self, store: FrontierStore, items: Sequence[tuple[str, bytes]]) -> None:
        """Store ``(payload id, payload)`` items, and empty the blobs :meth:`clear` named
        (first), in one store step."""
        clears, self._to_clear = self._to_clear, []
        batch = [(payload_id, b"") for payload_id in clears]
        batch.extend(items)
        for start in range(0, len(batch), PUT_CHUNK):
            await store.put_blobs(PAYLOAD_NAMESPACE, batch[start : start + PUT_CHUNK])

    async def load_many(
        self, store: FrontierStore, payload_ids: Sequence[str]
    ) -> list[tuple[Request, bool] | None]:
        """Per id, the request and whether its payload is stored, or ``None`` if it is in
        neither place or cannot be read back; the stored ones in one store step."""
        found: list[tuple[Request, bool] | None] = []
        wanted: list[int] = []
        for index, payload_id in enumerate(payload_ids):
            request = self._in_memory.pop(payload_id, None)
            found.append(None if request is None else (request, False))
            if request is None:
                wanted.append(index)
        if not wanted:
            return found
        blobs = await store.get_blobs(PAYLOAD_NAMESPACE, [payload_ids[i] for i in wanted])
        for index, data in zip(wanted, blobs, strict=True):
            if data:
                found[index] = self._decode(data)
        return found

    def _decode(self, data: bytes) -> tuple[Request, bool] | None:
        try:
            return self._codec.decode(data), True
        except Exception:
            log.exception("courtly scheduler: a stored request cannot be read back")
            return None

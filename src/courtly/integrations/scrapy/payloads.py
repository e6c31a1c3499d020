"""Where each request's payload lives: a blob in the store, or this process's memory.

A request is serialised once, at :meth:`Payloads.encode` (Scrapy's ``to_dict``,
pickled: :class:`~courtly.integrations.scrapy.codec.RequestCodec`), and stored as a
blob under its payload id (:data:`~courtly.integrations.scrapy.keys.PAYLOAD_NAMESPACE`)
before its key enters the frontier, so the key never points at nothing. One that
cannot be serialised is kept in memory (``courtly/unserializable``) and is lost with
the process. A completed request's blob is emptied.
"""

from __future__ import annotations

import logging

from scrapy import Request

from courtly.integrations.scrapy.codec import RequestCodec
from courtly.integrations.scrapy.keys import PAYLOAD_NAMESPACE
from courtly.integrations.scrapy.stats import SchedulerStats
from courtly.store.base import FrontierStore

__all__ = ["Payloads"]

log = logging.getLogger(__name__)


class Payloads:
    """The payloads of one spider's requests (see the module doc)."""

    def __init__(self, codec: RequestCodec, stats: SchedulerStats) -> None:
        self._codec = codec
        self._stats = stats
        self._in_memory: dict[str, Request] = {}

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

    async def put(self, store: FrontierStore, payload_id: str, payload: bytes) -> None:
        await store.put_blob(PAYLOAD_NAMESPACE, payload_id, payload)

    async def load(self, store: FrontierStore, payload_id: str) -> tuple[Request, bool] | None:
        """The request and whether its payload is stored, or ``None`` if it is in
        neither place or cannot be read back."""
        request = self._in_memory.pop(payload_id, None)
        if request is not None:
            return request, False
        data = await store.get_blob(PAYLOAD_NAMESPACE, payload_id)
        if not data:
            return None
        try:
            return self._codec.decode(data), True
        except Exception:
            log.exception("courtly scheduler: a stored request cannot be read back")
            return None

    async def clear(self, store: FrontierStore, payload_id: str) -> None:
        """The request is done: empty its blob."""
        await store.put_blob(PAYLOAD_NAMESPACE, payload_id, b"")

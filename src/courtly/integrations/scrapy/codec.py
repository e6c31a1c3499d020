"""Requests to bytes and back, with Scrapy's own ``Request.to_dict``.

The dict (url, method, headers, body, cookies, meta, flags, cb_kwargs, priority,
dont_filter, and the callback and errback as spider method *names*) is pickled
(protocol 4): bodies are bytes, so JSON will not do. A request whose callback is
a lambda or a closure, or whose meta holds something unpicklable, cannot be
serialised: :meth:`RequestCodec.encode` returns ``None`` and the scheduler keeps
it in memory (``courtly/unserializable``); it does not survive a restart.
Unpickling runs code: a state directory is as trusted as the spider's code.
"""

from __future__ import annotations

import pickle
from typing import Any, Final

from scrapy import Request, Spider
from scrapy.utils.request import request_from_dict

__all__ = ["RequestCodec"]

_PROTOCOL: Final = 4
_SCHEDULER_META: Final = ("courtly_key", "courtly_parent")


class RequestCodec:
    """Serialises requests of one spider (callbacks are resolved on it)."""

    def __init__(self, spider: Spider) -> None:
        self._spider = spider

    def encode(self, request: Request) -> bytes | None:
        """The request as bytes, or ``None`` if it cannot be serialised."""
        try:
            data: dict[str, Any] = request.to_dict(spider=self._spider)
            meta = data.get("meta")
            if meta:
                data["meta"] = {k: v for k, v in meta.items() if k not in _SCHEDULER_META}
            return pickle.dumps(data, protocol=_PROTOCOL)
        except (ValueError, TypeError, AttributeError, pickle.PicklingError, RecursionError):
            return None

    def decode(self, payload: bytes) -> Request:
        """The request :meth:`encode` serialised (callbacks bound to the spider again)."""
        data = pickle.loads(payload)
        return request_from_dict(data, spider=self._spider)

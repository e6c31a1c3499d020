"""Requests to bytes and back, in the shape of Scrapy's own ``Request.to_dict``.

The dict (url, method, headers, body, cookies, meta, flags, cb_kwargs, priority,
dont_filter, and the callback and errback as spider method *names*) is pickled
(protocol 4): bodies are bytes, so JSON will not do. A request whose callback is
a lambda or a closure, or whose meta holds something unpicklable, cannot be
serialised: :meth:`RequestCodec.encode` returns ``None`` and the scheduler keeps
it in memory (``courtly/unserializable``); it does not survive a restart.
Unpickling runs code: a state directory is as trusted as the spider's code.

Method names. ``Request.to_dict(spider=...)`` finds a callback's name by walking
every member of the spider (``inspect.getmembers``, which evaluates each of its
properties) for every request: about 80 microseconds, most of the cost of
enqueueing a link, paid inside the spider's callback while the event loop waits.
The codec asks Scrapy once per spider method and keeps the name, keyed by the
method's function; a request whose callback and errback are known (or ``None``)
gets the same dict without the walk (unless its class has a ``to_dict`` of its own).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any, Final

from scrapy import Request, Spider
from scrapy.utils.request import request_from_dict

__all__ = ["RequestCodec"]

_PROTOCOL: Final = 4
_SCHEDULER_META: Final = ("courtly_key", "courtly_parent")
_UNKNOWN: Final = object()


class RequestCodec:
    """Serialises requests of one spider (callbacks are resolved on it)."""

    def __init__(self, spider: Spider) -> None:
        self._spider = spider
        self._names: dict[object, str] = {}
        """Function of a spider method -> the name ``to_dict`` found for it."""

    def encode(self, request: Request) -> bytes | None:
        """The request as bytes, or ``None`` if it cannot be serialised."""
        try:
            data = self._as_dict(request)
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

    def _as_dict(self, request: Request) -> dict[str, Any]:
        """``request.to_dict(spider=...)``, without its walk of the spider when both
        method names are known (see the module doc)."""
        callback, errback = request.callback, request.errback
        callback_name, errback_name = self._name_of(callback), self._name_of(errback)
        if (
            callback_name is _UNKNOWN
            or errback_name is _UNKNOWN
            or type(request).to_dict is not Request.to_dict  # a class's own dict
        ):
            data: dict[str, Any] = request.to_dict(spider=self._spider)
            self._learn(callback, data["callback"])
            self._learn(errback, data["errback"])
            return data
        data = {
            "url": request.url,
            "callback": callback_name,
            "errback": errback_name,
            "headers": dict(request.headers),
        }
        for attr in request.attributes:
            data.setdefault(attr, getattr(request, attr))
        if type(request) is not Request:
            data["_class"] = f"{type(request).__module__}.{type(request).__name__}"
        return data

    def _name_of(self, method: Callable[..., Any] | None) -> object:
        """The stored name of ``method`` (``None`` stays ``None``), or ``_UNKNOWN``."""
        if method is None:
            return None
        if getattr(method, "__self__", None) is not self._spider:
            return _UNKNOWN
        return self._names.get(getattr(method, "__func__", None), _UNKNOWN)

    def _learn(self, method: Callable[..., Any] | None, name: object) -> None:
        if isinstance(name, str) and getattr(method, "__self__", None) is self._spider:
            self._names[getattr(method, "__func__", None)] = name

"""An in-memory fetcher: answers from a function, no sockets (the test twin of HttpFetcher)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType

from courtly.clock import Clock, FakeClock
from courtly.errors import FetchError
from courtly.fetch.hosts import normalise_host_name
from courtly.fetch.records import FetchResult

__all__ = ["ConditionalHandler", "MemoryFetcher", "Reply", "ReplyHandler"]

Reply = (
    FetchResult
    | tuple[int, Mapping[str, str] | Iterable[tuple[str, str]], bytes]
    | tuple[int, bytes]
    | int
)
"""What a handler returns: a whole :class:`FetchResult`, ``(status, headers, body)``,
``(status, body)`` or just a status."""

ReplyHandler = Callable[[str], Reply | Awaitable[Reply]]
"""``handler(url)``, plain or ``async``; it may raise :class:`~courtly.errors.FetchError`."""

ConditionalHandler = Callable[[str, Mapping[str, str]], Reply | Awaitable[Reply]]
"""``conditional(url, request_headers)``: answers instead of the handler when given."""


class MemoryFetcher:
    """A :class:`~courtly.fetch.Fetcher` that asks ``handler(url)`` instead of the network.

    A handler returning a :class:`FetchResult` has it passed through unchanged;
    the short forms are completed with ``started_at = clock.now()``, ``ended_at``
    ``elapsed_s`` later, ``raw_body = body``. Raised :class:`FetchError`\\ s propagate,
    so failures are simulated by raising. Every URL asked for is appended to
    :attr:`requests`. :meth:`resolve` answers from ``addresses`` (host -> IP) and
    raises ``FetchError("dns")`` for other hosts.
    """

    def __init__(
        self,
        handler: ReplyHandler,
        clock: Clock | None = None,
        *,
        elapsed_s: float = 0.0,
        addresses: Mapping[str, str] | None = None,
        conditional: ConditionalHandler | None = None,
    ) -> None:
        self._handler = handler
        self._conditional = conditional
        self.sent_headers: list[dict[str, str]] = []
        self._clock: Clock = clock if clock is not None else FakeClock()
        self._elapsed_s = elapsed_s
        self._addresses = {normalise_host_name(k): v for k, v in (addresses or {}).items()}
        self.requests: list[str] = []

    async def __aenter__(self) -> MemoryFetcher:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Nothing to release; present so both fetchers close the same way."""

    async def resolve(self, host: str) -> str:
        """The address configured for ``host``, else ``FetchError("dns")``."""
        try:
            return self._addresses[normalise_host_name(host)]
        except KeyError:
            raise FetchError("dns", f"{host}: not in the memory fetcher's addresses") from None

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        """Answer ``url`` from the handler; ``headers`` (a conditional GET's) are
        appended to :attr:`sent_headers` and passed to a ``conditional`` handler."""
        self.requests.append(url)
        sent = dict(headers or {})
        self.sent_headers.append(sent)
        started_at = self._clock.now()
        if self._conditional is not None:
            reply = self._conditional(url, sent)
        else:
            reply = self._handler(url)
        if inspect.isawaitable(reply):
            reply = await reply
        if isinstance(reply, FetchResult):
            return reply
        reply_headers: tuple[tuple[str, str], ...] = ()
        body = b""
        if isinstance(reply, int):
            status = reply
        elif len(reply) == 2:
            status, body = reply
        else:
            status, raw_headers, body = reply
            items = raw_headers.items() if isinstance(raw_headers, Mapping) else raw_headers
            reply_headers = tuple((str(k), str(v)) for k, v in items)
        return FetchResult(
            url=url,
            status=status,
            headers=reply_headers,
            body=body,
            started_at=started_at,
            ended_at=started_at + self._elapsed_s,
            raw_body=body,
            request_headers=tuple(sent.items()),
        )

"""An aiohttp resolver that answers with the address the fetcher already checked.

aiohttp asks its resolver only when it opens a new connection. Answering from
the fetcher (the address pinned for the request in flight, else the DNS cache
filtered by the address guard) means the socket goes to the IP that passed the
guard: a second DNS answer cannot slip a private address in after the check.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

from aiohttp.abc import AbstractResolver, ResolveResult

__all__ = ["PinnedResolver"]

_NUMERIC_FLAGS = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


class PinnedResolver(AbstractResolver):
    """Resolve through ``address_for(host) -> ip``; exactly one address per answer.

    ``address_for`` raises :class:`~courtly.errors.FetchError` (``dns``/``blocked``)
    when there is no acceptable address; the error reaches the fetcher unchanged.
    """

    def __init__(self, address_for: Callable[[str], Awaitable[str]]) -> None:
        self._address_for = address_for

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        ip = await self._address_for(host)
        return [
            {
                "hostname": host,
                "host": ip,
                "port": port,
                "family": socket.AF_INET6 if ":" in ip else socket.AF_INET,
                "proto": 0,
                "flags": _NUMERIC_FLAGS,
            }
        ]

    async def close(self) -> None:
        """Nothing to release: the DNS cache belongs to the fetcher."""

"""The per-IP gate shared by several crawler processes: the seam.

:class:`~courtly.fetch.HttpFetcher` caps the requests in flight to one address
with a local semaphore. When several processes (on several machines) crawl one
shared frontier, hosts on one address can be leased by different processes, so
the cap must hold across them too: an :class:`IpGate` is asked for a slot of
the address around each exchange, inside the local semaphore. The Redis store
provides one (:class:`~courtly.store.redis.ip_gate.RedisIpGate`).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

__all__ = ["GateClosed", "IpGate"]


class GateClosed(Exception):
    """A wait for a slot ended because its gate was closed (its owner is shutting down):
    no slot was taken."""


class IpGate(Protocol):
    """Slots of an address shared by every fetcher of a crawl."""

    def hold(self, ip: str) -> AbstractAsyncContextManager[None]:
        """Wait for one of the address's slots and hold it for the ``async with`` body.

        A slot that is never given back (its process died) frees itself after a time
        longer than any exchange can last.
        """
        ...

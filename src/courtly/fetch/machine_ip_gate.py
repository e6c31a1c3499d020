"""The per-IP cap shared by the crawler processes of one machine (``--processes N``).

Without it each of ``N`` processes may have ``per_ip // N`` requests in flight to
an address, so the sum holds but a process whose only slot for an address is held
by a slow or hanging request keeps its other hosts of that address waiting while
the other processes' slots sit idle. With it every process may use up to
``per_ip`` slots of an address, and a table in shared memory keeps the sum over
the processes at ``per_ip`` or below.

The table has ``buckets`` ticket queues (see :class:`MachineIpGate`); an address
counts in the bucket its CRC-32 falls in. Two addresses that share a bucket share
one cap: stricter, never looser. A process waits for its turn by polling the
table (from 0.5 ms, doubling up to 2 ms): a request starts at most one poll
interval after its turn comes. A process that dies holding or waiting for slots
leaves them taken for the rest of the crawl (the partitioned crawl stops when a
partition fails).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from multiprocessing.context import BaseContext
from typing import Any, Final

__all__ = ["MachineIpGate"]

_FIRST_POLL_S: Final = 0.0005
_MAX_POLL_S: Final = 0.002


class MachineIpGate:
    """Slots of each address shared by processes started from one parent; an
    :class:`~courtly.fetch.ip_gate.IpGate`.

    Make it in the parent with the context the processes are started from and pass
    it to each of them when they are created (it holds shared arrays and a lock).

    Each bucket is a ticket queue: ``issued`` tickets and ``done`` (slots given
    back, or tickets given up before their turn). Ticket ``t`` may go once
    ``t < done + per_ip``, so at most ``per_ip`` holders are in between, and they go
    in the order they asked, across processes (a process asking often cannot
    starve another one).
    """

    def __init__(self, per_ip: int, context: BaseContext, *, buckets: int = 1 << 16) -> None:
        if per_ip < 1 or buckets < 1:
            raise ValueError("per_ip and buckets must be >= 1")
        self.per_ip = per_ip
        self._buckets = buckets
        self._issued: Any = context.RawArray("Q", buckets)
        self._done: Any = context.RawArray("Q", buckets)
        self._lock: Any = context.Lock()

    def _bucket(self, ip: str) -> int:
        return zlib.crc32(ip.encode()) % self._buckets

    def take_ticket(self, ip: str) -> int:
        """A place in ``ip``'s queue."""
        bucket = self._bucket(ip)
        with self._lock:
            ticket = int(self._issued[bucket])
            self._issued[bucket] = ticket + 1
            return ticket

    def may_go(self, ip: str, ticket: int) -> bool:
        """Whether ``ticket`` may hold a slot of ``ip`` now."""
        return ticket < int(self._done[self._bucket(ip)]) + self.per_ip

    def finish(self, ip: str) -> None:
        """A ticket's slot given back, or the ticket given up before its turn."""
        bucket = self._bucket(ip)
        with self._lock:
            self._done[bucket] += 1

    def in_use(self, ip: str) -> int:
        """Tickets of ``ip``'s bucket issued and not finished (holding or waiting)."""
        bucket = self._bucket(ip)
        return int(self._issued[bucket]) - int(self._done[bucket])

    @asynccontextmanager
    async def hold(self, ip: str) -> AsyncIterator[None]:
        """Wait for a slot of ``ip`` and hold it for the ``async with`` body."""
        ticket = self.take_ticket(ip)
        try:
            delay = _FIRST_POLL_S
            while not self.may_go(ip, ticket):
                await asyncio.sleep(delay)
                delay = min(2 * delay, _MAX_POLL_S)
            yield
        finally:
            self.finish(ip)

"""The per-IP cap shared by the crawler processes of one machine (``--processes N``).

Without it each of ``N`` processes may have ``per_ip // N`` requests in flight to
an address, so the sum holds but a process whose only slot for an address is held
by a slow or hanging request keeps its other hosts of that address waiting while
the other processes' slots sit idle. With it every process may use up to
``per_ip`` slots of an address, and the sum over the processes stays at ``per_ip``
or below.

The slots are byte-range locks on one lock file (its content is never written):
an address counts in the bucket its CRC-32 falls in (``buckets`` of them), and
bucket ``b`` has the ``per_ip`` one-byte ranges from ``b * per_ip`` on. Holding a
slot is holding the kernel's exclusive lock on its byte, so

* taking and giving back a slot is one ``fcntl`` call, atomic across processes,
  with no shared table to read or keep consistent;
* a process that dies (even by ``SIGKILL``) holding slots gives them back at
  once: the kernel drops a process's locks when its last descriptor of the file
  closes, which dying does.

Two addresses that share a bucket share one cap: stricter, never looser. Open
file description locks (``F_OFD_SETLK``, Linux) are used where there are, else
POSIX record locks (owned by the process: one gate per file per process then).

Waiting: within a process the waiters of a bucket queue in the order they asked
and only the first one polls (from 0.5 ms, doubling up to 2 ms), so a request
starts at most one poll interval after a slot frees, and a process with many
waiters polls no more often than one with a single waiter. Across processes a
freed slot goes to the first process that polls: no strict order, but no
process can take a slot more often by asking more.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import struct
import zlib
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

__all__ = ["MachineIpGate"]

_FIRST_POLL_S: Final = 0.0005
_MAX_POLL_S: Final = 0.002
_BUSY: Final = frozenset({errno.EAGAIN, errno.EACCES})
_OFD_SETLK: Final[int | None] = getattr(fcntl, "F_OFD_SETLK", None)


def _lock_byte(fd: int, offset: int, exclusive: bool) -> bool:
    """Lock (``exclusive``) or unlock the byte at ``offset``; False if another holds it."""
    try:
        if _OFD_SETLK is not None:  # struct flock: l_type, l_whence, l_start, l_len, l_pid
            kind = fcntl.F_WRLCK if exclusive else fcntl.F_UNLCK
            fcntl.fcntl(fd, _OFD_SETLK, struct.pack("hhqqi", kind, os.SEEK_SET, offset, 1, 0))
        else:  # pragma: no cover - not Linux
            kind = fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_UN
            fcntl.lockf(fd, kind, 1, offset, os.SEEK_SET)
    except OSError as error:
        if exclusive and error.errno in _BUSY:
            return False
        raise
    return True


class MachineIpGate:
    """Slots of each address shared by the processes of one machine; an
    :class:`~courtly.fetch.ip_gate.IpGate`.

    Make it in the parent with the path of a lock file (created if missing) and
    pass it to each process when it is created: it pickles as its path and sizes,
    and each process opens the file on first use. Use it from one event loop per
    process.
    """

    def __init__(self, per_ip: int, path: Path, *, buckets: int = 1 << 16) -> None:
        if per_ip < 1 or buckets < 1:
            raise ValueError("per_ip and buckets must be >= 1")
        self.per_ip = per_ip
        self.path = path
        self._buckets = buckets
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o644))
        self._start_local()

    def _start_local(self) -> None:
        self._fd: int | None = None
        self._held: dict[int, set[int]] = {}
        self._waiting: dict[int, deque[asyncio.Future[None]]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"per_ip": self.per_ip, "path": self.path, "buckets": self._buckets}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.per_ip = state["per_ip"]
        self.path = state["path"]
        self._buckets = state["buckets"]
        self._start_local()

    def _file(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        return self._fd

    def _bucket(self, ip: str) -> int:
        return zlib.crc32(ip.encode()) % self._buckets

    def try_take(self, ip: str) -> int | None:
        """A free slot of ``ip`` taken now (its number, to :meth:`give_back`), or None."""
        bucket = self._bucket(ip)
        held = self._held.setdefault(bucket, set())
        fd = self._file()
        base = bucket * self.per_ip
        for slot in range(self.per_ip):
            if slot not in held and _lock_byte(fd, base + slot, exclusive=True):
                held.add(slot)
                return slot
        if not held:
            del self._held[bucket]
        return None

    def give_back(self, ip: str, slot: int) -> None:
        """Give back the slot ``slot`` of ``ip`` that :meth:`try_take` returned."""
        bucket = self._bucket(ip)
        held = self._held[bucket]
        held.remove(slot)
        if not held:
            del self._held[bucket]
        _lock_byte(self._file(), bucket * self.per_ip + slot, exclusive=False)

    def held_here(self, ip: str) -> int:
        """Slots of ``ip``'s bucket this process holds."""
        return len(self._held.get(self._bucket(ip), ()))

    def in_use(self, ip: str) -> int:
        """Slots of ``ip``'s bucket held now by any process (a probe that takes each free
        slot for an instant: for tests and diagnostics, not for deciding to fetch)."""
        taken = []
        while (slot := self.try_take(ip)) is not None:
            taken.append(slot)
        for slot in taken:
            self.give_back(ip, slot)
        return self.per_ip - len(taken)

    @asynccontextmanager
    async def hold(self, ip: str) -> AsyncIterator[None]:
        """Wait for a slot of ``ip`` and hold it for the ``async with`` body."""
        slot = await self._wait_for_slot(ip)
        try:
            yield
        finally:
            self.give_back(ip, slot)

    async def _wait_for_slot(self, ip: str) -> int:
        bucket = self._bucket(ip)
        waiters = self._waiting.get(bucket)
        if not waiters and (slot := self.try_take(ip)) is not None:
            return slot  # nobody of this process waits before us: no queue
        if waiters is None:
            waiters = self._waiting[bucket] = deque()
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.append(turn)
        try:
            if waiters[0] is not turn:
                await turn  # set when every earlier waiter of this process has its slot
            delay = _FIRST_POLL_S
            while (slot := self.try_take(ip)) is None:
                await asyncio.sleep(delay)
                delay = min(2 * delay, _MAX_POLL_S)
            return slot
        finally:
            first = waiters[0] is turn
            waiters.remove(turn)
            if not waiters:
                del self._waiting[bucket]
            elif first and not waiters[0].done():
                waiters[0].set_result(None)

    def close(self) -> None:
        """Give back every slot this process holds and close the file."""
        if self._fd is not None:
            os.close(self._fd)
        self._start_local()

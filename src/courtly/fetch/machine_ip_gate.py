"""The per-IP cap shared by the crawler processes of one machine (``--processes N``).

Without it each of ``N`` processes may have ``per_ip // N`` requests in flight to
an address, so the sum holds but a process whose only slot for an address is held
by a slow or hanging request keeps its other hosts of that address waiting while
the other processes' slots sit idle. With it every process may use up to
``per_ip`` slots of an address, and the sum over the processes stays at ``per_ip``
or below.

The slots are byte-range locks on a few lock files (their content is never
written): an address counts in the bucket its CRC-32 falls in (``buckets`` of them),
bucket ``b`` lives in lock file ``b % lock_files`` and has the ``per_ip`` one-byte
ranges from ``b * per_ip`` on there. Holding a slot is holding the kernel's
exclusive lock on its byte, so

* taking and giving back a slot is one ``fcntl`` call, atomic across processes,
  with no shared table to read or keep consistent;
* a process that dies (even by ``SIGKILL``) holding slots gives them back at
  once: the kernel drops a process's locks when its last descriptor of the file
  closes, which dying does.

Why several files: the kernel keeps a file's byte-range locks in one list and walks
it on every lock call, so with one file a call cost grows with the requests in flight
(measured: 0.54 us a lock and unlock with no other lock held, 2.86 us with 300, 8.1 us
with 1,000); spread over ``lock_files`` files each list holds a share of them.

Two addresses that share a bucket share one cap: stricter, never looser. Open
file description locks (``F_OFD_SETLK``, Linux) are used where there are, else
POSIX record locks (owned by the process: one gate per file per process then).

Taking turns. Within a process the waiters of a bucket queue in the order they
asked and only the first one polls (from 0.5 ms, doubling up to 2 ms while the
process has waiters there), so a request starts at most one poll interval after a
slot frees, and a process with many waiters polls no more often than one with a
single waiter. Across processes, a process with waiters on a bucket says so by
holding a lock on its own "waiting" byte of the bucket; while another process
waits, a new request never takes a free slot at once but queues and polls like
the waiters (at the slowest interval from the start), so a busy process cannot
keep retaking the slots it frees while the other process's waiter sleeps between
polls (a first version without this starved the other process: 0.79 of the
politeness bound, docs/parallel.md).
Each process claims an identity (one of ``processes`` bytes, in the first file) the
same way; all of these locks go with the process when it dies.
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

__all__ = ["LOCK_FILES", "MachineIpGate"]

LOCK_FILES: Final = 16
"""Lock files a gate spreads its buckets over by default (see the module's docstring)."""
_FIRST_POLL_S: Final = 0.0005
_MAX_POLL_S: Final = 0.002
_BUSY: Final = frozenset({errno.EAGAIN, errno.EACCES})
_OFD_SETLK: Final[int | None] = getattr(fcntl, "F_OFD_SETLK", None)
_OFD_GETLK: Final[int | None] = getattr(fcntl, "F_OFD_GETLK", None)
_FLOCK: Final = struct.Struct("hhqqi4x")  # struct flock: type, whence, start, len, pid


def _lock_byte(fd: int, offset: int, exclusive: bool) -> bool:
    """Lock (``exclusive``) or unlock the byte at ``offset``; False if another holds it."""
    try:
        if _OFD_SETLK is not None:
            kind = fcntl.F_WRLCK if exclusive else fcntl.F_UNLCK
            fcntl.fcntl(fd, _OFD_SETLK, _FLOCK.pack(kind, os.SEEK_SET, offset, 1, 0))
        else:  # pragma: no cover - not Linux
            kind = fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_UN
            fcntl.lockf(fd, kind, 1, offset, os.SEEK_SET)
    except OSError as error:
        if exclusive and error.errno in _BUSY:
            return False
        raise
    return True


def _locked_by_another(fd: int, offset: int) -> bool:
    """Whether another open file (process) holds the byte at ``offset``. Asks the
    kernel (``F_OFD_GETLK``) without taking it, so that asking never makes the holder-to-be
    fail; elsewhere it takes and gives back the byte."""
    if _OFD_GETLK is not None:
        query = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
        kind = _FLOCK.unpack(fcntl.fcntl(fd, _OFD_GETLK, query))[0]
        return bool(kind != fcntl.F_UNLCK)
    if not _lock_byte(fd, offset, exclusive=True):  # pragma: no cover - not Linux
        return True
    _lock_byte(fd, offset, exclusive=False)  # pragma: no cover - not Linux
    return False  # pragma: no cover - not Linux


class _Waiters:
    """This process's requests waiting for a bucket's slots, and its poll interval there
    (kept for as long as any of them waits, so that a new first waiter does not poll
    faster than another process's long-waiting one)."""

    __slots__ = ("delay", "queue")

    def __init__(self) -> None:
        self.queue: deque[asyncio.Future[None]] = deque()
        self.delay = _FIRST_POLL_S


class MachineIpGate:
    """Slots of each address shared by the processes of one machine; an
    :class:`~courtly.fetch.ip_gate.IpGate`.

    Make it in the parent with the path of a lock file (created if missing) and the
    number of processes that will use it, and pass it to each of them when they are
    created: it pickles as its path and sizes, and each process opens the file (and
    claims its identity) on first use. Use it from one event loop per process.
    """

    def __init__(
        self,
        per_ip: int,
        path: Path,
        *,
        processes: int = 1,
        buckets: int = 1 << 16,
        lock_files: int = LOCK_FILES,
    ) -> None:
        if per_ip < 1 or buckets < 1 or processes < 1 or lock_files < 1:
            raise ValueError("per_ip, processes, buckets and lock_files must be >= 1")
        self.per_ip = per_ip
        self.path = path
        self.processes = processes
        self._buckets = buckets
        self.lock_files = lock_files
        for file in self.files():
            os.close(os.open(file, os.O_RDWR | os.O_CREAT, 0o644))
        self._start_local()

    def files(self) -> list[Path]:
        """The gate's lock files: ``path``, then ``path`` with ``.1``, ``.2``... appended."""
        name = self.path.name
        return [self.path] + [self.path.with_name(f"{name}.{k}") for k in range(1, self.lock_files)]

    def _start_local(self) -> None:
        self._fds: list[int | None] = [None] * self.lock_files
        self._me = -1
        self._held: dict[int, set[int]] = {}
        self._waiting: dict[int, _Waiters] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {
            "per_ip": self.per_ip,
            "path": self.path,
            "processes": self.processes,
            "buckets": self._buckets,
            "lock_files": self.lock_files,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.per_ip = state["per_ip"]
        self.path = state["path"]
        self.processes = state["processes"]
        self._buckets = state["buckets"]
        self.lock_files = state["lock_files"]
        self._start_local()

    # Byte offsets in each file: slots [0, buckets * per_ip), then one identity byte per
    # process (used in the first file only), then a "waiting" byte per bucket and
    # process. A bucket's slots and waiting bytes are in its own file, bucket % lock_files.

    def _file(self, bucket: int) -> int:
        """The descriptor of ``bucket``'s lock file, opened on first use (this process's
        identity is claimed in the first file before any other is used)."""
        index = bucket % self.lock_files
        fd = self._fds[index]
        if fd is None:
            if self._me < 0 and index != 0:
                self._file(0)
            fd = os.open(self.files()[index], os.O_RDWR | os.O_CLOEXEC)
            if index == 0:
                ids = self._buckets * self.per_ip
                me = next((k for k in range(self.processes) if _lock_byte(fd, ids + k, True)), -1)
                if me < 0:
                    os.close(fd)
                    raise RuntimeError(
                        f"{self.path}: more than {self.processes} processes use this gate"
                    )
                self._me = me
            self._fds[index] = fd
        return fd

    def _waiting_byte(self, bucket: int, process: int) -> int:
        return self._buckets * self.per_ip + self.processes * (1 + bucket) + process

    def waiting_elsewhere(self, ip: str) -> bool:
        """Whether another process has a request waiting for a slot of ``ip``'s bucket."""
        bucket = self._bucket(ip)
        fd = self._file(bucket)
        return any(
            _locked_by_another(fd, self._waiting_byte(bucket, process))
            for process in range(self.processes)
            if process != self._me
        )

    def _bucket(self, ip: str) -> int:
        return zlib.crc32(ip.encode()) % self._buckets

    def try_take(self, ip: str) -> int | None:
        """A free slot of ``ip`` taken now (its number, to :meth:`give_back`), or None."""
        bucket = self._bucket(ip)
        held = self._held.setdefault(bucket, set())
        fd = self._file(bucket)
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
        _lock_byte(self._file(bucket), bucket * self.per_ip + slot, exclusive=False)

    def held_here(self, ip: str) -> int:
        """Slots of ``ip``'s bucket this process holds."""
        return len(self._held.get(self._bucket(ip), ()))

    def in_use(self, ip: str) -> int:
        """Slots of ``ip``'s bucket held now, by this process or another one."""
        bucket = self._bucket(ip)
        fd = self._file(bucket)
        base = bucket * self.per_ip
        held = self._held.get(bucket, set())
        return sum(
            1 for slot in range(self.per_ip) if slot in held or _locked_by_another(fd, base + slot)
        )

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
        if waiters is None:
            elsewhere = self.waiting_elsewhere(ip)
            if not elsewhere and (slot := self.try_take(ip)) is not None:
                return slot  # nobody waits before us, here or elsewhere: no queue
            waiters = self._waiting[bucket] = _Waiters()
            if elsewhere:  # behind another process's waiter: poll no faster than it
                waiters.delay = _MAX_POLL_S
            # Other processes only read this byte (F_OFD_GETLK). Where they must take it to
            # read it, this may fail for an instant: the wait is then not announced, which
            # costs the other process its turn, never the cap.
            fd = self._file(bucket)
            _lock_byte(fd, self._waiting_byte(bucket, self._me), exclusive=True)
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.queue.append(turn)
        try:
            if waiters.queue[0] is not turn:
                await turn  # set when every earlier waiter of this process has its slot
            while True:  # a poll interval first: the slot was just found taken, or
                await asyncio.sleep(waiters.delay)  # another process's waiter is due
                waiters.delay = min(2 * waiters.delay, _MAX_POLL_S)
                if (slot := self.try_take(ip)) is not None:
                    return slot
        finally:
            queue = waiters.queue
            first = queue[0] is turn
            queue.remove(turn)
            if not queue:
                del self._waiting[bucket]
                _lock_byte(self._file(bucket), self._waiting_byte(bucket, self._me), False)
            elif first and not queue[0].done():
                queue[0].set_result(None)

    def close(self) -> None:
        """Give back every slot this process holds and close the lock files."""
        for fd in self._fds:
            if fd is not None:
                os.close(fd)
        self._start_local()

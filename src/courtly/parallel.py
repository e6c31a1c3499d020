"""Host-partitioned crawling: N processes, each owning a fixed share of the hosts.

Partition ``i`` of ``N`` owns the host keys with ``stable_hash(host_key) % N == i``
(xxh3-64 of the UTF-8 host key: the same in every process and every run), so all
state of a host (its back queue, politeness state, robots.txt, leases) lives in
one process and politeness needs no coordination: one request in flight per
host holds across processes by construction. The per-IP cap is shared: each
process may have up to ``per_ip`` requests in flight to one address, and a table
in shared memory (:class:`~courtly.fetch.machine_ip_gate.MachineIpGate`) keeps the
sum over the processes at ``per_ip`` or below. A partition's config still says
``per_ip // N`` (``per_ip < N`` is refused), the share it is sure of.

Layout of a partitioned state directory ``STATE``::

    STATE/partitions.json                 {"processes": N, ...}: a resume must use the same N
    STATE/part-<i>-of-<N>/frontier.sqlite3   partition i's own store (its own lock)
    STATE/part-<i>-of-<N>/warc/              partition i's WARC files
    STATE/part-<j>-of-<N>/inbox/from-<i>.jsonl   URLs partition i found on hosts j owns

Forwarding is durable: a partition appends the URLs it found on other
partitions' hosts to their inboxes (one JSON line per page and destination,
written to the OS, and fsynced with ``durability = "power"``) *before* the
completion that found them may commit. A crash after that loses nothing: the
receiver reads them on resume; a crash before it repeats the fetch, which finds
them again. The receiver tails its inbox files, queues the URLs (its seen-set
drops repeats) and stores, after them and in the same store, the byte offset
it has consumed of each inbox: a commit holds a prefix of the steps, so a
stored offset never runs ahead of the URLs it covers, and a crash re-reads a
little rather than skipping anything.

Termination: an empty frontier does not end a partition, since another one may
still forward work to it. The parent probes every partition in rounds; each
answers with a :class:`PartitionStatus` (idle or not, bytes written to each
inbox, bytes consumed from each). The crawl is done after two consecutive
rounds in which every partition is idle, every inbox has been read to the end
and no counter moved (:class:`TerminationDetector`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import os
import queue
import signal
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import xxhash

from courtly.config import CrawlConfig
from courtly.crawl import Crawler, CrawlSnapshot, ProgressSink
from courtly.errors import ConfigError, CourtlyError, StateError
from courtly.fetch.machine_ip_gate import MachineIpGate
from courtly.frontier.records import FrontierCounts, QueuedUrl
from courtly.observe.observation import merge_observed
from courtly.page_budget import SharedPageBudget
from courtly.stop import ending
from courtly.store.base import FrontierStore

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess
    from multiprocessing.queues import Queue

__all__ = [
    "LAYOUT_FILE",
    "Abort",
    "HostPartition",
    "Inbox",
    "InboxChunk",
    "Outbox",
    "PartitionStatus",
    "PartitionedCrawl",
    "Probe",
    "Stop",
    "TerminationDetector",
    "available_cores",
    "claim_layout",
    "default_processes",
    "merge_counts",
    "merge_last_runs",
    "merge_snapshots",
    "partition_config",
    "partition_dir",
    "partition_of",
    "quiescent",
    "stable_hash",
    "state_dirs",
]

log = logging.getLogger("courtly.parallel")

LAYOUT_FILE = "partitions.json"
"""The file in a partitioned state directory that records the number of partitions."""
_OFFSETS = "partition"
"""Blob namespace of the consumed inbox offsets (key ``inbox-from-<i>``)."""
_READ_BYTES = 256 * 1024
"""Inbox bytes read per ingest step (a few thousand URLs)."""

T = TypeVar("T")


# -- who owns what --------------------------------------------------------------------------


def stable_hash(host_key: str) -> int:
    """xxh3-64 of the UTF-8 host key: the same in every process, run and machine."""
    return xxhash.xxh3_64_intdigest(host_key.encode("utf-8"))


def partition_of(host_key: str, processes: int) -> int:
    """The partition (``0 <= i < processes``) that owns ``host_key``."""
    return stable_hash(host_key) % processes


def partition_dir(state_dir: Path, index: int, processes: int) -> Path:
    """Partition ``index``'s own state directory inside ``state_dir``."""
    return state_dir / f"part-{index}-of-{processes}"


def claim_layout(state_dir: Path, processes: int) -> None:
    """Check that ``state_dir`` may be crawled by ``processes`` processes; record it.

    A state directory keeps the number it was first crawled with: a partitioned
    one (``partitions.json``) refuses another number, a single-process one
    (``frontier.sqlite3`` at the top) refuses ``processes > 1``. Raises
    :class:`~courtly.errors.StateError` with the number to use.
    """
    layout = state_dir / LAYOUT_FILE
    if layout.exists():
        try:
            recorded = int(json.loads(layout.read_text(encoding="utf-8"))["processes"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise StateError(f"{layout} is unreadable ({error})") from None
        if recorded != processes:
            raise StateError(
                f"{state_dir} holds a crawl partitioned over {recorded} processes; "
                f"resume it with --processes {recorded} (hosts are assigned by hash mod "
                f"{recorded}, and each partition's frontier holds only its own hosts)"
            )
        return
    if processes == 1:
        return
    if (state_dir / "frontier.sqlite3").exists():
        raise StateError(
            f"{state_dir} holds a single-process crawl; resume it with --processes 1 "
            "(or crawl with several processes into a new state directory)"
        )
    state_dir.mkdir(parents=True, exist_ok=True)
    data = {"processes": processes, "partition": "xxh3_64(utf-8 host key) % processes"}
    temporary = layout.with_suffix(".tmp")
    with temporary.open("w", encoding="utf-8") as out:
        out.write(json.dumps(data) + "\n")
        out.flush()
        os.fsync(out.fileno())
    temporary.replace(layout)
    _fsync_dir(state_dir)


def state_dirs(state_dir: Path) -> list[Path]:
    """The directories holding a crawl's stores: the partitions', or ``state_dir`` itself."""
    layout = state_dir / LAYOUT_FILE
    if not layout.exists():
        return [state_dir]
    try:
        processes = int(json.loads(layout.read_text(encoding="utf-8"))["processes"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise StateError(f"{layout} is unreadable ({error})") from None
    return [partition_dir(state_dir, i, processes) for i in range(processes)]


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def default_processes(state_dir: Path, per_ip: int, cores: int | None = None) -> int:
    """The process count of a crawl that did not pin ``--processes``.

    A state directory that already holds a crawl keeps its number (partitioned:
    ``partitions.json``; single-process: ``frontier.sqlite3``). A new crawl gets
    one process per available core (``cores``, default :func:`available_cores`),
    but no more than ``per_ip``: each process needs at least one request per
    address of the shared per-IP cap.
    """
    layout = state_dir / LAYOUT_FILE
    if layout.exists():
        try:
            return int(json.loads(layout.read_text(encoding="utf-8"))["processes"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise StateError(f"{layout} is unreadable ({error})") from None
    if (state_dir / "frontier.sqlite3").exists():
        return 1
    return max(1, min(cores if cores is not None else available_cores(), per_ip))


def partition_config(config: CrawlConfig, index: int) -> CrawlConfig:
    """The config of partition ``index``: its own state directory, its share of the fetchers
    (a pinned ``concurrency``; an autoscaled one scales in each process), of the per-IP cap
    and of the back queues. Refuses ``per_ip < processes``."""
    n = config.processes
    if config.per_ip < n:
        raise ConfigError(
            f"per_ip = {config.per_ip} cannot be shared by {n} processes: each process "
            f"gets per_ip // processes requests per address, so that the cap holds across "
            f"them; use --per-ip {n} or more, or fewer processes"
        )
    return replace(
        config,
        state_dir=partition_dir(config.state_dir, index, n),
        per_ip=config.per_ip // n,
        concurrency=None if config.concurrency is None else max(1, config.concurrency // n),
        back_queues=None if config.back_queues is None else max(1, config.back_queues // n),
    )


# -- the inbox files --------------------------------------------------------------------------


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _inbox_path(state_dir: Path, source: int, dest: int, processes: int) -> Path:
    return partition_dir(state_dir, dest, processes) / "inbox" / f"from-{source}.jsonl"


class Outbox:
    """The inbox files partition ``index`` appends to, one per other partition.

    Each :meth:`append` is handed to the OS before it returns (a killed process
    loses nothing appended); :meth:`sync` fsyncs what was appended since the
    last sync (for power cuts). Opening truncates a torn last line (left by a
    crash in the middle of a write; no reader ever consumes a line without its
    newline). ``written[j]`` is the size of the file for partition ``j``.
    """

    def __init__(self, state_dir: Path, index: int, processes: int, *, fsync: bool) -> None:
        self.index = index
        self.written = [0] * processes
        self._fds: dict[int, int] = {}
        self._dirty: set[int] = set()
        for dest in range(processes):
            if dest == index:
                continue
            path = _inbox_path(state_dir, index, dest, processes)
            created = not path.parent.exists()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            size = _complete_size(fd)
            if size != os.fstat(fd).st_size:
                os.ftruncate(fd, size)
            self._fds[dest] = fd
            self.written[dest] = size
            if fsync:
                os.fsync(fd)
                _fsync_dir(path.parent)
                if created:
                    _fsync_dir(path.parent.parent)

    def append(self, dest: int, data: bytes) -> None:
        """Append whole lines to partition ``dest``'s inbox (to the OS, not yet fsynced)."""
        fd = self._fds[dest]
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        self.written[dest] += len(data)
        self._dirty.add(dest)

    def sync(self) -> None:
        """fsync every file appended to since the last sync (blocking: run it off the loop)."""
        dirty, self._dirty = self._dirty, set()
        for dest in dirty:
            os.fsync(self._fds[dest])

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def _complete_size(fd: int) -> int:
    """The size of the file's prefix that ends with a newline (0 if none)."""
    size = os.fstat(fd).st_size
    end = size
    while end > 0:
        start = max(0, end - 65536)
        chunk = os.pread(fd, end - start, start)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


@dataclass(frozen=True, slots=True)
class InboxChunk:
    """Whole lines read from one source's inbox file, and the offset just after them."""

    source: int
    end_offset: int
    entries: list[QueuedUrl]
    referrers: list[str | None]


class Inbox:
    """Partition ``index``'s inbox files, read from the consumed offsets on.

    :meth:`read` returns whole lines only; :meth:`consume` records, once their
    URLs are queued, how far a source has been read (``consumed[i]``).
    """

    def __init__(
        self, state_dir: Path, index: int, processes: int, consumed: Sequence[int]
    ) -> None:
        self.index = index
        self.consumed = list(consumed)
        self._paths = {
            source: _inbox_path(state_dir, source, index, processes)
            for source in range(processes)
            if source != index
        }
        self._files: dict[int, int] = {}

    def read(self, max_bytes: int = _READ_BYTES) -> list[InboxChunk]:
        """New whole lines of every source (at most about ``max_bytes`` from each)."""
        chunks: list[InboxChunk] = []
        for source, path in self._paths.items():
            fd = self._files.get(source)
            if fd is None:
                try:
                    fd = os.open(path, os.O_RDONLY)
                except FileNotFoundError:
                    continue
                self._files[source] = fd
            offset = self.consumed[source]
            data = os.pread(fd, max_bytes, offset)
            cut = data.rfind(b"\n")
            if cut < 0:
                if len(data) == max_bytes:  # one line longer than max_bytes
                    data = _read_line(fd, offset)
                    cut = len(data) - 1
                if cut < 0:
                    continue
            entries: list[QueuedUrl] = []
            referrers: list[str | None] = []
            for line in data[: cut + 1].splitlines():
                _decode_line(line, entries, referrers)
            chunks.append(InboxChunk(source, offset + cut + 1, entries, referrers))
        return chunks

    def consume(self, source: int, end_offset: int) -> None:
        self.consumed[source] = end_offset

    def close(self) -> None:
        for fd in self._files.values():
            os.close(fd)
        self._files.clear()


def _read_line(fd: int, offset: int) -> bytes:
    """The whole line at ``offset`` (with its newline), or b"" if it is not complete yet."""
    parts: list[bytes] = []
    while True:
        data = os.pread(fd, 1 << 20, offset)
        if not data:
            return b""
        cut = data.find(b"\n")
        if cut >= 0:
            parts.append(data[: cut + 1])
            return b"".join(parts)
        parts.append(data)
        offset += len(data)


def _encode_line(referrer: str | None, entries: Iterable[QueuedUrl]) -> bytes:
    items = [[e.url, e.host_key, e.level, e.depth] for e in entries]
    return (json.dumps([referrer, items], separators=(",", ":")) + "\n").encode("utf-8")


def _decode_line(line: bytes, entries: list[QueuedUrl], referrers: list[str | None]) -> None:
    try:
        referrer, items = json.loads(line)
        for url, key, level, depth in items:
            entries.append(QueuedUrl(str(url), str(key), int(level), int(depth)))
            referrers.append(None if referrer is None else str(referrer))
    except (ValueError, TypeError) as error:
        log.warning("skipping an unreadable inbox line (%s): %r", error, line[:200])


# -- the partition seen from inside one crawler -----------------------------------------------


@dataclass(frozen=True, slots=True)
class Probe:
    """Parent -> partition: answer with a :class:`PartitionStatus` for ``round``."""

    round: int


@dataclass(frozen=True, slots=True)
class Stop:
    """Parent -> partition: stop leasing, finish the requests in flight."""

    reason: str


@dataclass(frozen=True, slots=True)
class Abort:
    """Parent -> partition: stop now (requests in flight are abandoned; nothing is lost)."""


Command = Probe | Stop | Abort


@dataclass(frozen=True, slots=True)
class PartitionStatus:
    """One partition's answer to a probe.

    ``idle``: nothing queued, leased or in flight. ``written[j]``: bytes this
    partition has appended to partition ``j``'s inbox; ``consumed[i]``: bytes it
    has read (and queued) of partition ``i``'s appends to its own inbox.
    """

    index: int
    round: int
    idle: bool
    written: tuple[int, ...]
    consumed: tuple[int, ...]
    snapshot: CrawlSnapshot


class HostPartition:
    """A :class:`courtly.crawl.Partition` backed by inbox files in the shared state directory.

    ``commands`` (polled, ``None`` when there is none) and ``report`` connect it
    to the parent; ``parent_pid``, when given, is watched: if the parent goes
    away the crawl stops. ``forget_after`` bounds the set of URLs recently
    forwarded (a URL found again while still in it is not forwarded again; one
    evicted is forwarded again and dropped by the owner's seen-set).
    """

    def __init__(
        self,
        state_dir: Path,
        index: int,
        processes: int,
        *,
        fsync: bool = False,
        commands: Callable[[], Command | None] | None = None,
        report: Callable[[PartitionStatus], None] | None = None,
        parent_pid: int | None = None,
        poll_s: float = 0.02,
        forget_after: int = 200_000,
    ) -> None:
        if not 0 <= index < processes:
            raise ValueError(f"partition {index} of {processes} does not exist")
        self.index = index
        self.processes = processes
        self._state_dir = state_dir
        self._fsync = fsync
        self._commands = commands or (lambda: None)
        self._report = report or (lambda status: None)
        self._parent_pid = parent_pid
        self._poll_s = poll_s
        self._forget_after = forget_after
        self._recent: OrderedDict[str, None] = OrderedDict()
        self.outbox = Outbox(state_dir, index, processes, fsync=fsync)
        self.inbox: Inbox | None = None
        self._sync_lock = asyncio.Lock()
        self._appends = 0
        self._synced = 0

    @property
    def primary(self) -> bool:
        return self.index == 0

    def owns(self, host_key: str) -> bool:
        return stable_hash(host_key) % self.processes == self.index

    async def forward(self, entries: Sequence[QueuedUrl], referrer: str | None) -> None:
        """Append ``entries`` to their owners' inboxes; durable on return (see the module doc)."""
        groups: dict[int, list[QueuedUrl]] = {}
        recent = self._recent
        for entry in entries:
            if entry.url in recent:
                continue
            recent[entry.url] = None
            if len(recent) > self._forget_after:
                recent.popitem(last=False)
            groups.setdefault(partition_of(entry.host_key, self.processes), []).append(entry)
        for dest, group in groups.items():
            self.outbox.append(dest, _encode_line(referrer, group))
            self._appends += 1
        if groups and self._fsync:
            await self._sync(self._appends)

    async def _sync(self, ticket: int) -> None:
        """Return once an fsync that began after append number ``ticket`` has finished.

        Appends made while one fsync runs share the next (group commit).
        """
        async with self._sync_lock:
            if self._synced >= ticket:
                return
            target = self._appends
            await asyncio.to_thread(self.outbox.sync)
            self._synced = target

    async def open_inbox(self, store: FrontierStore) -> Inbox:
        """Open the inbox at the offsets ``store`` has consumed (0 for a new crawl)."""
        consumed = [0] * self.processes
        for source in range(self.processes):
            if source != self.index:
                blob = await store.get_blob(_OFFSETS, f"inbox-from-{source}")
                consumed[source] = int(blob) if blob else 0
        if self.inbox is not None:
            self.inbox.close()
        self.inbox = Inbox(self._state_dir, self.index, self.processes, consumed)
        return self.inbox

    def read_inbox(self) -> list[InboxChunk]:
        """New whole lines of the inbox (see :meth:`Inbox.read`); :meth:`open_inbox` first."""
        if self.inbox is None:
            raise StateError("the inbox is not open")
        return self.inbox.read()

    async def consumed_to(self, store: FrontierStore, source: int, end_offset: int) -> None:
        """Record that ``source``'s lines up to ``end_offset`` are queued in ``store``.

        Call it only after their URLs were added to the same store: a commit holds
        a prefix of the steps, so the stored offset never runs ahead of them.
        """
        await store.put_blob(_OFFSETS, f"inbox-from-{source}", str(end_offset).encode())
        if self.inbox is not None:
            self.inbox.consume(source, end_offset)

    async def serve(self, crawler: Crawler) -> None:
        """Ingest the inbox, answer the parent, watch it; until cancelled."""
        inbox = await self.open_inbox(crawler.frontier.store)
        try:
            while True:
                busy = await self.ingest(crawler)
                while (command := self._commands()) is not None:
                    if isinstance(command, Probe):
                        self._report(await self.status(crawler, command.round))
                    elif isinstance(command, Stop):
                        crawler.request_stop(command.reason)
                    else:
                        crawler.abort()
                if self._parent_pid is not None and os.getppid() != self._parent_pid:
                    log.warning("the parent process is gone: stopping")
                    crawler.request_stop("parent_gone")
                await asyncio.sleep(0 if busy else self._poll_s)
        finally:
            inbox.close()

    async def ingest(self, crawler: Crawler) -> bool:
        """Queue what the inbox holds now (one read per source); True if it held anything.

        The consumed offset of a source is stored after its URLs are queued, in
        the same store, so it never commits ahead of them.
        """
        store = crawler.frontier.store
        chunks = self.read_inbox()
        for chunk in chunks:
            if chunk.entries:
                await crawler.add_forwarded(chunk.entries, chunk.referrers)
            await self.consumed_to(store, chunk.source, chunk.end_offset)
        return bool(chunks)

    async def status(self, crawler: Crawler, round_: int) -> PartitionStatus:
        """This partition now (the idle flag and both counters read in one loop step)."""
        snapshot = await crawler.snapshot()
        counts = snapshot.counts
        idle = snapshot.in_flight == 0 and counts.queued == 0 and counts.leased == 0
        consumed = tuple(self.inbox.consumed) if self.inbox else (0,) * self.processes
        return PartitionStatus(
            self.index, round_, idle, tuple(self.outbox.written), consumed, snapshot
        )

    def close(self) -> None:
        self.outbox.close()
        if self.inbox is not None:
            self.inbox.close()


# -- termination ------------------------------------------------------------------------------


def quiescent(statuses: Sequence[PartitionStatus]) -> bool:
    """Every partition idle, and every byte appended to an inbox consumed by its owner."""
    by_index = {s.index: s for s in statuses}
    if not all(s.idle for s in statuses):
        return False
    for s in statuses:
        for dest, written in enumerate(s.written):
            if dest != s.index and by_index[dest].consumed[s.index] != written:
                return False
    return True


class TerminationDetector:
    """Done after two consecutive quiescent probe rounds with equal counters.

    Sound when every probe of a round is sent after every answer of the previous
    round arrived: between its two answers no partition consumed anything
    (equal counters), and an idle partition only gets work by consuming, so all
    were idle together at the moment the second round began, with every inbox
    read to its end.
    """

    def __init__(self) -> None:
        self._last: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] | None = None

    def observe(self, statuses: Sequence[PartitionStatus]) -> bool:
        """Feed one complete round of answers; True once the crawl is over."""
        if not quiescent(statuses):
            self._last = None
            return False
        key = tuple((s.written, s.consumed) for s in sorted(statuses, key=lambda s: s.index))
        done = self._last == key
        self._last = key
        return done


# -- aggregation (progress, status, export) ---------------------------------------------------


def merge_counts(counts: Sequence[FrontierCounts]) -> FrontierCounts:
    """Field by field sums (the frontiers are disjoint)."""
    return FrontierCounts(
        *(sum(getattr(c, spec.name) for c in counts) for spec in fields(FrontierCounts))
    )


def _sum_dicts(items: Iterable[dict[Any, int]]) -> dict[Any, int]:
    total: Counter[Any] = Counter()
    for item in items:
        total.update(item)
    return dict(total)


def merge_snapshots(snapshots: Sequence[CrawlSnapshot], state_dir: Path) -> CrawlSnapshot:
    """One snapshot for the whole crawl: sums, the longest elapsed time, every WARC file."""
    elapsed_s = max((s.elapsed_s for s in snapshots), default=1e-9)
    pages = sum(s.pages for s in snapshots)
    reasons = [s.stop_reason for s in snapshots if s.stop_reason is not None]
    counts = merge_counts([s.counts for s in snapshots])
    return CrawlSnapshot(
        elapsed_s=elapsed_s,
        pages=pages,
        pages_per_s=pages / max(elapsed_s, 1e-9),
        robots_fetches=sum(s.robots_fetches for s in snapshots),
        bytes_received=sum(s.bytes_received for s in snapshots),
        redirects=sum(s.redirects for s in snapshots),
        in_flight=sum(s.in_flight for s in snapshots),
        counts=counts,
        errors=_sum_dicts(s.errors for s in snapshots),
        skipped=_sum_dicts(s.skipped for s in snapshots),
        statuses=_sum_dicts(s.statuses for s in snapshots),
        warc_files=tuple(f for s in snapshots for f in s.warc_files),
        state_dir=str(state_dir),
        finished=bool(snapshots) and all(s.finished for s in snapshots),
        stop_reason=reasons[0] if reasons else None,
        stop_detail=next((s.stop_detail for s in snapshots if s.stop_detail), None),
        hosts_retired=_sum_dicts(s.hosts_retired for s in snapshots),
        fetchers=sum(s.fetchers for s in snapshots),
        observed=merge_observed([s.observed for s in snapshots], counts),
        resumed=any(s.resumed for s in snapshots),
    )


def merge_last_runs(runs: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The ``last_run`` records of the partitions' stores, summed into one; a crawl that
    ran out of URLs is named from the sums, as :class:`PartitionedCrawl` names it."""
    present = [run for run in runs if run]
    if not present:
        return None
    reasons = [run.get("stop_reason") for run in present if run.get("stop_reason")]
    pages = sum(run.get("pages", 0) for run in present)
    retired = _sum_dicts(run.get("hosts_retired", {}) for run in present)
    reason = reasons[0] if reasons else None
    detail = next((run["stop_detail"] for run in present if run.get("stop_detail")), None)
    if reason in ("done", "nothing_fetchable"):
        reason, detail = ending(pages, retired)
    return {
        "updated_at": max(run.get("updated_at", 0.0) for run in present),
        "pages": pages,
        "robots_fetches": sum(run.get("robots_fetches", 0) for run in present),
        "bytes_received": sum(run.get("bytes_received", 0) for run in present),
        "errors": _sum_dicts(run.get("errors", {}) for run in present),
        "skipped": _sum_dicts(run.get("skipped", {}) for run in present),
        "finished": len(present) == len(runs) and all(run.get("finished") for run in present),
        "stop_reason": reason,
        "stop_detail": detail,
        "hosts_retired": retired,
        "fetchers": sum(run.get("fetchers", 0) for run in present),
        "partitions": len(runs),
    }


# -- the parent: N child processes ------------------------------------------------------------


def _run_loop(main: Coroutine[Any, Any, T]) -> T:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


def _child_main(
    config: CrawlConfig,
    root: Path,
    index: int,
    commands: Queue[Command],
    replies: Queue[tuple[Any, ...]],
    log_level: int,
    fsync: bool,
    page_budget: SharedPageBudget | None = None,
    gate: MachineIpGate | None = None,
) -> None:
    """Entry point of partition ``index``'s process (spawned); ``page_budget`` is the
    crawl's ``--max-pages``, shared by every partition; ``gate`` is the per-IP cap the
    partitions share."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent relays the terminal's ^C
    logging.basicConfig(
        level=log_level, format=f"%(asctime)s %(levelname)s part-{index} %(name)s: %(message)s"
    )

    def next_command() -> Command | None:
        try:
            return commands.get_nowait()
        except queue.Empty:
            return None

    async def crawl() -> CrawlSnapshot:
        partition = HostPartition(
            root,
            index,
            config.processes,
            fsync=fsync,
            commands=next_command,
            report=lambda status: replies.put(("status", status)),
            parent_pid=os.getppid(),
        )
        try:
            crawler = Crawler(
                config, partition=partition, page_budget=page_budget, machine_gate=gate
            )
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGTERM, crawler.request_stop, "signal")
            return await crawler.run()
        finally:
            partition.close()

    try:
        snapshot = _run_loop(crawl())
    except CourtlyError as error:
        replies.put(("error", index, str(error)))
        replies.close()
        replies.join_thread()
        raise SystemExit(2) from None
    replies.put(("final", index, snapshot))
    replies.close()
    replies.join_thread()


class PartitionedCrawl:
    """``config.processes`` crawler processes over one state directory; same surface as
    :class:`~courtly.crawl.Crawler` (``run``, ``request_stop``, ``abort``).

    ``run`` records the layout (refusing a different number of processes), spawns
    the partitions, relays stop requests, shows the summed progress, detects the
    end of the crawl when no time or page limit ends it first, and returns the
    summed final snapshot. A partition that fails stops the others and raises.
    """

    def __init__(
        self,
        config: CrawlConfig,
        *,
        progress: ProgressSink | None = None,
        log_level: int = logging.WARNING,
        probe_interval_s: float = 0.1,
    ) -> None:
        if config.processes < 2:
            raise ConfigError("a partitioned crawl needs processes >= 2")
        self.config = config
        self._configs = [partition_config(config, i) for i in range(config.processes)]
        self._progress = progress
        self._log_level = log_level
        self._probe_interval_s = probe_interval_s
        self._stop_reason: str | None = None
        self._stop_sent = False
        self._abort = False
        self._abort_sent = False

    def request_stop(self, reason: str = "requested") -> None:
        """Ask every partition to stop leasing and finish its requests in flight."""
        if self._stop_reason is None:
            self._stop_reason = reason

    def abort(self) -> None:
        """Stop every partition now (nothing is lost; in-flight requests repeat on resume)."""
        self.request_stop("aborted")
        self._abort = True

    async def run(self) -> CrawlSnapshot:
        root = self.config.state_dir
        n = self.config.processes
        claim_layout(root, n)
        fsync = self.config.durability == "power"
        context = multiprocessing.get_context("spawn")
        replies: Queue[tuple[Any, ...]] = context.Queue()
        commands: list[Queue[Command]] = [context.Queue() for _ in range(n)]
        max_pages = self.config.max_pages
        # One --max-pages for the whole crawl: every partition claims from it before a
        # fetch, so the pages made add up to it exactly (see courtly.page_budget).
        budget = None if max_pages is None else SharedPageBudget.create(context, max_pages)
        gate = MachineIpGate(self.config.per_ip, context)  # the whole cap, shared
        children = [
            context.Process(
                target=_child_main,
                args=(cfg, root, i, commands[i], replies, self._log_level, fsync, budget, gate),
                name=f"courtly-part-{i}-of-{n}",
            )
            for i, cfg in enumerate(self._configs)
        ]
        for child in children:
            child.start()
        try:
            finals, errors = await self._supervise(children, commands, replies)
        finally:
            for child in children:
                child.join(timeout=30.0)
                if child.is_alive():  # pragma: no cover - a stuck child
                    child.kill()
                    child.join()
            replies.close()
            for command_queue in commands:  # commands to exited children are moot
                command_queue.cancel_join_thread()
                command_queue.close()
        snapshot = merge_snapshots([finals[i] for i in sorted(finals)], root)
        if self._stop_reason == "done":
            reason, detail = ending(snapshot.pages, snapshot.hosts_retired)
            snapshot = replace(snapshot, stop_reason=reason, stop_detail=detail)
            if detail is not None:
                log.warning("%s", detail)
        elif self._stop_reason is not None and self._stop_reason != "error":
            snapshot = replace(snapshot, stop_reason=self._stop_reason)
        if self._progress is not None:
            self._progress.close(snapshot)
        if errors:
            detail = "; ".join(f"partition {i}: {message}" for i, message in sorted(errors.items()))
            raise StateError(f"the partitioned crawl failed ({detail})")
        return snapshot

    async def _supervise(
        self,
        children: Sequence[BaseProcess],
        commands: list[Queue[Command]],
        replies: Queue[tuple[Any, ...]],
    ) -> tuple[dict[int, CrawlSnapshot], dict[int, str]]:
        n = len(children)
        latest: dict[int, CrawlSnapshot] = {}
        finals: dict[int, CrawlSnapshot] = {}
        errors: dict[int, str] = {}
        answers: dict[int, PartitionStatus] = {}
        detector = TerminationDetector()
        round_no = 0
        probe_due_at = time.monotonic() + self._probe_interval_s
        probing = False
        progress_due_at = time.monotonic() + self.config.progress_interval_s
        max_pages = self.config.max_pages

        def send(command: Command) -> None:
            for i, child in enumerate(children):
                if child.is_alive() and i not in finals:
                    commands[i].put(command)

        def drain() -> None:
            while True:
                try:
                    message = replies.get_nowait()
                except queue.Empty:
                    return
                if message[0] == "status":
                    status: PartitionStatus = message[1]
                    latest[status.index] = status.snapshot
                    if probing and status.round == round_no:
                        answers[status.index] = status
                elif message[0] == "final":
                    finals[message[1]] = latest[message[1]] = message[2]
                else:
                    errors[message[1]] = message[2]
                    self.request_stop("error")

        while True:
            drain()
            alive = [child.is_alive() for child in children]
            for i, child in enumerate(children):
                if not alive[i] and i not in finals and i not in errors:
                    drain()
                    if i not in finals and i not in errors:
                        errors[i] = f"exited with code {child.exitcode}"
                        self.request_stop("error")
            if not any(alive):
                drain()
                return finals, errors
            now = time.monotonic()
            if max_pages is not None and sum(s.pages for s in latest.values()) >= max_pages:
                self.request_stop("max_pages")
            if self._stop_reason is not None and not self._stop_sent:
                self._stop_sent = True
                send(Stop(self._stop_reason))
            if self._abort and not self._abort_sent:
                self._abort_sent = True
                send(Abort())
            if not self._stop_sent:
                if probing and len(answers) == n:
                    if detector.observe(list(answers.values())):
                        self.request_stop("done")
                    probing = False
                    round_no += 1
                    answers.clear()
                    probe_due_at = now + self._probe_interval_s
                elif not probing and now >= probe_due_at:
                    probing = True
                    send(Probe(round_no))
            if self._progress is not None and now >= progress_due_at and latest:
                progress_due_at = now + self.config.progress_interval_s
                merged = merge_snapshots(list(latest.values()), self.config.state_dir)
                self._progress.update(merged)
            await asyncio.sleep(0.01)

"""One crawler's share of a partitioned crawl: the hosts it owns, the URLs it forwards
to their owners (durable before the completion that found them commits), the inbox it
ingests, and its answers to the parent's probes."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

from courtly.crawl import Crawler
from courtly.errors import StateError
from courtly.frontier.records import QueuedUrl
from courtly.parallel.inbox import Inbox, InboxChunk, Outbox, encode_line
from courtly.parallel.layout import partition_of, stable_hash
from courtly.parallel.messages import Command, PartitionStatus, Probe, Stop
from courtly.store.base import FrontierStore

__all__ = ["HostPartition"]

log = logging.getLogger("courtly.parallel")

_OFFSETS = "partition"
"""Blob namespace of the consumed inbox offsets (key ``inbox-from-<i>``)."""


class HostPartition:
    """A :class:`courtly.crawl.Partition` backed by inbox files in the shared state directory.

    ``commands`` (polled, ``None`` when there is none) and ``report`` connect it
    to the parent; ``parent_alive``, when given, is asked at every poll: once it says
    the parent is gone, the crawl stops. ``forget_after`` bounds the set of URLs recently
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
        parent_alive: Callable[[], bool] | None = None,
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
        self._parent_alive = parent_alive
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

    async def forward(
        self,
        entries: Sequence[QueuedUrl],
        referrer: str | None,
        cash: Sequence[float] | None = None,
    ) -> None:
        """Append ``entries`` to their owners' inboxes; durable on return (see the module
        doc). With ``cash`` every entry is sent (each is an in-link its owner counts),
        with its share; without, a URL sent recently is not sent again."""
        groups: dict[int, list[QueuedUrl]] = {}
        shares: dict[int, list[float]] = {}
        recent = self._recent
        for i, entry in enumerate(entries):
            dest = partition_of(entry.host_key, self.processes)
            if cash is not None:
                shares.setdefault(dest, []).append(cash[i])
            elif entry.url in recent:
                continue
            else:
                recent[entry.url] = None
                if len(recent) > self._forget_after:
                    recent.popitem(last=False)
            groups.setdefault(dest, []).append(entry)
        for dest, group in groups.items():
            self.outbox.append(dest, encode_line(referrer, group, shares.get(dest)))
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
        """Ingest the inbox (every ``poll_s``, at once while a backlog is read), answer the
        parent, watch it; until cancelled."""
        inbox = await self.open_inbox(crawler.frontier.store)
        try:
            while True:
                busy = await self.ingest(crawler)
                while (command := self._commands()) is not None:
                    if isinstance(command, Probe):
                        self._report(await self.status(crawler, command.round))
                    elif isinstance(command, Stop):
                        crawler.request_stop(command.reason, command.detail)
                    else:
                        crawler.abort()
                if self._parent_alive is not None and not self._parent_alive():
                    log.warning("the parent process is gone: stopping")
                    crawler.request_stop("parent_gone")
                    self._parent_alive = None  # said once: the stop takes its time
                # Read again at once only while a read came back full (a backlog): URLs
                # forwarded at a steady rate wait up to poll_s and come in batches, instead
                # of a read and its store steps in every pass of the loop.
                await asyncio.sleep(0 if busy and inbox.full else self._poll_s)
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
                await crawler.add_forwarded(chunk.entries, chunk.referrers, chunk.cash)
            await self.consumed_to(store, chunk.source, chunk.end_offset)
        return bool(chunks)

    async def status(self, crawler: Crawler, round_: int) -> PartitionStatus:
        """This partition now (the idle flag and both counters read in one loop step)."""
        snapshot = await crawler.snapshot()
        counts = snapshot.counts
        idle = snapshot.in_flight == 0 and counts.queued == 0 and counts.leased == 0
        idle = idle and crawler.recrawl is None  # a recrawl ends only by a signal or --max-time
        consumed = tuple(self.inbox.consumed) if self.inbox else (0,) * self.processes
        return PartitionStatus(
            self.index, round_, idle, tuple(self.outbox.written), consumed, snapshot
        )

    def close(self) -> None:
        self.outbox.close()
        if self.inbox is not None:
            self.inbox.close()


# -- termination ------------------------------------------------------------------------------

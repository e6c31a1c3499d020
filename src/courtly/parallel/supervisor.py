"""The parent of a partitioned crawl: starts the partitions, relays stop requests, probes
them for the end of the crawl, shows the summed progress, returns the summed snapshot."""

from __future__ import annotations

import asyncio
import logging
import queue
import signal
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from courtly.config import CrawlConfig
from courtly.crawl import CrawlSnapshot, ProgressSink
from courtly.errors import ConfigError, CrawlFailed, StateError
from courtly.fetch.machine_ip_gate import MachineIpGate
from courtly.page_budget import SharedPageBudget
from courtly.parallel.aggregate import merge_snapshots
from courtly.parallel.child import child_main
from courtly.parallel.layout import (
    IP_SLOTS_FILE,
    claim_layout,
    partition_config,
    partition_dir,
    partitions_without_state,
)
from courtly.parallel.messages import Abort, Command, PartitionStatus, Probe, Stop
from courtly.parallel.start import start_context
from courtly.parallel.termination import TerminationDetector
from courtly.state_dir import check_no_orphan_archive
from courtly.stop import ending
from courtly.write_failure import RESUME_HINT

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess
    from multiprocessing.queues import Queue
    from pathlib import Path

__all__ = ["PartitionedCrawl", "probe_wait_s"]

log = logging.getLogger("courtly.parallel")

_LOOK_S = 0.02
"""How often the parent looks at its partitions' answers and liveness, and relays a stop
(seconds; every look costs the parent a few system calls)."""
_PROGRESS_ONLY = -1
"""The round of a probe sent while stopping: its answers feed the progress lines only."""


def probe_wait_s(answers: Sequence[PartitionStatus], idle_s: float, busy_s: float) -> float:
    """Pure: the wait before the next probe round after a round's ``answers``: ``busy_s``
    while some partition has URLs queued (the crawl cannot be over before they are
    fetched), else ``idle_s``."""
    return busy_s if any(a.snapshot.counts.queued for a in answers) else idle_s


class PartitionedCrawl:
    """``config.processes`` crawler processes over one state directory; same surface as
    :class:`~courtly.crawl.Crawler` (``run``, ``request_stop``, ``abort``).

    ``run`` records the layout (refusing a different number of processes), starts
    the partitions, relays stop requests, shows the summed progress, detects the
    end of the crawl when no time or page limit ends it first, and returns the
    summed final snapshot. A partition that fails stops the others and raises.

    Probes (each partition answers with its status and snapshot) go out every
    ``probe_interval_s`` once no partition has URLs queued, and every
    ``busy_probe_interval_s`` while some partition has (it cannot be over before they
    are fetched; the answers then serve the progress lines only): a busy crawl's
    partitions answer once a second instead of ten times, and the end of a crawl is
    still seen within a few probe intervals of its last fetch. The parent looks at its
    queue of answers every :data:`_LOOK_S`.
    """

    def __init__(
        self,
        config: CrawlConfig,
        *,
        progress: ProgressSink | None = None,
        log_level: int = logging.WARNING,
        probe_interval_s: float = 0.1,
        busy_probe_interval_s: float = 1.0,
    ) -> None:
        if config.processes < 2:
            raise ConfigError("a partitioned crawl needs processes >= 2")
        self.config = config
        self._configs = [partition_config(config, i) for i in range(config.processes)]
        self._progress = progress
        self._log_level = log_level
        self._probe_interval_s = probe_interval_s
        self._busy_probe_interval_s = max(probe_interval_s, busy_probe_interval_s)
        self._stop_reason: str | None = None
        self._stop_detail: str | None = None
        self._stop_sent = False
        self._abort = False
        self._abort_sent = False

    def request_stop(self, reason: str = "requested", detail: str | None = None) -> None:
        """Ask every partition to stop leasing and finish its requests in flight
        (``detail``: why, in words, kept in each partition's record of the run)."""
        if self._stop_reason is None:
            self._stop_reason = reason
            self._stop_detail = detail

    def abort(self) -> None:
        """Stop every partition now (nothing is lost; in-flight requests repeat on resume)."""
        self.request_stop("aborted")
        self._abort = True

    def _check_partitions_began(self, root: Path, n: int) -> None:
        """Refuse a resume with no seeds while some partitions have no state (the crawl was
        stopped as it started, before they stored their share of the seeds): each would
        start empty, and their hosts' seeds would be lost without a word. Refuse a
        partition whose archive outlived its state, as a single-process crawl is refused."""
        missing = partitions_without_state(root, n)
        for index in missing:
            check_no_orphan_archive(partition_dir(root, index, n))
        if missing and len(missing) < n and not self.config.seeds:
            which = ", ".join(str(i) for i in missing)
            raise StateError(
                f"{root}: partition {which} of {n} holds no crawl state (the crawl was stopped "
                "as it started, before that partition stored its hosts' seeds, or its "
                "directory was removed). Give the crawl's seeds again (SEED... or "
                "--seeds-file): the other partitions keep what they hold, and a seed they "
                "already crawled is not fetched again"
            )

    async def run(self) -> CrawlSnapshot:
        root = self.config.state_dir
        n = self.config.processes
        claim_layout(root, n)
        self._check_partitions_began(root, n)
        fsync = self.config.durability == "power"
        context = start_context()
        replies: Queue[tuple[Any, ...]] = context.Queue()
        commands: list[Queue[Command]] = [context.Queue() for _ in range(n)]
        max_pages = self.config.max_pages
        # One --max-pages for the whole crawl: every partition claims from it before a
        # fetch, so the pages made add up to it exactly (see courtly.page_budget).
        budget = None if max_pages is None else SharedPageBudget.create(context, max_pages)
        gate = MachineIpGate(self.config.per_ip, root / IP_SLOTS_FILE, processes=n)  # whole cap
        children = [
            context.Process(
                target=child_main,
                args=(cfg, root, i, commands[i], replies, self._log_level, fsync, budget, gate),
                name=f"courtly-part-{i}-of-{n}",
            )
            for i, cfg in enumerate(self._configs)
        ]
        for child in children:
            child.start()
        try:
            finals, errors, refusals = await self._supervise(children, commands, replies)
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
            # each partition's message without the resume hint, said once after them all
            detail = failure_details(errors, root, n)
            if refusals.issuperset(errors):  # each refused its input: nothing was crawled
                raise StateError(f"the partitioned crawl failed ({detail})")
            raise CrawlFailed(f"the partitioned crawl failed ({detail}); {RESUME_HINT}")
        return snapshot

    async def _supervise(
        self,
        children: Sequence[BaseProcess],
        commands: list[Queue[Command]],
        replies: Queue[tuple[Any, ...]],
    ) -> tuple[dict[int, CrawlSnapshot], dict[int, str], set[int]]:
        """Watch the partitions to the end: their final snapshots, the messages of those
        that failed, and which of those refused their input (see ``child_main``)."""
        n = len(children)
        latest: dict[int, CrawlSnapshot] = {}
        finals: dict[int, CrawlSnapshot] = {}
        errors: dict[int, str] = {}
        refusals: set[int] = set()
        answers: dict[int, PartitionStatus] = {}
        detector = TerminationDetector()
        round_no = 0
        probe_due_at = time.monotonic() + self._probe_interval_s
        probing = False
        progress_due_at = time.monotonic() + self.config.progress_interval_s
        fresh = False  # a partition answered since the last progress line
        max_pages = self.config.max_pages

        def send(command: Command) -> None:
            for i, child in enumerate(children):
                if child.is_alive() and i not in finals:
                    commands[i].put(command)

        def drain() -> None:
            nonlocal fresh
            while True:
                try:
                    message = replies.get_nowait()
                except queue.Empty:
                    return
                fresh = True
                if message[0] == "status":
                    status: PartitionStatus = message[1]
                    latest[status.index] = status.snapshot
                    if probing and status.round == round_no:
                        answers[status.index] = status
                elif message[0] == "final":
                    finals[message[1]] = latest[message[1]] = message[2]
                else:
                    errors[message[1]] = message[2]
                    if message[3]:
                        refusals.add(message[1])
                    self.request_stop("error", _failure_detail(message[1], message[2]))

        while True:
            drain()
            alive = [child.is_alive() for child in children]
            for i, child in enumerate(children):
                if not alive[i] and i not in finals and i not in errors:
                    drain()
                    if i not in finals and i not in errors:
                        errors[i] = _ended(child.exitcode)
                        self.request_stop("error", _failure_detail(i, errors[i]))
            if not any(alive):
                drain()
                return finals, errors, refusals
            now = time.monotonic()
            if max_pages is not None and sum(s.pages for s in latest.values()) >= max_pages:
                self.request_stop("max_pages")
            if self._stop_reason is not None and not self._stop_sent:
                self._stop_sent = True
                send(Stop(self._stop_reason, self._stop_detail))
            if self._abort and not self._abort_sent:
                self._abort_sent = True
                send(Abort())
            if not self._stop_sent:
                if probing and len(answers) == n:
                    if detector.observe(list(answers.values())):
                        self.request_stop("done")
                    probing = False
                    round_no += 1
                    probe_due_at = now + probe_wait_s(
                        list(answers.values()),
                        self._probe_interval_s,
                        self._busy_probe_interval_s,
                    )
                    answers.clear()
                elif not probing and now >= probe_due_at:
                    probing = True
                    send(Probe(round_no))
            elif now >= probe_due_at:
                # Stopping: the partitions finish their requests in flight; ask for their
                # figures once a progress interval, for the progress lines only (a round
                # no answer counts towards, so a partition already done holds up nothing).
                probe_due_at = now + self.config.progress_interval_s
                send(Probe(_PROGRESS_ONLY))
            if self._progress is not None and now >= progress_due_at and latest and fresh:
                # a line only for new figures: the same line again would say nothing
                fresh = False
                progress_due_at = now + self.config.progress_interval_s
                merged = merge_snapshots(list(latest.values()), self.config.state_dir)
                self._progress.update(merged)
            await asyncio.sleep(_LOOK_S)


def _ended(exitcode: int | None) -> str:
    """How a partition that sent no message ended, in words."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by {name}"
    return f"exited with code {exitcode}"


def failure_details(errors: dict[int, str], root: Path, processes: int) -> str:
    """The partitions' failures in words, each message once, without the resume hint
    (the other partitions' reason to stop, and a part of the crawl's own message).

    Partitions that failed alike (the same message but for their own directory, as
    when another crawl holds the whole state) are named together:
    ``partitions 0, 1: STATE/part-*-of-2/frontier.sqlite3: ...``.
    """
    any_dir = str(root / f"part-*-of-{processes}")
    alike: dict[str, list[int]] = {}
    for index, message in sorted(errors.items()):
        own = str(partition_dir(root, index, processes))
        text = message.removesuffix(f"; {RESUME_HINT}").replace(own, any_dir)
        alike.setdefault(text, []).append(index)
    parts = []
    for text, indices in alike.items():
        if len(indices) == 1:
            parts.append(_failure_detail(indices[0], errors[indices[0]]))
        else:
            parts.append(f"partitions {', '.join(map(str, indices))}: {text}")
    return "; ".join(parts)


def _failure_detail(index: int, message: str) -> str:
    """Partition ``index``'s failure in words, without the resume hint (the other
    partitions' reason to stop, and a part of the crawl's own message)."""
    return f"partition {index}: {message.removesuffix(f'; {RESUME_HINT}')}"

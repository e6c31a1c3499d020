"""The process of one partition: its crawler, its :class:`HostPartition`, and the queues
to the parent (started by :class:`~courtly.parallel.supervisor.PartitionedCrawl`)."""

from __future__ import annotations

import logging
import multiprocessing
import queue
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from courtly.config import CrawlConfig
from courtly.crawl import Crawler, CrawlSnapshot
from courtly.errors import CourtlyError, CrawlFailed
from courtly.event_loop import run_async, signal_handlers
from courtly.fetch.machine_ip_gate import MachineIpGate
from courtly.page_budget import SharedPageBudget
from courtly.parallel.messages import Command
from courtly.parallel.partition import HostPartition
from courtly.write_failure import os_error_text

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

__all__ = ["child_main"]


def child_main(
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
    """Entry point of partition ``index``'s process (started by the supervisor's
    :func:`~courtly.parallel.start.start_context`); ``page_budget`` is the
    crawl's ``--max-pages``, shared by every partition; ``gate`` is the per-IP cap the
    partitions share."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent relays the terminal's ^C
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # and its hangup, or its nohup
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
            parent_alive=_parent_watch(),
        )
        try:
            crawler = Crawler(
                config, partition=partition, page_budget=page_budget, machine_gate=gate
            )
            with signal_handlers(lambda: crawler.request_stop("signal"), signal.SIGTERM):
                return await crawler.run()
        finally:
            partition.close()

    try:
        snapshot = run_async(crawl())
    except (CourtlyError, OSError) as error:
        # The parent says it (no traceback here): refused if the partition refused its
        # input (exit 2), failed if it broke off a crawl that ran (exit 1).
        refused = isinstance(error, CourtlyError) and not isinstance(error, CrawlFailed)
        text = str(error) if isinstance(error, CourtlyError) else os_error_text(error)
        replies.put(("error", index, text, refused))
        replies.close()
        replies.join_thread()
        raise SystemExit(2 if refused else 1) from None
    replies.put(("final", index, snapshot))
    replies.close()
    replies.join_thread()


def _parent_watch() -> Callable[[], bool] | None:
    """Whether the process that started this one is alive, read from its sentinel (a
    pipe it holds open: not the parent PID, which with a fork server is the server's)."""
    parent = multiprocessing.parent_process()
    return None if parent is None else parent.is_alive

"""How a partitioned crawl starts its partitions: forked from a server that imported the
crawler once.

Spawning (a fresh interpreter per partition) imports the whole crawler in every partition,
about 0.6 s of CPU each on the development machine, paid again by every crawl. A fork
server (the ``forkserver`` start method of :mod:`multiprocessing`) is one fresh
interpreter, started by the first partitioned crawl of a process, that imports
:mod:`courtly.parallel.child` once and forks each partition from itself: the partition
starts with the crawler imported and shares those memory pages with the server until it
writes to them. Like a spawned one, it inherits nothing of the parent's running state (no
event loop, thread, open file or lock); it gets the parent's working directory and
``sys.path`` at its start. Unlike a spawned one, its environment variables are the
server's, from when the server started (a partition reads none). The server stays up,
idle, for the rest of the parent's life, so later crawls of the same process (an
application's, a test suite's) start at fork speed. Where the platform has no fork server
(Windows), partitions are spawned.

A partition watches its parent through :func:`multiprocessing.parent_process` (a pipe the
parent holds open), not through its parent PID, which with a fork server is the server's.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.context import ForkServerContext, SpawnContext

__all__ = ["PRELOAD", "start_context"]

PRELOAD = ("courtly.parallel.child",)
"""Modules the fork server imports before it forks a partition."""


def start_context() -> ForkServerContext | SpawnContext:
    """The :mod:`multiprocessing` context that starts partitions (see the module doc)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    # only the first call before the server starts counts; later ones change nothing
    context.set_forkserver_preload(list(PRELOAD))
    return context

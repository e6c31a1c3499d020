"""How a partitioned crawl starts its partitions: spawned, each a fresh interpreter.

Each partition imports the crawler itself (about 0.6 s of CPU on the development
machine). A fork server (``multiprocessing``'s ``forkserver`` start method: one
interpreter imports the crawler once and forks every partition from itself) saved about
1 s of CPU a crawl launch with two partitions, and was tried and left out: the partitions
are then the server's children, not the parent's, and the server is not a child the
parent waits for, so their CPU time is missing from the parent's own accounting
(``time``, ``wait4``, which the benchmarks read) and the server outlives the crawl unless
it is stopped through a private method, which would also cut off another crawl of the
same process that still uses it.

A partition watches its parent through :func:`multiprocessing.parent_process` (a pipe the
parent holds open), not through its parent PID, which is not the parent's under every
start method.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.context import SpawnContext

__all__ = ["start_context"]


def start_context() -> SpawnContext:
    """The :mod:`multiprocessing` context that starts partitions (see the module doc)."""
    return multiprocessing.get_context("spawn")

"""How partitions start (``courtly.parallel.start``): forked from a server that imported the
crawler, and watching their parent through its sentinel rather than a parent PID."""

from __future__ import annotations

import multiprocessing
import os
import sys

import pytest

from courtly.parallel.child import _parent_watch
from courtly.parallel.start import PRELOAD, start_context


def _report(results: multiprocessing.queues.Queue[tuple[bool | None, int, bool]]) -> None:
    watch = _parent_watch()
    preloaded = all(name in sys.modules for name in PRELOAD)
    results.put((None if watch is None else watch(), os.getppid(), preloaded))


@pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server here"
)
def test_a_partition_comes_from_the_fork_server_and_sees_its_parent_alive() -> None:
    context = start_context()
    assert context.get_start_method() == "forkserver"
    results = context.Queue()
    child = context.Process(target=_report, args=(results,))
    child.start()
    try:
        alive, parent_pid, preloaded = results.get(timeout=60)
    finally:
        child.join(timeout=60)
    assert child.exitcode == 0
    assert preloaded
    assert alive is True  # read from the sentinel the parent holds
    # its parent PID is the fork server's, so a watch by PID would have been wrong
    assert parent_pid != os.getpid()


def test_a_process_not_started_by_multiprocessing_has_no_parent_to_watch() -> None:
    assert multiprocessing.parent_process() is None  # the test runner's own process
    assert _parent_watch() is None

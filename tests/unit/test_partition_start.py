"""How partitions start (``courtly.parallel.start``): spawned, and watching their parent
through its sentinel rather than a parent PID."""

from __future__ import annotations

import multiprocessing
import multiprocessing.queues

from courtly.parallel.child import _parent_watch
from courtly.parallel.start import start_context


def _report(results: multiprocessing.queues.Queue[bool | None]) -> None:
    watch = _parent_watch()
    results.put(None if watch is None else watch())


def test_a_partition_sees_its_parent_alive_through_its_sentinel() -> None:
    context = start_context()
    results = context.Queue()
    child = context.Process(target=_report, args=(results,))
    child.start()
    try:
        alive = results.get(timeout=60)
    finally:
        child.join(timeout=60)
    assert child.exitcode == 0
    assert alive is True


def test_a_process_not_started_by_multiprocessing_has_no_parent_to_watch() -> None:
    assert multiprocessing.parent_process() is None  # the test runner's own process
    assert _parent_watch() is None

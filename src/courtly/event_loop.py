"""The event loop courtly runs on: uvloop where it is installed, else asyncio's own."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["run_async", "signal_handlers"]

T = TypeVar("T")


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to its end on a new loop (uvloop where available) and return its result."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


@contextlib.contextmanager
def signal_handlers(callback: Callable[[], object], *signals: int) -> Iterator[None]:
    """Call ``callback`` on the running loop at each of ``signals`` while the block runs.

    The handlers are taken off when the block ends, which puts Python's own back
    (``KeyboardInterrupt`` for SIGINT). uvloop does not do that when its loop closes: a
    crawl run in-process (a test, a notebook, a program embedding the CLI's commands)
    would leave SIGINT bound to a closed loop, and a later Ctrl-C would be lost. Where
    the loop takes no signal handlers (not the main thread) the block runs without them.
    """
    loop = asyncio.get_running_loop()
    added: list[int] = []
    for sig in signals:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, callback)
            added.append(sig)
    try:
        yield
    finally:
        for sig in added:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)

"""The event loop's signal handlers: set for a block, taken off after it."""

from __future__ import annotations

import asyncio
import signal
import threading

from courtly.event_loop import run_async, signal_handlers


def test_signal_handlers_are_the_loops_in_the_block_and_pythons_after_it() -> None:
    assert threading.current_thread() is threading.main_thread()  # where handlers can be set
    seen: list[str] = []

    async def main() -> None:
        with signal_handlers(lambda: seen.append("signal"), signal.SIGINT, signal.SIGTERM):
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
            signal.raise_signal(signal.SIGTERM)
            for _ in range(100):
                if seen:
                    break
                await asyncio.sleep(0.01)

    run_async(main())
    assert seen == ["signal"]
    # uvloop leaves its own handler on a closed loop unless it is taken off: Ctrl-C lost
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL

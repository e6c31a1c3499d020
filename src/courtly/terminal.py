"""Reports on a terminal that may go away: :func:`terminal_output`, and
:func:`point_at_nothing` for a command whose reader went away."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TextIO

__all__ = ["point_at_nothing", "terminal_output"]


@contextlib.contextmanager
def terminal_output() -> Iterator[None]:
    """Run a block that reports on stdout or stderr where the report is not the
    command's product (a crawl's progress, its summary, an error line).

    If the terminal hung up (EIO) or the reader went away (EPIPE), the block's
    ``OSError`` ends the report: both streams are pointed at nothing, so that no later
    line and no flush at exit fails, and the caller goes on. What the command keeps (its
    state, a ``--summary-json`` file) does not depend on it.
    """
    try:
        yield
    except OSError:
        point_at_nothing(sys.stdout, sys.stderr)


def point_at_nothing(*streams: TextIO) -> None:
    """Point ``streams``' file descriptors at the null device, so that what is still
    written to them (a later line, the flush at exit) goes nowhere instead of failing.
    Best effort: a stream without a descriptor is left as it is."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        for stream in streams:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                os.dup2(null, stream.fileno())
    finally:
        os.close(null)

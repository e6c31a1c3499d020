"""Reports on a terminal that may go away: :func:`terminal_output`."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["terminal_output"]


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
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())

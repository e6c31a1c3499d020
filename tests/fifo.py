"""Reading a named pipe from a test without hanging it when nobody writes."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def read_fifo(path: Path, into: list[bytes]) -> threading.Thread:
    """A thread reading the named pipe ``path`` to its end into ``into``."""

    def read() -> None:
        with path.open("rb") as pipe:
            into.append(pipe.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def read_fifo_done(path: Path, reader: threading.Thread, timeout_s: float) -> bool:
    """Wait for ``reader``; if nobody ever opened the pipe to write, open and close it so
    the reader ends (a test that fails must not hang) and say False."""
    reader.join(timeout_s)
    if not reader.is_alive():
        return True
    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    reader.join(timeout_s)
    return False

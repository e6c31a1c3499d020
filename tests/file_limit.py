"""Run a command as if its disk filled up: a file size limit (``RLIMIT_FSIZE``) on its
process, so that a write past ``limit_bytes`` into any file fails with an error from the
kernel, as a write to a full disk does (courtly's own words for the two are the same
path: tests assert the message, the exit code and what is left behind)."""

from __future__ import annotations

import sys

__all__ = ["with_file_limit"]


def with_file_limit(command: list[str], limit_bytes: int) -> list[str]:
    """``command`` (a ``[sys.executable, ...]`` list) started through a launcher that sets
    the limit, then becomes the command: safe beside threads, unlike a ``preexec_fn``."""
    assert command[0] == sys.executable, command
    launcher = (
        "import os, resource, sys; "
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit_bytes}, {limit_bytes})); "
        "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    )
    return [sys.executable, "-c", launcher, *command[1:]]

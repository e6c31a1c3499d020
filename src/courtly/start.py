"""The ``courtly`` command's entry point: Ctrl-C while it starts up exits cleanly.

The console script and ``python -m courtly`` call :func:`main`. Loading the command
(click, aiohttp, the crawler) takes a noticeable moment, before any signal handler is
installed; a Ctrl-C then raises :class:`KeyboardInterrupt` in the middle of an import.
It ends the process with :attr:`ExitCode.SIGNAL` and one line on stderr, no traceback:
nothing was done yet (the state directory is written only once the input was checked).
A Ctrl-C later, outside the crawl's own handling, is answered the same way.
"""

from __future__ import annotations

import sys

from courtly.exit_codes import ExitCode

__all__ = ["main"]


def main() -> None:
    """Load and run the command line; Ctrl-C on the way is exit code 4 and one line."""
    try:
        from courtly.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        print("courtly: interrupted", file=sys.stderr)
        raise SystemExit(int(ExitCode.SIGNAL)) from None

"""How the commands end on an error courtly expects: ``Error: ...`` on stderr, the exit
code of :mod:`courtly.exit_codes`, the ``--summary-json`` document, never a traceback."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import click

from courtly.cli.output_file import written_whole
from courtly.errors import CourtlyError, CrawlFailed
from courtly.exit_codes import ExitCode
from courtly.store.redis.address import is_redis_error
from courtly.terminal import point_at_nothing, terminal_output
from courtly.write_failure import os_error_text

__all__ = [
    "expected_errors",
    "fail",
    "os_error_text",
    "refuse",
    "say_error",
    "write_json",
]


def refuse(message: str, summary_json: Path | None = None) -> NoReturn:
    """Print ``Error: message`` and exit with :attr:`ExitCode.REFUSED` (click's usage code)."""
    if summary_json is not None:
        write_json(
            summary_json,
            {"exit_code": int(ExitCode.REFUSED), "outcome": "refused", "error": message},
        )
    say_error(message)
    sys.exit(ExitCode.REFUSED)


def fail(message: str, summary_json: Path | None = None) -> NoReturn:
    """Print ``Error: message`` and exit with :attr:`ExitCode.FAILED`."""
    if summary_json is not None:
        write_json(
            summary_json, {"exit_code": int(ExitCode.FAILED), "outcome": "failed", "error": message}
        )
    say_error(message)
    sys.exit(ExitCode.FAILED)


def say_error(message: str) -> None:
    """``Error: message`` on stderr, if stderr still takes it."""
    with terminal_output():
        click.echo(f"Error: {message}", err=True)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` whole (:func:`~courtly.cli.output_file.written_whole`)."""
    try:
        with written_whole(path) as out:
            out.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    except OSError as error:
        say_error(f"cannot write the summary: {os_error_text(error)}")


@contextlib.contextmanager
def expected_errors(summary_json: Path | None = None) -> Iterator[None]:
    """Turn the errors courtly expects into a message and an exit code (never a traceback)."""
    try:
        yield
    except CrawlFailed as error:  # the crawl ran: not refused input
        fail(str(error), summary_json)
    except (CourtlyError, click.UsageError) as error:
        refuse(
            error.format_message() if isinstance(error, click.UsageError) else str(error),
            summary_json,
        )
    except sqlite3.DatabaseError as error:
        refuse(
            f"the state file is damaged ({error}): restore it from a backup, or move the "
            "state directory away to start a new crawl",
            summary_json,
        )
    except BrokenPipeError:
        # The reader of the output went away (``courtly export | head``): not an error of
        # courtly's to report. Exit quietly (status 1: the output is not whole), with
        # standard output pointed at nothing so that its flush at exit fails no more.
        point_at_nothing(sys.stdout)
        sys.exit(ExitCode.FAILED)
    except OSError as error:
        fail(os_error_text(error), summary_json)
    except Exception as error:
        if is_redis_error(error):  # a shared crawl's store unreachable, or gone mid-crawl
            fail(f"the Redis store: {error}", summary_json)
        raise

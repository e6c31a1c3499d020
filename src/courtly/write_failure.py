"""A failed write of a crawl's state or archive, in words (see
:class:`~courtly.errors.CrawlFailed`): a full disk is named as one, whoever saw it first,
SQLite (``SQLITE_FULL``) or the WARC writer (``ENOSPC``), and every message says how the
crawl goes on."""

from __future__ import annotations

import errno
import sqlite3
from typing import Final

__all__ = ["RESUME_HINT", "os_error_text", "write_failure"]

RESUME_HINT: Final = (
    "once the cause is fixed, the same command resumes the crawl from its last commit"
)
"""What the message of a crawl that failed on a write ends with."""

_FULL_ERRNOS: Final = frozenset({errno.ENOSPC, errno.EDQUOT})


def write_failure(error: BaseException) -> str:
    """``error``, raised by a write of the state (an :class:`sqlite3.Error`) or of the
    archive (an :class:`OSError`), in words: ``the disk is full: ...`` for a full disk or
    a quota, else the error's own text."""
    if isinstance(error, sqlite3.Error):
        if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            return f"the disk is full: {error}"
        return str(error)
    if isinstance(error, OSError):
        text = error.strerror or str(error)
        if error.errno in _FULL_ERRNOS:
            return f"the disk is full: {text}"
        return text
    return str(error)


def os_error_text(error: OSError, about: str | None = None) -> str:
    """``error`` in words, after ``about`` (what the user named: ``--dashboard HOST:PORT``)
    if given, else after the file it names if it names one (``PATH: ...``)."""
    where = about if about is not None else error.filename
    return f"{where}: {write_failure(error)}" if where else write_failure(error)

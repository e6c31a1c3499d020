"""Checks on a crawl's state directory made before anything is written to it.

:func:`check_crawl_target` refuses, with a message naming the path and what to
do, a state directory a crawl must not start in: one that cannot be created or
written, a new crawl with no seeds, and a directory holding WARC files of an
earlier crawl whose state file is gone (a new crawl would append to them and
mix two crawls in one archive). It only reads: a refused run leaves no trace.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from courtly.config import CrawlConfig
from courtly.errors import ConfigError, StateError

__all__ = [
    "STATE_FILE",
    "check_crawl_target",
    "check_no_orphan_archive",
    "check_writable",
    "holds_crawl",
]

STATE_FILE: Final = "frontier.sqlite3"
"""The SQLite state file of a single-process crawl (one per partition otherwise)."""
_LAYOUT_FILE: Final = "partitions.json"  # courtly.parallel.LAYOUT_FILE (no import cycle)


def holds_crawl(state_dir: Path) -> bool:
    """Whether ``state_dir`` holds a crawl to resume: a state file, or a partition layout
    with a state file in one of its partitions (a layout alone is a partitioned crawl
    stopped before any partition began: nothing of it was kept)."""
    if os.path.lexists(state_dir / STATE_FILE):
        return True
    if not os.path.lexists(state_dir / _LAYOUT_FILE):
        return False
    return any(os.path.lexists(part / STATE_FILE) for part in state_dir.glob("part-*-of-*"))


def check_writable(path: Path, what: str, *, must_exist: bool = False) -> None:
    """Raise :class:`ConfigError` unless ``path`` (a directory) exists and is writable,
    or (unless ``must_exist``) could be created: its nearest existing ancestor is a
    writable directory."""
    if path.exists():
        if not path.is_dir():
            raise ConfigError(f"{what} {path} is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ConfigError(f"{what} {path} is not writable")
        return
    if must_exist:
        raise ConfigError(f"{what} {path} does not exist")
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ConfigError(f"cannot create {what} {path}: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConfigError(f"cannot create {what} {path}: {ancestor} is not writable")


def _warc_files(state_dir: Path) -> list[Path]:
    warc = state_dir / "warc"
    try:
        return sorted(p for p in warc.iterdir() if p.name.endswith((".warc", ".warc.gz")))
    except OSError:
        return []


def check_crawl_target(config: CrawlConfig) -> None:
    """Refuse (``ConfigError``/``StateError``) a state directory this crawl must not use.

    Reads only. A state file that exists but is damaged is left to the store, which
    refuses it when it opens it (:func:`courtly.store.sqlite_schema.open_database`).
    """
    state_dir = config.state_dir
    check_writable(state_dir, "the state directory")
    resumable = holds_crawl(state_dir)
    if not config.seeds and not resumable:
        raise ConfigError(
            f"nothing to crawl: no seeds given, and {state_dir} holds no crawl to resume "
            "(give SEED... or --seeds-file)"
        )
    warcs = _warc_files(state_dir)
    if not warcs:
        return
    if config.store == "memory":
        raise StateError(
            f"{state_dir}/warc holds {len(warcs)} WARC file(s) of an earlier crawl: a "
            "--store memory crawl keeps no state, so it needs a new --state directory"
        )
    if not resumable:
        check_no_orphan_archive(state_dir)


def check_no_orphan_archive(state_dir: Path) -> None:
    """Refuse (:class:`StateError`) ``state_dir`` (a crawl's, or a partition's) if its
    ``warc/`` holds WARC files while its state file is missing: the crawl state is gone,
    and a new crawl would append to that archive, mixing two crawls in it."""
    warcs = _warc_files(state_dir)
    if warcs and not os.path.lexists(state_dir / STATE_FILE):
        raise StateError(
            f"{state_dir}/warc holds {len(warcs)} WARC file(s) of an earlier crawl but "
            f"{state_dir / STATE_FILE} is missing: the crawl state is gone, and a new crawl "
            "would append to that archive. Restore the state file from a backup, or use a "
            "new --state directory"
        )

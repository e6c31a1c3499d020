"""How the reading commands (``status``, ``export``, ``changes``) open a crawl: a state
directory's store(s), a running crawl's last status, or a shared crawl in Redis."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from courtly.config import CrawlConfig
from courtly.crawl import STATUS_FILE, open_store
from courtly.errors import ConfigError, StateError
from courtly.frontier.config import QueueConfig
from courtly.state_dir import STATE_FILE

__all__ = [
    "CRAWL_NAME",
    "SHARED_STORE",
    "STATE_DIR",
    "crawl_dirs",
    "live_status",
    "open_existing",
    "open_shared",
    "stored_config",
]


def crawl_dirs(state_dir: Path) -> list[Path]:
    """The directories holding the stores of the crawl in ``state_dir``, to read one after
    the other: ``state_dir`` itself, or its partitions'.

    A partition with no state file (the crawl was stopped as it started, before that
    partition began, or its directory was removed) holds nothing to read: it is skipped
    with a warning on standard error, so that what the others hold can still be read.
    With none left, :class:`StateError` says there is no crawl state."""
    from courtly.parallel import state_dirs
    from courtly.parallel.layout import partitions_without_state

    dirs = state_dirs(state_dir)
    if len(dirs) == 1 and dirs[0] == state_dir:
        return dirs
    missing = partitions_without_state(state_dir, len(dirs))
    if len(missing) == len(dirs):
        raise StateError(
            f"{state_dir}: no crawl state here (none of its {len(dirs)} partitions holds a "
            "state file: the crawl was stopped as it started); start a crawl with "
            f"courtly crawl --state {state_dir} SEED..."
        )
    for index in missing:
        click.echo(
            f"warning: {dirs[index]}: partition {index} of {len(dirs)} holds no crawl state "
            "(the crawl was stopped as it started, or its directory was removed): skipped",
            err=True,
        )
    return [directory for index, directory in enumerate(dirs) if index not in missing]


def open_existing(state_dir: Path) -> Any:
    """The store of a crawl's state directory; StateError (missing, damaged, locked).

    Where the state cannot be written, it is opened to read only (see
    :func:`courtly.store.sqlite_schema.open_read_only`)."""
    path = state_dir / STATE_FILE
    if not os.path.lexists(path):
        raise StateError(
            f"{path}: no crawl state here (the state file is missing); start a crawl with "
            f"courtly crawl --state {state_dir} SEED..."
        )
    from courtly.store.sqlite_schema import read_only_part  # the SQLite backend is optional

    if read_only_part(path) is not None:  # a read-only mount, another user's crawl
        from courtly.store.sqlite import SqliteStore

        return SqliteStore(path, QueueConfig(), read_only=True)
    config = CrawlConfig(state_dir=state_dir, user_agent="courtly/0 (+mailto:status@localhost)")
    return open_store(config, QueueConfig())


async def stored_config(store: Any) -> dict[str, Any] | None:
    """The configuration the crawl saved in ``store`` at its last start (status.json's
    ``config``), or ``None`` if it never started."""
    blob = await store.get_blob("crawl", "config")
    return None if blob is None else dict(json.loads(blob))


def live_status(directory: Path) -> dict[str, Any] | None:
    """The status a running crawl last wrote (its state file is locked), if any."""
    try:
        data = json.loads((directory / STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "frontier" in data else None


def open_shared(store: str | None, crawl_name: str | None) -> Any:
    """The Redis store of ``--store URL --crawl-name NAME``; ``None`` without ``--store``
    (then ``--crawl-name`` alone is refused: it names nothing in a state directory)."""
    if store is None:
        if crawl_name is not None:
            raise click.UsageError(
                "--crawl-name names a crawl in a Redis --store: give --store URL with it, "
                "or leave it out to read --state DIR"
            )
        return None
    from courtly.store.redis import RedisStore
    from courtly.store.redis.address import (
        check_crawl_name,
        check_store_url,
        connect,
        is_redis_url,
    )

    if not is_redis_url(store):
        raise click.UsageError(f"--store here takes a redis:// URL, not {store!r}")
    if not crawl_name:
        raise click.UsageError("--store needs --crawl-name NAME")
    try:
        check_crawl_name(crawl_name)
        check_store_url(store)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    return RedisStore(connect(store), crawl_name, retry_s=5.0)


SHARED_STORE = click.option("--store", help="A shared crawl's Redis URL (with --crawl-name).")
CRAWL_NAME = click.option("--crawl-name", help="The crawl's name in the --store.")
STATE_DIR = click.option(
    "--state",
    "state_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="The state directory of the crawl.",
)
"""``--state DIR`` of a reading command: an existing directory (or ``--store``)."""

"""``courtly export``: the catalogue (every URL seen) as JSON Lines."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from courtly.cli.failures import expected_errors
from courtly.cli.output_file import written_whole
from courtly.cli.state_access import (
    CRAWL_NAME,
    SHARED_STORE,
    STATE_DIR,
    crawl_dirs,
    open_existing,
    open_shared,
)
from courtly.event_loop import run_async
from courtly.state_dir import STATE_FILE, check_writable

__all__ = ["export"]


async def recrawl_of(store: Any, entries: list[Any]) -> dict[str, dict[str, object]] | None:
    """The ``recrawl`` key of the lines of ``entries`` that have a recrawl row (looked up
    by their host: with another politeness unit, a Redis crawl's rows are not found)."""
    from courtly.store.revisit_rows import RevisitRows, export_fields
    from courtly.url.host import host_of

    if not isinstance(store, RevisitRows) or not entries:
        return None
    rows = await store.revisit_states([(e.url, host_of(e.url)) for e in entries])
    return {url: {"recrawl": export_fields(row)} for url, row in rows.items()}


@click.command()
@STATE_DIR
@SHARED_STORE
@CRAWL_NAME
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write here instead of standard output.",
)
def export(
    state_dir: Path | None,
    store: str | None,
    crawl_name: str | None,
    fmt: str,
    output: Path | None,
) -> None:
    """Export the catalogue (every URL seen, fetched or skipped) as JSON Lines: of the
    crawl in --state DIR, or of the shared crawl --crawl-name in a Redis --store.

    -o FILE appears whole or not at all (a device or a named pipe, such as
    /dev/stdout, is written in place). Exit code 2 for a missing, damaged or
    locked state file or an unwritable output.
    """
    from courtly.archive.catalogue import export_jsonl

    shared = open_shared(store, crawl_name)
    if shared is None and state_dir is None:
        raise click.UsageError("--state DIR (or --store URL --crawl-name NAME) is required")

    async def write(out: Any, dirs: list[Path]) -> int:
        count = 0
        if shared is not None:
            openers: list[Callable[[], Any]] = [lambda: shared]
        else:
            # a partitioned crawl: one directory after the other
            openers = [functools.partial(open_existing, d) for d in dirs]
        for open_one in openers:
            opened = open_one()
            try:
                batch = []
                async for entry in opened.catalogue():
                    batch.append(entry)
                    if len(batch) >= 1000:
                        count += export_jsonl(batch, out, await recrawl_of(opened, batch))
                        batch.clear()
                count += export_jsonl(batch, out, await recrawl_of(opened, batch))
            finally:
                await opened.aclose()
        return count

    with expected_errors():
        dirs = crawl_dirs(state_dir) if state_dir is not None else []
        for directory in dirs:
            if not os.path.lexists(directory / STATE_FILE):  # refuse before creating the output
                open_existing(directory)
        if output is None:
            count = run_async(write(sys.stdout, dirs))
        else:
            check_writable(output.parent, "the directory of --output", must_exist=True)
            with written_whole(output) as out:
                count = run_async(write(out, dirs))
    click.echo(f"{count} catalogue entries", err=True)

"""``courtly changes``: what the revisits of a ``--recrawl`` crawl found changed."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from courtly.cli.failures import expected_errors
from courtly.cli.state_access import (
    CRAWL_NAME,
    SHARED_STORE,
    STATE_DIR,
    crawl_dirs,
    open_existing,
    open_shared,
    stored_config,
)
from courtly.errors import ConfigError
from courtly.event_loop import run_async

if TYPE_CHECKING:
    from courtly.changes import ChangeEvent

__all__ = ["changes"]


@click.command()
@STATE_DIR
@SHARED_STORE
@CRAWL_NAME
@click.option(
    "--since",
    help="Only changes at or after TIME: epoch seconds, ISO 8601 (UTC if no zone), or "
    "a time ago (90s, 15m, 2h, 7d).",
)
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True)
def changes(
    state_dir: Path | None, store: str | None, crawl_name: str | None, since: str | None, fmt: str
) -> None:
    """What changed: one JSON line per revisit that found a page changed (URL, when,
    status and size before and after, SimHash distance, title), of the crawl in --state
    DIR (every partition) or of the shared crawl --crawl-name in a Redis --store; see
    docs/recrawl.md."""
    from courtly.changes import events_from_bytes, export_jsonl, parse_since

    shared = open_shared(store, crawl_name)
    if shared is None and state_dir is None:
        raise click.UsageError("--state DIR (or --store URL --crawl-name NAME) is required")
    with expected_errors():
        try:
            since_at = parse_since(since, time.time()) if since is not None else None
        except ValueError as error:
            raise ConfigError(str(error)) from None

        revisits = True  # whether the crawl runs with --recrawl, as its stored config says

        async def read() -> list[ChangeEvent]:
            nonlocal revisits
            if shared is not None:
                openers: list[Callable[[], Any]] = [lambda: shared]
            else:
                assert state_dir is not None  # a partitioned crawl: each partition's
                openers = [functools.partial(open_existing, d) for d in crawl_dirs(state_dir)]
            events: list[ChangeEvent] = []
            for open_one in openers:
                opened = open_one()
                try:
                    events.extend(events_from_bytes(await opened.get_blob("recrawl", "changes")))
                    stored = await stored_config(opened)
                    if stored is not None and stored.get("recrawl") is False:
                        revisits = False
                finally:
                    await opened.aclose()
            return sorted(events, key=lambda event: event.at)

        count = export_jsonl(run_async(read()), sys.stdout, since=since_at)
    if count == 0 and not revisits:
        hint = "the crawl does not run with --recrawl: no page is revisited"
        click.echo(f"0 changes ({hint})", err=True)
    else:
        click.echo(f"{count} changes", err=True)

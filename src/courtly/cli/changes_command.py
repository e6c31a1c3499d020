"""``courtly changes``: what the revisits of a ``--recrawl`` crawl found changed."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from courtly.cli.failures import expected_errors
from courtly.cli.state_access import open_existing
from courtly.errors import ConfigError
from courtly.event_loop import run_async

__all__ = ["changes"]


@click.command()
@click.option(
    "--state",
    "state_dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    required=True,
    help="The state directory of a crawl run with --recrawl.",
)
@click.option("--since", help="Only changes at or after TIME (epoch seconds or ISO 8601, UTC).")
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True)
def changes(state_dir: Path, since: str | None, fmt: str) -> None:
    """What changed: one JSON line per revisit that found a page changed (URL, when,
    status and size before and after, SimHash distance, title); see docs/recrawl.md."""
    from courtly.changes import events_from_bytes, export_jsonl, parse_since

    with expected_errors():
        try:
            since_at = parse_since(since) if since is not None else None
        except ValueError as error:
            raise ConfigError(str(error)) from None

        async def read() -> bytes | None:
            store = open_existing(state_dir)
            try:
                data: bytes | None = await store.get_blob("recrawl", "changes")
                return data
            finally:
                await store.aclose()

        count = export_jsonl(events_from_bytes(run_async(read())), sys.stdout, since=since_at)
    click.echo(f"{count} changes", err=True)

"""``courtly dashboard --state DIR``: the page of a running or finished crawl, from its
``status.json`` (the crawl writes it every tick; a finished crawl's last one stays)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import click

from courtly.errors import ConfigError
from courtly.event_loop import signal_handlers
from courtly.observe.attach import DashboardSpec
from courtly.observe.server import Dashboard, is_loopback, parse_listen
from courtly.observe.sources import FileSource, status_paths
from courtly.write_failure import os_error_text

__all__ = ["dashboard", "dashboard_spec"]


def dashboard_spec(
    at: str | None,
    token: str | None,
    *,
    flags: tuple[str, str] = ("--dashboard", "--dashboard-token"),
) -> DashboardSpec | None:
    """``--dashboard [HOST:]PORT`` and ``--dashboard-token`` checked; ``None`` without.
    ``flags``: the two options' names in the messages (``courtly dashboard``'s are
    ``--listen`` and ``--token``)."""
    where, secret = flags
    if at is None:
        if token is not None:
            raise ConfigError(f"{secret} needs {where} [HOST:]PORT")
        return None
    try:
        host, port = parse_listen(at)
    except ValueError as error:
        raise ConfigError(f"{where}: {error}") from None
    if not is_loopback(host) and not token:
        raise ConfigError(f"{where} on {host} is reachable from other machines: give {secret}")
    return DashboardSpec(host, port, token)


async def _serve(source: FileSource, host: str, port: int, token: str | None) -> None:
    stop = asyncio.Event()
    with signal_handlers(stop.set, signal.SIGINT, signal.SIGTERM):
        async with Dashboard(source, host, port, token=token) as server:
            click.echo(f"dashboard: {server.url}", err=True)
            await stop.wait()


@click.command()
@click.option(
    "--state",
    "state_dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="The crawl's state directory.",
)
@click.option(
    "--listen",
    default="127.0.0.1:8765",
    show_default=True,
    metavar="[HOST:]PORT",
    help="Where to serve (port 0: any free port).",
)
@click.option("--token", help="Token the page asks for (required off loopback).")
def dashboard(state_dir: Path, listen: str, token: str | None) -> None:
    """Serve the dashboard of the crawl in --state DIR (running or finished).

    Reads DIR/status.json (or each partition's, merged), which the crawl replaces
    every progress tick; the top-N hosts are those the last tick carried (50 per
    sort key).
    """
    try:
        spec = dashboard_spec(listen, token, flags=("--listen", "--token"))
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    assert spec is not None
    if not status_paths(state_dir):
        raise click.UsageError(f"{state_dir}: no status.json (has a crawl run here?)")
    try:
        asyncio.run(_serve(FileSource(state_dir), spec.host, spec.port, spec.token))
    except OSError as error:  # the address taken, or not this machine's
        raise click.ClickException(os_error_text(error, f"--listen {listen}")) from None

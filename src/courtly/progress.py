"""Progress output: a live rich dashboard on a terminal, plain log lines otherwise.

Both implement :class:`courtly.crawl.ProgressSink`; the crawl calls ``update``
every ``progress_interval_s`` and ``close`` once with the final snapshot.
"""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table

from courtly.crawl import CrawlSnapshot

__all__ = ["LogProgress", "RichProgress", "format_summary", "progress_for"]


def _counts_line(items: dict[str, int] | dict[int, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(items.items(), key=lambda kv: str(kv[0]))) or "-"


def format_line(snapshot: CrawlSnapshot) -> str:
    """One plain progress line."""
    c = snapshot.counts
    return (
        f"[{snapshot.elapsed_s:7.1f}s] pages={snapshot.pages} ({snapshot.pages_per_s:.1f}/s) "
        f"robots={snapshot.robots_fetches} queued={c.queued} in_flight={snapshot.in_flight} "
        f"hosts ready={c.hosts_ready} snoozed={c.hosts_snoozed} inactive={c.hosts_inactive} "
        f"parked={c.hosts_parked} retired={c.hosts_retired} "
        f"errors: {_counts_line(snapshot.errors)}"
    )


def format_summary(snapshot: CrawlSnapshot) -> str:
    """The end-of-crawl summary, plain text."""
    c = snapshot.counts
    lines = [
        f"crawl {snapshot.stop_reason or 'stopped'} after {snapshot.elapsed_s:.1f} s",
        f"  pages fetched     {snapshot.pages} ({snapshot.pages_per_s:.1f}/s), "
        f"{snapshot.bytes_received / 1e6:.1f} MB received",
        f"  robots.txt        {snapshot.robots_fetches} fetches",
        f"  redirects         {snapshot.redirects}",
        f"  statuses          {_counts_line(snapshot.statuses)}",
        f"  errors            {_counts_line(snapshot.errors)}",
        f"  skipped           {_counts_line(snapshot.skipped)}",
        f"  frontier          queued={c.queued} seen={c.seen} hosts: active={c.hosts_active} "
        f"ready={c.hosts_ready} snoozed={c.hosts_snoozed} inactive={c.hosts_inactive} "
        f"parked={c.hosts_parked} retired={c.hosts_retired}",
        f"  state directory   {snapshot.state_dir}",
        f"  catalogue         courtly export --state {snapshot.state_dir} --format jsonl",
    ]
    for path in snapshot.warc_files:
        lines.append(f"  WARC              {path}")
    if snapshot.stop_detail:
        lines.insert(1, f"  {snapshot.stop_detail}")
    return "\n".join(lines)


class LogProgress:
    """Plain periodic lines (for pipes, CI and log files)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out or sys.stderr

    def update(self, snapshot: CrawlSnapshot) -> None:
        print(format_line(snapshot), file=self._out, flush=True)

    def close(self, snapshot: CrawlSnapshot) -> None:
        print(format_summary(snapshot), file=self._out, flush=True)


class RichProgress:
    """A live dashboard: rates, queue sizes, host states, errors by kind."""

    def __init__(self, console: Console | None = None) -> None:
        self._console = console or Console(stderr=True)
        self._live = Live(console=self._console, refresh_per_second=4, transient=False)
        self._started = False

    def _render(self, snapshot: CrawlSnapshot) -> Panel:
        c = snapshot.counts
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan")
        table.add_column()
        table.add_row("elapsed", f"{snapshot.elapsed_s:.1f} s")
        table.add_row("pages", f"{snapshot.pages}  ({snapshot.pages_per_s:.1f}/s)")
        table.add_row("robots.txt", str(snapshot.robots_fetches))
        table.add_row("queued", f"{c.queued}  (front {c.front_queued}, back {c.back_queued})")
        table.add_row("in flight", str(snapshot.in_flight))
        table.add_row(
            "hosts",
            f"active {c.hosts_active}  ready {c.hosts_ready}  snoozed {c.hosts_snoozed}  "
            f"inactive {c.hosts_inactive}  parked {c.hosts_parked}  retired {c.hosts_retired}",
        )
        table.add_row("statuses", _counts_line(snapshot.statuses))
        table.add_row("errors", _counts_line(snapshot.errors))
        table.add_row("skipped", _counts_line(snapshot.skipped))
        return Panel(Group(table), title="courtly", border_style="green")

    def update(self, snapshot: CrawlSnapshot) -> None:
        if not self._started:
            self._live.start()
            self._started = True
        self._live.update(self._render(snapshot))

    def close(self, snapshot: CrawlSnapshot) -> None:
        if self._started:
            self._live.update(self._render(snapshot))
            self._live.stop()
        self._console.print(format_summary(snapshot))


def progress_for(stream: TextIO | None = None) -> LogProgress | RichProgress:
    """A dashboard when ``stream`` (default stderr) is a terminal, plain lines otherwise."""
    stream = stream or sys.stderr
    return RichProgress() if stream.isatty() else LogProgress(stream)

"""Progress output: a live rich dashboard on a terminal, plain log lines otherwise.

Both implement :class:`courtly.crawl.ProgressSink`; the crawl calls ``update``
every ``progress_interval_s`` and ``close`` once with the final snapshot. ``close``
prints the summary unless the sink was made with ``summary_on_close=False`` (the
command line prints it itself, and only for a crawl that ran). :meth:`notice`
prints a line that the live panel does not overwrite (e.g. "stopping...").
"""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table

from courtly.crawl import CrawlSnapshot
from courtly.exit_codes import stop_reason_words
from courtly.terminal import terminal_output

__all__ = ["LogProgress", "RichProgress", "format_summary", "format_waiting", "progress_for"]


def _counts_line(items: dict[str, int] | dict[int, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(items.items(), key=lambda kv: str(kv[0]))) or "-"


_SOURCE_WORDS = {
    "min_delay": "min delay",
    "fetch_time": "k x fetch time",
    "crawl_delay": "Crawl-delay",
    "retry_after": "Retry-After",
    "backoff": "back-off",
    "parked": "parked",
    "robots_unreachable": "robots.txt unreachable",
    "address_busy": "address busy",
    "resumed": "resumed after a crash",
}


def format_waiting(snapshot: CrawlSnapshot, top: int = 3) -> str:
    """The verdict and the top waiting reasons, e.g. ``politeness-bound: Crawl-delay 12,
    min delay 3`` (``-`` before the first tick)."""
    observed = snapshot.observed
    if not observed:
        return "-"
    waiting = sorted(
        ((n, s) for s, n in observed.get("waiting_by_source", {}).items() if n), reverse=True
    )
    reasons = ", ".join(f"{_SOURCE_WORDS.get(s, s)} {n}" for n, s in waiting[:top])
    return f"{observed.get('verdict', '-')}: {reasons or 'no host waits'}"


def format_line(snapshot: CrawlSnapshot) -> str:
    """One plain progress line."""
    c = snapshot.counts
    return (
        f"[{snapshot.elapsed_s:7.1f}s] pages={snapshot.pages} ({snapshot.pages_per_s:.1f}/s) "
        f"robots={snapshot.robots_fetches} queued={c.queued} in_flight={snapshot.in_flight} "
        f"hosts ready={c.hosts_ready} snoozed={c.hosts_snoozed} inactive={c.hosts_inactive} "
        f"parked={c.hosts_parked} retired={c.hosts_retired} "
        f"errors: {_counts_line(snapshot.errors)} | {format_waiting(snapshot)}"
    )


def format_summary(
    snapshot: CrawlSnapshot, *, catalogue_kept: bool = True, export: str | None = None
) -> str:
    """The end-of-crawl summary, plain text. ``catalogue_kept=False`` (``--store memory``)
    says the catalogue is gone instead of suggesting ``courtly export``; ``export`` is the
    command that reads the catalogue (default: ``courtly export --state DIR``; a crawl on
    a shared store reads it from there)."""
    c = snapshot.counts
    detail: str | None = getattr(snapshot, "stop_detail", None)
    if not catalogue_kept:
        catalogue = "not kept (--store memory keeps nothing after exit; the WARC files remain)"
    else:
        catalogue = export or f"courtly export --state {snapshot.state_dir} --format jsonl"
    lines = [
        f"crawl ended after {snapshot.elapsed_s:.1f} s: {stop_reason_words(snapshot.stop_reason)}",
        *([f"  why               {detail}"] if detail else []),
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
        f"  catalogue         {catalogue}",
    ]
    for path in snapshot.warc_files:
        lines.append(f"  WARC              {path}")
    if snapshot.stop_detail:
        lines.insert(1, f"  {snapshot.stop_detail}")
    return "\n".join(lines)


class LogProgress:
    """Plain periodic lines (for pipes, CI and log files)."""

    def __init__(
        self,
        out: TextIO | None = None,
        *,
        summary_on_close: bool = True,
        catalogue_kept: bool = True,
        export: str | None = None,
    ) -> None:
        self._out = out or sys.stderr
        self._summary_on_close = summary_on_close
        self._catalogue_kept = catalogue_kept
        self._export = export

    def update(self, snapshot: CrawlSnapshot) -> None:
        self.notice(format_line(snapshot))

    def notice(self, text: str) -> None:
        """One line of its own (none once its reader has gone: :func:`terminal_output`)."""
        with terminal_output():
            print(text, file=self._out, flush=True)

    def summary(self, snapshot: CrawlSnapshot) -> None:
        """Print the end-of-crawl summary."""
        self.notice(
            format_summary(snapshot, catalogue_kept=self._catalogue_kept, export=self._export)
        )

    def close(self, snapshot: CrawlSnapshot) -> None:
        if self._summary_on_close:
            self.summary(snapshot)


class RichProgress:
    """A live dashboard: rates, queue sizes, host states, errors by kind."""

    def __init__(
        self,
        console: Console | None = None,
        *,
        summary_on_close: bool = True,
        catalogue_kept: bool = True,
        export: str | None = None,
    ) -> None:
        self._console = console or Console(stderr=True)
        self._live = Live(console=self._console, refresh_per_second=4, transient=False)
        self._started = False
        self._summary_on_close = summary_on_close
        self._catalogue_kept = catalogue_kept
        self._export = export

    @property
    def console(self) -> Console:
        """The console the panel draws on (log lines printed there appear above it)."""
        return self._console

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
        table.add_row("why waiting", format_waiting(snapshot))
        table.add_row("statuses", _counts_line(snapshot.statuses))
        table.add_row("errors", _counts_line(snapshot.errors))
        table.add_row("skipped", _counts_line(snapshot.skipped))
        return Panel(Group(table), title="courtly", border_style="green")

    def update(self, snapshot: CrawlSnapshot) -> None:
        with terminal_output():  # a terminal that hung up: nothing more is drawn
            if not self._started:
                self._live.start()
                self._started = True
            self._live.update(self._render(snapshot))

    def notice(self, text: str) -> None:
        """A line printed above the live panel (the panel never overwrites it)."""
        with terminal_output():
            self._console.print(text, markup=False, highlight=False)

    def summary(self, snapshot: CrawlSnapshot) -> None:
        """Print the end-of-crawl summary (below the final panel)."""
        self.notice(
            format_summary(snapshot, catalogue_kept=self._catalogue_kept, export=self._export)
        )

    def close(self, snapshot: CrawlSnapshot) -> None:
        if self._started:
            with terminal_output():
                self._live.update(self._render(snapshot))
                self._live.stop()
        if self._summary_on_close:
            self.summary(snapshot)


def progress_for(
    stream: TextIO | None = None,
    *,
    summary_on_close: bool = True,
    catalogue_kept: bool = True,
    export: str | None = None,
) -> LogProgress | RichProgress:
    """A dashboard when ``stream`` (default stderr) is a terminal, plain lines otherwise
    (``catalogue_kept`` and ``export``: as :func:`format_summary` takes them)."""
    stream = stream or sys.stderr
    if stream.isatty():
        return RichProgress(
            summary_on_close=summary_on_close, catalogue_kept=catalogue_kept, export=export
        )
    return LogProgress(
        stream, summary_on_close=summary_on_close, catalogue_kept=catalogue_kept, export=export
    )

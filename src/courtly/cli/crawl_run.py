"""Running one ``courtly crawl``: the crawler (one process or partitioned), its signals
and its dashboard."""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Callable

import click

from courtly.cli.failures import os_error_text
from courtly.config import CrawlConfig
from courtly.crawl import Crawler, CrawlSnapshot
from courtly.errors import ConfigError
from courtly.event_loop import signal_handlers
from courtly.observe.attach import DashboardSpec, TeeProgress, serving
from courtly.parallel import PartitionedCrawl, claim_layout
from courtly.progress import LogProgress, RichProgress
from courtly.terminal import terminal_output

__all__ = ["run_crawl"]


async def run_crawl(
    config: CrawlConfig,
    progress: LogProgress | RichProgress | None,
    dashboard: DashboardSpec | None = None,
) -> CrawlSnapshot:
    """Run the crawl of ``config`` (one process, or :class:`PartitionedCrawl`) to its end.

    The first SIGINT/SIGTERM (or SIGHUP: see :func:`hangup`) asks it to stop (requests
    in flight finish, within ``stop_grace_s``), the second aborts it; ``dashboard`` is
    served while it runs. Its address is bound first: one that cannot be served is
    refused before the crawler writes anything (the one-process crawler opens its state
    file as it is made).
    """
    say: Callable[[str], None] = progress.notice if progress is not None else _say
    served = serving(dashboard, say) if dashboard is not None else contextlib.nullcontext()
    async with served:
        crawler = _crawler(config, progress, dashboard)
        signals_seen = 0

        def on_signal() -> None:
            nonlocal signals_seen
            signals_seen += 1
            if signals_seen == 1:
                crawler.request_stop("signal")
                text = (
                    f"stopping: finishing requests in flight, at most {config.stop_grace_s:g} "
                    "s (again to stop at once)"
                )
            else:
                crawler.abort()
                text = "stopping now: requests in flight are fetched again on resume"
            with terminal_output():  # a terminal that hung up takes no more
                say(text)

        with signal_handlers(on_signal, signal.SIGINT, signal.SIGTERM, *hangup()):
            return await crawler.run()


def hangup() -> tuple[int, ...]:
    """SIGHUP, a stop like SIGTERM (the terminal closed: an ssh session ended), unless
    the crawl was started to outlive it (``nohup``, which ignores it): then nothing."""
    if not hasattr(signal, "SIGHUP") or signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        return ()
    return (signal.SIGHUP,)


def _crawler(
    config: CrawlConfig,
    progress: LogProgress | RichProgress | None,
    dashboard: DashboardSpec | None,
) -> Crawler | PartitionedCrawl:
    """The crawler of ``config``, its progress (and the dashboard's source) attached."""
    try:
        if config.processes > 1:  # checks the shares now, the state directory's layout in run()
            level = logging.getLogger().getEffectiveLevel()
            sink = TeeProgress(progress, dashboard.source) if dashboard else progress
            return PartitionedCrawl(config, progress=sink, log_level=level)
        claim_layout(config.state_dir, 1)  # refuses a partitioned state directory
        crawler = Crawler(config, progress=progress)
        if dashboard is not None:
            dashboard.for_crawler(crawler)
        return crawler
    except OSError as error:  # before anything is crawled: the --state path is unusable
        raise ConfigError(
            f"cannot use the state directory {config.state_dir}: {os_error_text(error)}"
        ) from None


def _say(text: str) -> None:
    click.echo(text, err=True)

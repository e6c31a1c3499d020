"""Putting the dashboard beside a crawl: ``courtly crawl --dashboard [HOST:]PORT``.

A one-process crawl feeds a :class:`~courtly.observe.sources.LiveSource` from its event
bus (exact top-N over every host); a partitioned crawl's parent sees the children's
merged snapshots through its progress sink (top-N among each partition's top hosts).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from courtly.errors import ConfigError
from courtly.events import Tick
from courtly.observe.server import Dashboard
from courtly.observe.sources import LiveSource
from courtly.write_failure import os_error_text

if TYPE_CHECKING:
    from courtly.crawl import Crawler, CrawlSnapshot, ProgressSink

__all__ = ["DashboardSpec", "TeeProgress", "serving"]


class TeeProgress:
    """A progress sink that hands every snapshot to several sinks."""

    def __init__(self, *sinks: ProgressSink | None) -> None:
        self._sinks = [s for s in sinks if s is not None]

    def update(self, snapshot: CrawlSnapshot) -> None:
        for sink in self._sinks:
            sink.update(snapshot)

    def close(self, snapshot: CrawlSnapshot) -> None:
        for sink in self._sinks:
            sink.close(snapshot)


class DashboardSpec:
    """Where to serve (``host``, ``port``; 0 for a free port) and the token, if any."""

    def __init__(self, host: str, port: int, token: str | None) -> None:
        self.host, self.port, self.token = host, port, token
        self.source = LiveSource(time.time)

    def for_crawler(self, crawler: Crawler) -> None:
        """Feed the source from a one-process crawl's bus (exact top-N): its ticks only,
        so the dashboard adds nothing to the publishing of a fetch's events."""
        self.source.attach(crawler.observation.hosts)  # the source the server reads
        crawler.events.subscribe(self.source, (Tick,))


@contextlib.asynccontextmanager
async def serving(spec: DashboardSpec, say: Callable[[str], None]) -> AsyncIterator[Dashboard]:
    """Serve the dashboard for the duration of the block; says its address. An address
    that cannot be served (taken, not this machine's) is :class:`ConfigError` naming
    ``--dashboard``: it is found before the crawl writes anything."""
    dashboard = Dashboard(spec.source, spec.host, spec.port, token=spec.token)
    try:
        await dashboard.start()
    except OSError as error:
        raise ConfigError(os_error_text(error, f"--dashboard {spec.host}:{spec.port}")) from None
    say(f"dashboard: {dashboard.url}")
    try:
        yield dashboard
    finally:
        await dashboard.stop()

"""``status.json`` in the state directory, and the progress sink, as tick subscribers.

The state file is locked while a crawl runs; ``courtly status`` and
``courtly dashboard --state DIR`` read ``status.json`` instead. It is replaced whole
(write to ``status.json.tmp``, rename) at every tick, so a reader never sees half of it.
Keys: ``running``, ``frontier``, ``last_run``, ``pages_per_s``, ``in_flight``, ``config``
(as before) and ``snapshot``, the dashboard's schema (:mod:`courtly.observe.snapshot`).

``config`` lists at most :data:`LISTED_SEEDS` of the crawl's seeds and gives their
number in ``seeds_total`` (:func:`status_config`): the file is rewritten at every tick,
and a crawl of a million seeds would otherwise write 50 MB each time (0.35 s of the
event loop a tick, measured). The state file keeps every seed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from courtly.events import Event, Tick
from courtly.observe.snapshot import snapshot_json

if TYPE_CHECKING:
    from courtly.crawl import CrawlSnapshot, ProgressSink

__all__ = [
    "LISTED_SEEDS",
    "StatusFile",
    "TickToProgress",
    "last_run_record",
    "status_config",
    "status_record",
]

LISTED_SEEDS = 100
"""``status.json`` lists at most this many seeds, the first given."""


def status_config(identity: dict[str, Any], listed: int | None = LISTED_SEEDS) -> dict[str, Any]:
    """The crawl's configuration as ``status.json`` holds it: ``seeds`` cut to its first
    ``listed`` (``None``: all), and ``seeds_total``, their number (the list may be cut)."""
    seeds = identity.get("seeds")
    if not isinstance(seeds, list):
        return identity
    return {**identity, "seeds": seeds[:listed], "seeds_total": len(seeds)}


def last_run_record(snapshot: CrawlSnapshot, now: float) -> dict[str, Any]:
    """The run's figures as stored (``last_run`` blob) and shown by ``courtly status``."""
    return {
        "updated_at": now,
        "pages": snapshot.pages,
        "robots_fetches": snapshot.robots_fetches,
        "bytes_received": snapshot.bytes_received,
        "errors": snapshot.errors,
        "error_examples": snapshot.error_examples,
        "skipped": snapshot.skipped,
        "finished": snapshot.finished,
        "stop_reason": snapshot.stop_reason,
        "stop_detail": snapshot.stop_detail,
        "hosts_retired": snapshot.hosts_retired,
        "fetchers": snapshot.fetchers,
        "dispatch": snapshot.dispatch,
    }


def status_record(snapshot: CrawlSnapshot, identity: dict[str, Any], now: float) -> dict[str, Any]:
    """The whole ``status.json`` object."""
    return {
        "running": not snapshot.finished,
        "frontier": dataclasses.asdict(snapshot.counts),
        "last_run": last_run_record(snapshot, now),
        "pages_per_s": snapshot.pages_per_s,
        "in_flight": snapshot.in_flight,
        "config": status_config(identity),
        "snapshot": snapshot_json(snapshot, now),
    }


class StatusFile:
    """Writes ``status.json`` at every :class:`~courtly.events.Tick`.

    The configuration does not change while the crawl runs, so it is encoded once
    (:func:`status_config`) and spliced into each tick's JSON; the file holds the same
    object as :func:`status_record` gives.
    """

    def __init__(self, path: Path, identity: dict[str, Any], now: Callable[[], float]) -> None:
        self._path = path
        self._now = now
        self.configure(identity)

    def configure(self, identity: dict[str, Any]) -> None:
        """The configuration to write from now on: the crawl's, once its start has read
        the seeds the store holds (a resume gives none, or only some, on its command line)."""
        self._config_json: str = json.dumps(status_config(identity))

    def notify(self, event: Event) -> None:
        if isinstance(event, Tick):
            self.write(event.snapshot)

    def write(self, snapshot: CrawlSnapshot) -> None:
        data = status_record(snapshot, {}, self._now())
        del data["config"]
        text = json.dumps(data)
        text = f'{text[:-1]}, "config": {self._config_json}}}'
        with contextlib.suppress(OSError):
            tmp = self._path.with_name(self._path.name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(self._path)


class TickToProgress:
    """Hands each running tick to a progress sink (``close`` stays the crawl's call)."""

    def __init__(self, progress: ProgressSink) -> None:
        self._progress = progress

    def notify(self, event: Event) -> None:
        if isinstance(event, Tick) and not event.snapshot.finished:
            self._progress.update(event.snapshot)

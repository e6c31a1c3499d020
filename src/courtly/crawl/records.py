"""What a crawl hands out: fetched pages, snapshots, and the seams it is given.

:class:`Page` goes to ``on_page``; :class:`CrawlSnapshot` to progress, ``status.json`` and
the final summary; :class:`ProgressSink` and :class:`Partition` are the seams a caller
plugs in (a terminal dashboard, a host-partitioned crawl).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from courtly.frontier.records import FrontierCounts, QueuedUrl

if TYPE_CHECKING:
    from courtly.crawl.crawler import Crawler

__all__ = ["CrawlSnapshot", "OnPage", "Page", "Partition", "ProgressSink"]


@dataclass(frozen=True, slots=True)
class Page:
    """A fetched page, as handed to ``on_page``. ``links`` are the canonical URLs found."""

    url: str
    status: int
    depth: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    links: tuple[str, ...]
    fetched_at: float
    elapsed_s: float
    truncated: bool


@dataclass(frozen=True, slots=True)
class CrawlSnapshot:
    """What progress and the final summary show."""

    elapsed_s: float
    pages: int
    pages_per_s: float
    robots_fetches: int
    bytes_received: int
    redirects: int
    in_flight: int
    counts: FrontierCounts
    errors: dict[str, int]
    skipped: dict[str, int]
    statuses: dict[int, int]
    warc_files: tuple[str, ...]
    state_dir: str
    finished: bool
    stop_reason: str | None
    """See :mod:`courtly.stop`: done, nothing_fetchable, max_time, max_pages, requested,
    signal, aborted (``None`` while running)."""
    stop_detail: str | None = None
    """Why, in words, when the reason needs them (``nothing_fetchable``: the reason every
    host was retired and the flag that changes it)."""
    hosts_retired: dict[str, int] = field(default_factory=dict)
    """Hosts retired in this run, by reason (blocked, dead, failing, budget)."""
    fetchers: int = 0
    """Fetchers allowed in flight now (autoscaled, or pinned by ``concurrency``)."""
    observed: dict[str, Any] = field(default_factory=dict)
    """The observation at the last tick (:mod:`courtly.observe.observation`): verdict,
    hosts by delay source, counters, histograms, top hosts. Empty before the first tick."""
    resumed: bool = False
    """This run resumed a crawl its state directory already held."""
    others_fetched: bool = False
    """A shared crawl (Redis) that this process ended with no page of its own: another
    process of the crawl fetched pages, so the crawl did not come to nothing (exit 0, not
    5). Always ``False`` for a crawl of its own."""
    error_examples: dict[str, str] = field(default_factory=dict)
    """The first message of each kind of error in ``errors`` that has one (its URL and
    why, in words: ``connect``, ``dns``, ``robots_unreachable``...)."""
    dispatch: dict[str, float] = field(default_factory=dict)
    """How precisely the dispatcher started due hosts' requests
    (:meth:`courtly.crawl.dispatch.ReadyWaits.summary`): requests measured, those that
    waited while a fetcher could have served them, and that waiting summed
    (fetcher-seconds; ``fetchers_idle_while_ready_leased_s``: its part after the lease)."""


class ProgressSink(Protocol):
    """Where progress goes: a terminal dashboard, log lines, or nothing."""

    def update(self, snapshot: CrawlSnapshot) -> None: ...

    def close(self, snapshot: CrawlSnapshot) -> None: ...


class Partition(Protocol):
    """This crawler's share of a host-partitioned crawl (see :mod:`courtly.parallel`).

    With a partition, the crawler queues only URLs whose host key it ``owns``;
    the others go to ``forward``, which must make them durable (they survive a
    crash once it returns) before the completion that found them may commit.
    ``serve`` runs beside the workers for the whole crawl (it feeds URLs forwarded
    here to :meth:`Crawler.add_forwarded`) and is cancelled when they stop. An
    empty frontier does not end a partitioned crawl: only :meth:`Crawler.request_stop`
    does. ``primary`` is true for exactly one partition (it reports invalid seeds).
    """

    @property
    def primary(self) -> bool: ...

    def owns(self, host_key: str) -> bool: ...

    async def forward(
        self,
        entries: Sequence[QueuedUrl],
        referrer: str | None,
        cash: Sequence[float] | None = None,
    ) -> None:
        """Make ``entries`` durable for their owners. With ``cash`` (one share of the
        referrer's OPIC cash per entry) each entry is one link read on ``referrer``,
        forwarded however often its URL was: the owner counts it (see
        :meth:`courtly.crawl.links.LinkAdmission.credit`)."""
        ...

    async def serve(self, crawler: Crawler) -> None: ...


OnPage = Callable[[Page], Awaitable[None] | None]
"""``on_page``: sync or async, sees every fetched page."""

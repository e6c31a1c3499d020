"""The crawl: frontier + robots.txt + fetcher + parser + archive, wired in one place.

Data flow of one lease (see docs/architecture.md for the whole picture):

1. the dispatcher leases the earliest ready hosts, up to the fetcher count (autoscaled,
   :mod:`courtly.autoscale`), one request in flight per host, a task per lease;
2. if the host's robots.txt is unknown or stale, *that* lease fetches it (it
   counts against the host's politeness), the decision is cached, and the URL is
   released back to the head of its queue;
3. a URL robots.txt disallows completes with no request (catalogue: ``robots``);
   while robots.txt is unreachable the host is held back, its URLs kept;
4. otherwise the page is fetched (one GET, no redirects followed), archived to
   WARC, parsed for links (HTML only; nofollow honoured) or sitemap entries;
   redirects become new URLs; every new URL is canonicalised, scoped, trap-checked;
5. ``complete`` stores, atomically, the host's new politeness state, the
   discovered URLs and the catalogue entries; the host re-enters the ready heap
   at end of response + politeness delay.

:func:`build_crawler` is the one wiring function; :class:`Crawler` owns no
globals and takes its clock, store and fetcher as arguments (tests inject fakes).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import inspect
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import xxhash

from courtly.archive.catalogue import CatalogueEntry, fail_reason_for_status
from courtly.archive.warc import WarcWriter
from courtly.autoscale import AutoscaleConfig, Autoscaler
from courtly.clock import Clock, SystemClock
from courtly.config import CrawlConfig, shorten
from courtly.errors import FetchError, InvalidURL, StateError
from courtly.events import EventBus, FetchDone, RobotsResult, Tick
from courtly.fetch.config import FetchConfig
from courtly.fetch.http_fetcher import HttpFetcher
from courtly.fetch.ip_gate import IpGate
from courtly.fetch.machine_ip_gate import MachineIpGate
from courtly.fetch.records import Fetcher, FetchResult
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import FrontierConfig, QueueConfig, default_inactive_after_s
from courtly.frontier.frontier import Candidate, Frontier
from courtly.frontier.importance import Importance
from courtly.frontier.learnt import load_learnt, save_learnt
from courtly.frontier.politeness import PolitenessConfig, parse_retry_after, politeness_delay_s
from courtly.frontier.records import (
    AddStatus,
    FrontierCounts,
    Lease,
    Outcome,
    OutcomeKind,
    QueuedUrl,
)
from courtly.frontier.seen import BloomSeenSet
from courtly.frontier.traps import WalkGuard
from courtly.observe.observation import Observation
from courtly.observe.status_file import StatusFile, TickToProgress, last_run_record
from courtly.page_budget import FetchClaims, LocalPageBudget, PageBudget
from courtly.parse.links import extract_links
from courtly.parse.sitemaps import parse_sitemap
from courtly.recrawl import Recrawl
from courtly.robots import (
    RobotsCache,
    RobotsDecision,
    authority_of,
    fetch_robots,
    product_token,
    robots_url_for,
)
from courtly.robots.persist import outcome_from_bytes, outcome_to_bytes
from courtly.stop import ending
from courtly.store.base import FrontierStore, QueuedCounts
from courtly.store.memory import MemoryStore
from courtly.store.redis.address import is_redis_url
from courtly.url import (
    DomainResolver,
    JoinCache,
    Scope,
    TrapConfig,
    UrlJoiner,
    canonicalize,
    host_key,
    host_of,
    trap_reason,
)

__all__ = [
    "CrawlSnapshot",
    "CrawlStats",
    "Crawler",
    "Page",
    "Partition",
    "ProgressSink",
    "build_crawler",
    "open_store",
]

log = logging.getLogger("courtly.crawl")

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CLOSE_RESERVE_S = 0.5
"""The part of the stop grace kept for closing the store, the archive and the connections:
after a stop, requests in flight get ``config.stop_grace_s`` less this, then are abandoned,
so ``run`` returns within the grace of the stop (of ``max_time_s``)."""
_IDLE_S = 0.5
"""Longest the dispatcher waits without a completion, a due host or a new fetcher count."""
STATUS_FILE = "status.json"
"""Written to the state directory with every progress tick: what ``courtly status``
shows while the crawl holds its state file."""
_MAX_SITEMAPS = 1_000


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


@dataclass(slots=True)
class CrawlStats:
    """Live counters of one run (mutable; read a :class:`CrawlSnapshot` for a stable view)."""

    started_at: float = 0.0
    pages: int = 0
    """Pages fetched and completed (a 429/503 that is retried is counted in ``retries``)."""
    robots_fetches: int = 0
    bytes_received: int = 0
    redirects: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    fenced: int = 0
    retries: int = 0


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

    async def forward(self, entries: Sequence[QueuedUrl], referrer: str | None) -> None: ...

    async def serve(self, crawler: Crawler) -> None: ...


OnPage = Callable[[Page], Awaitable[None] | None]


def open_store(config: CrawlConfig, queues: QueueConfig) -> FrontierStore:
    """The frontier store a config asks for: SQLite in ``state_dir`` (default), memory,
    or the shared Redis crawl ``crawl_name`` at a ``redis://`` or ``redis+cluster://`` URL."""
    if config.store == "memory":
        return MemoryStore(queues, seen=BloomSeenSet(capacity=1_000_000))
    if is_redis_url(config.store):
        from courtly.store.redis import RedisStore  # the client library loads only when used
        from courtly.store.redis.address import connect

        assert config.crawl_name is not None  # CrawlConfig checks it
        return RedisStore(connect(config.store), config.crawl_name, queues)
    from courtly.store.sqlite import SqliteStore  # the SQLite backend is optional at import

    config.state_dir.mkdir(parents=True, exist_ok=True)
    # After a crash, hosts in flight (or completed in the last commit window) have no
    # stored next-allowed time for their last request: hold every host for one
    # minimum delay from the moment of resuming, which is after that request ended.
    crash = config.durability == "crash"
    return SqliteStore(
        config.state_dir / "frontier.sqlite3",
        queues,
        resume_guard_s=config.min_delay_s,
        commit_interval_s=0.0 if crash else 0.2,
        synchronous="normal" if crash else "full",
    )


def _is_shared(store: FrontierStore) -> bool:
    """True for a store that other crawl processes use at the same time (Redis)."""
    from courtly.store.redis import RedisStore

    return isinstance(store, RedisStore)


def _shared_ip_gate(store: FrontierStore, config: CrawlConfig) -> IpGate | None:
    """The per-IP cap across every process of a shared (Redis) crawl; ``None`` otherwise."""
    from courtly.store.redis import RedisStore

    if not isinstance(store, RedisStore):
        return None
    return store.ip_gate(config.per_ip, config.total_timeout_s + config.connect_timeout_s + 10.0)


def build_crawler(
    config: CrawlConfig,
    *,
    on_page: OnPage | None = None,
    clock: Clock | None = None,
    store: FrontierStore | None = None,
    fetcher: Fetcher | None = None,
    progress: ProgressSink | None = None,
    partition: Partition | None = None,
    politeness: PolitenessConfig | None = None,
    autoscale: AutoscaleConfig | None = None,
    stop_grace_s: float | None = None,
) -> Crawler:
    """Wire a crawler from a config; every collaborator can be injected."""
    return Crawler(
        config,
        on_page=on_page,
        clock=clock,
        store=store,
        fetcher=fetcher,
        progress=progress,
        partition=partition,
        politeness=politeness,
        autoscale=autoscale,
        stop_grace_s=stop_grace_s,
    )


def frontier_config(config: CrawlConfig) -> FrontierConfig:
    """The frontier settings implied by a crawl config."""
    return FrontierConfig(
        queues=QueueConfig(
            max_back_queues=config.effective_back_queues(),
            inactive_after_s=default_inactive_after_s(config.min_delay_s),
        ),
        politeness=PolitenessConfig(
            min_delay_s=config.min_delay_s,
            delay_factor=config.delay_factor,
            max_delay_s=config.max_delay_s,
            max_attempts=config.max_attempts,
        ),
        budget=BudgetConfig(
            max_queued_per_host=config.max_queued_per_host,
            max_requests_per_host=config.max_requests_per_host,
        ),
        lease_ttl_s=config.lease_ttl_s,
        params=config.param_policy(),
    )


class Crawler:
    """A polite crawl of ``config.seeds`` within ``config.scope``.

    ``await crawler.run()`` crawls until the frontier is empty, ``max_pages`` or
    ``max_time_s`` is reached, or :meth:`request_stop` is called, and returns
    the final :class:`CrawlSnapshot`. ``on_page`` (sync or async) sees every
    fetched page. A state directory that already holds a crawl is resumed.

    ``politeness`` replaces the politeness settings derived from ``config`` (tests
    use short retry and back-off times); ``autoscale`` the fetcher-count policy
    derived from ``config.concurrency``; ``stop_grace_s`` the grace after a stop (default:
    ``config.stop_grace_s``). ``machine_gate`` (one process of a partitioned crawl) keeps
    the per-IP cap over all the crawl's processes: this one may then use up to its
    ``per_ip`` slots of an address, not only ``config.per_ip``, its share.
    """

    def __init__(
        self,
        config: CrawlConfig,
        *,
        on_page: OnPage | None = None,
        clock: Clock | None = None,
        store: FrontierStore | None = None,
        fetcher: Fetcher | None = None,
        progress: ProgressSink | None = None,
        partition: Partition | None = None,
        politeness: PolitenessConfig | None = None,
        autoscale: AutoscaleConfig | None = None,
        stop_grace_s: float | None = None,
        page_budget: PageBudget | None = None,
        machine_gate: MachineIpGate | None = None,
        events: EventBus | None = None,
    ) -> None:
        self.config = config
        self.events = events if events is not None else EventBus()
        """What happens in the crawl is published here (see :mod:`courtly.events`)."""
        if page_budget is None and config.max_pages is not None:
            page_budget = LocalPageBudget(config.max_pages)
        self._claims = FetchClaims(page_budget)
        self._partition = partition
        self._machine_gate = machine_gate
        self._clock: Clock = clock or SystemClock()
        fconfig = frontier_config(config)
        if politeness is not None:
            fconfig = dataclasses.replace(fconfig, politeness=politeness)
        self._store = store if store is not None else open_store(config, fconfig.queues)
        self.frontier = Frontier(
            self._store,
            fconfig,
            clock=self._clock,
            host_key=_host_key_function(config.host_key),
            events=self.events,
        )
        store_ = self._store
        self.observation = Observation(
            store_.queued_of if isinstance(store_, QueuedCounts) else None
        )
        self.events.subscribe(self.observation)
        self.events.subscribe(
            StatusFile(config.state_dir / STATUS_FILE, config.identity(), self._clock.now)
        )
        if progress is not None:
            self.events.subscribe(TickToProgress(progress))
        self._observed: dict[str, Any] = {}
        self.resumed = False
        self._fetcher_given = fetcher
        self._fetcher: Fetcher | None = fetcher
        self._robots_fetcher: Fetcher | None = fetcher  # robots.txt: a shorter timeout
        self._http: HttpFetcher | None = None  # the fetcher built here, if any
        self._on_page = on_page
        self._progress = progress
        self._ua = config.user_agent
        self._token = product_token(config.user_agent)
        retry_s = fconfig.politeness.robots_retry_s
        self._robots = RobotsCache(
            ttl_s=config.robots_ttl_s, retry_initial_s=retry_s, retry_max_s=max(3_600.0, retry_s)
        )
        self._robots_restored: set[tuple[str, str, int]] = set()
        # a shared store's robots.txt cache is filled by every process: look again on a miss
        self._robots_shared = _is_shared(self._store)
        self._traps = TrapConfig()
        self._walks = WalkGuard()  # link chains walking one URL template (calendars...)
        self._importance = Importance()  # OPIC cash, in-links, host quality of new URLs
        self._params = fconfig.params  # tracking parameters dropped from every URL
        self._join_cache = JoinCache(params=self._params)  # sibling pages repeat their hrefs
        self._scope: Scope | None = None
        self._sitemaps: set[str] = set()
        self._warc: WarcWriter | None = None
        self.stats = CrawlStats()
        self._scaler = Autoscaler(
            autoscale if autoscale is not None else AutoscaleConfig.auto(config.concurrency),
            self._clock,
        )
        self._stop_grace_s = config.stop_grace_s if stop_grace_s is None else stop_grace_s
        self._in_flight = 0
        self._stopping = False
        self._stop_reason: str | None = None
        self._stop_detail: str | None = None
        self._stop_at: float | None = None
        self._finished = False
        self._ended = False
        self._wake = asyncio.Event()
        self._fetches: set[asyncio.Task[None]] = set()
        self._lease_of: dict[asyncio.Task[None], Lease] = {}
        self.config_changes: list[str] = []
        self.recrawl: Recrawl | None = None
        if config.recrawl:
            self.recrawl = Recrawl(config, self._store, self.frontier, self._clock)

    # -- lifecycle ------------------------------------------------------------

    def request_stop(self, reason: str = "requested") -> None:
        """Stop leasing; requests in flight finish, or are abandoned once the stop grace
        (``config.stop_grace_s``, 5 s) has passed (their leases stay void: the URLs are
        fetched again on resume)."""
        if not self._stopping:
            self._stopping = True
            self._stop_reason = reason
            self._stop_at = self._clock.now()
        self._wake.set()

    def _cancel_fetches(self) -> None:
        for task in self._fetches:
            task.cancel()

    def abort(self) -> None:
        """Stop now: cancel requests in flight (their leases stay void; nothing is lost)."""
        self.request_stop("aborted")
        self._cancel_fetches()

    @property
    def fetchers(self) -> int:
        """Fetchers allowed in flight now (see :mod:`courtly.autoscale`)."""
        return self._scaler.desired

    async def run(self) -> CrawlSnapshot:
        """Crawl; see the class doc. Returns the final snapshot.

        With ``max_time_s``, returns within ``max_time_s`` of the call when nothing is
        in flight at the deadline, and within ``max_time_s`` + the stop grace otherwise.
        """
        self.stats.started_at = self._clock.now()
        self._warc = WarcWriter.open_existing(
            self.config.state_dir / "warc",
            gzip_level=self.config.warc_gzip_level,
            clock=self._clock,
            warcinfo_fields={"operator-agent": self._ua},
        )
        http: HttpFetcher | None = None
        if self._fetcher is None:
            http = HttpFetcher(
                FetchConfig(
                    user_agent=self._ua,
                    connect_timeout_s=self.config.connect_timeout_s,
                    total_timeout_s=self.config.total_timeout_s,
                    max_body_bytes=self.config.max_body_bytes,
                    max_decoded_bytes=4 * self.config.max_body_bytes,
                    per_ip_concurrency=self._local_per_ip(),
                    allow_private_networks=self.config.allow_private_networks,
                    hosts_file=self.config.hosts_file,
                ),
                self._clock,
                ip_gate=self._machine_gate or _shared_ip_gate(self._store, self.config),
                on_ip_wait=self._wake.set,
            )
            self._fetcher = http
            self._robots_fetcher = http.limited(http.config.robots_timeout_s)
            self._http = http
        try:
            async with asyncio.TaskGroup() as group:
                helpers: list[asyncio.Task[None]] = []
                if self.config.max_time_s is not None:
                    at = self.stats.started_at + self.config.max_time_s
                    helpers.append(group.create_task(self._deadline(at)))
                await self._start()
                helpers.append(group.create_task(self._reporter()))
                helpers.append(
                    group.create_task(self._scaler.run(lambda: self._in_flight, self._wake.set))
                )
                if self._partition is not None:
                    helpers.append(group.create_task(self._partition.serve(self)))
                try:
                    await self._dispatcher(group)
                    await self._drain()
                finally:
                    self._ended = True
                    for task in helpers:
                        task.cancel()
            snapshot = await self._tick()
            return snapshot
        finally:
            if http is not None:
                await http.aclose()
            if self._warc is not None:
                self._warc.close()
            if self.recrawl is not None:
                with contextlib.suppress(Exception):
                    await self.recrawl.save(force=True)
            await self.frontier.aclose()
            if self._progress is not None:
                with contextlib.suppress(Exception):
                    self._progress.close(self._final or await self._safe_snapshot())

    _final: CrawlSnapshot | None = None

    async def _safe_snapshot(self) -> CrawlSnapshot:
        counts = FrontierCounts(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        return self._make_snapshot(counts)

    async def _start(self) -> None:
        previous = await self._store.get_blob("crawl", "config")
        self.resumed = previous is not None
        identity = self.config.identity()
        stored_seeds: list[str] = []
        if previous is not None:
            try:
                old = json.loads(previous)
            except ValueError:
                raise StateError("the stored crawl configuration is unreadable") from None
            stored_seeds = list(old.get("seeds", []))
            for key, value in identity.items():
                if key == "seeds":
                    continue
                if key in old and old[key] != value:
                    self.config_changes.append(f"{key}: {old[key]!r} -> {value!r}")
            for change in self.config_changes:
                log.warning("resuming with a changed configuration: %s", change)
        seeds = list(dict.fromkeys([*_crawlable(stored_seeds, self.stats), *self.config.seeds]))
        if not seeds:
            raise StateError(
                f"nothing to crawl: no seeds given and no crawl in {self.config.state_dir}"
            )
        identity["seeds"] = seeds
        await self._store.put_blob("crawl", "config", json.dumps(identity).encode())
        self._scope = Scope.from_seeds(
            seeds,
            self.config.scope,
            include=self.config.include,
            exclude=self.config.exclude,
            max_depth=self.config.max_depth,
        )
        candidates = [Candidate(s, is_seed=True) for s in seeds]
        if self._partition is None:  # walk budgets and host quality, kept across a resume
            await load_learnt(self._store, self._walks, self._importance)
        for seed in seeds:
            with contextlib.suppress(InvalidURL):
                self._importance.seed(canonicalize(seed, params=self._params))
        if self._partition is None:
            statuses = await self.frontier.add_many(candidates)
            invalid = [s for s, st in zip(seeds, statuses, strict=True) if st is AddStatus.INVALID]
        else:  # each partition queues the seeds it owns
            entries, bad = self.frontier.prepare(candidates)
            await self.frontier.add_queued([e for e in entries if self._partition.owns(e.host_key)])
            invalid = [seeds[i] for i in bad] if self._partition.primary else []
        if self.recrawl is not None:
            await self.recrawl.start()
        await self._store.flush()
        for seed in invalid:
            self.stats.skipped["invalid_seed"] += 1
            log.warning("seed %r is not a crawlable URL", seed)

    async def _deadline(self, at: float) -> None:
        """Request the ``max_time`` stop at ``at`` (epoch seconds on the crawl's clock)."""
        while (left := at - self._clock.now()) > 0:
            await self._clock.sleep(left)
        self.request_stop("max_time")

    async def _reporter(self) -> None:
        while True:
            await asyncio.sleep(self.config.progress_interval_s)
            await self._tick()
            await self._store.flush()

    async def _tick(self) -> CrawlSnapshot:
        """Observe, snapshot, publish :class:`~courtly.events.Tick` (progress and
        ``status.json`` subscribe to it) and store the run's figures."""
        counts = await self.frontier.counts()
        self._observed = self.observation.summary(self._clock.now(), counts)
        snapshot = self._make_snapshot(counts)
        self.events.publish(Tick(snapshot))
        await self._save_stats(snapshot)
        return snapshot

    async def _save_stats(self, snapshot: CrawlSnapshot) -> None:
        self._final = snapshot if snapshot.finished else self._final
        data = last_run_record(snapshot, self._clock.now())
        with contextlib.suppress(Exception):
            await self._store.put_blob("crawl", "last_run", json.dumps(data).encode())
            if self._partition is None:
                await save_learnt(self._store, self._walks, self._importance)

    async def snapshot(self) -> CrawlSnapshot:
        """Counters and frontier sizes now."""
        return self._make_snapshot(await self.frontier.counts())

    def _make_snapshot(self, counts: FrontierCounts) -> CrawlSnapshot:
        elapsed = max(1e-9, self._clock.now() - self.stats.started_at)
        warc_files: tuple[str, ...] = ()
        if self._warc is not None:
            warc_files = tuple(str(p) for p in self._warc.existing_files())
        done = self._finished or self._ended
        return CrawlSnapshot(
            elapsed_s=elapsed,
            pages=self.stats.pages,
            pages_per_s=self.stats.pages / elapsed,
            robots_fetches=self.stats.robots_fetches,
            bytes_received=self.stats.bytes_received,
            redirects=self.stats.redirects,
            in_flight=self._in_flight,
            counts=counts,
            errors=dict(self.stats.errors),
            skipped=dict(self.stats.skipped),
            statuses=dict(self.stats.statuses),
            warc_files=warc_files,
            state_dir=str(self.config.state_dir),
            finished=done,
            stop_reason=self._stop_reason or ("done" if self._finished else None),
            stop_detail=self._stop_detail,
            hosts_retired=dict(self.frontier.retired),
            fetchers=self._scaler.desired,
            observed=self._observed,
            resumed=self.resumed,
        )

    # -- workers --------------------------------------------------------------

    async def _dispatcher(self, group: asyncio.TaskGroup) -> None:
        """Lease up to ``desired − busy`` ready hosts and start a fetch for each.

        *Busy* fetches are those in flight less those waiting for a slot of their
        address (per-IP cap): a fetch parked behind a slow or hanging request to its
        address does not keep a ready host on another address waiting. The fetcher
        wakes the dispatcher when a fetch starts to wait so.

        One task leases for all fetchers, so a completion or a host coming due wakes
        one task, not every idle fetcher (no thundering herd on the frontier). It
        waits only when every allowed fetcher is busy or no host is ready, and then
        wakes for a completion, a forwarded URL, a larger fetcher count, the next
        host's due time, or a stop. Returns when stopping; the fetches it started
        may still be in flight (see :meth:`_drain`).
        """
        budget = self._claims.budget
        scaler = self._scaler
        while not self._stopping:
            # Cleared before looking, so a completion from here on wakes the wait below.
            self._wake.clear()
            if self.recrawl is not None:  # due URLs back into the frontier, within the share
                await self.recrawl.feed(self.frontier.config.budget)
            free = scaler.desired - self._in_flight + self._waiting_for_ip()
            if budget is not None and free > 0:
                if budget.spent():
                    # Every page is made; what is still in flight holds no unit (robots.txt
                    # fetches): the stop abandons it at once (see _drain).
                    self.request_stop("max_pages")
                    break
                # each fetch started holds a unit of --max-pages until it ends
                free = budget.claim(free)
            if free <= 0:
                await self._idle(_IDLE_S)
                continue
            batch = await self.frontier.lease(free)
            if budget is not None:
                budget.settle(free - len(batch.leases), 0)
            if self._stopping:  # the stop came while leasing: start nothing more
                for lease in batch.leases:
                    await self.frontier.release(lease)
                if budget is not None:
                    budget.settle(len(batch.leases), 0)
                break
            if len(batch.leases) >= free:
                scaler.note_capped()
            for lease in batch.leases:
                self._in_flight += 1
                task = group.create_task(self._process(lease))
                self._fetches.add(task)
                self._lease_of[task] = lease
                self._claims.hold(task)
                task.add_done_callback(self._fetch_done)
            if batch.leases:
                continue
            if (
                batch.next_ready_at is None
                and self._in_flight == 0
                and self._partition is None
                and self.recrawl is None  # a recrawl ends only by a signal or --max-time
            ):
                counts = await self.frontier.counts()
                if counts.queued == 0 and counts.leased == 0:
                    self._finished = True
                    reason, self._stop_detail = ending(self.stats.pages, self.frontier.retired)
                    if self._stop_detail is not None:
                        log.warning("%s", self._stop_detail)
                    self.request_stop(reason)
                    break
            wait_s = _IDLE_S
            if batch.next_ready_at is not None:
                wait_s = min(wait_s, max(0.0, batch.next_ready_at - self._clock.now()))
            await self._idle(wait_s)

    def _local_per_ip(self) -> int:
        """Requests this process may have in flight to one address: the whole cap when a
        machine gate keeps the sum over the processes within it, else its share."""
        if self._machine_gate is not None:
            return self._machine_gate.per_ip
        return self.config.per_ip

    def _waiting_for_ip(self) -> int:
        """Fetches waiting for a slot of their address: they hold a lease but no fetcher
        (no connection, no CPU), so they don't keep another ready host waiting."""
        return self._http.waiting_for_ip if self._http is not None else 0

    def _fetch_done(self, task: asyncio.Task[None]) -> None:
        """A fetch task ended (done, failed, or cancelled even before it began): its slot
        is free. The set, the count and the wake-up change together."""
        self._fetches.discard(task)
        self._in_flight -= 1
        self._lease_of.pop(task, None)
        self._claims.ended(task)
        self._wake.set()

    async def _drain(self) -> None:
        """Wait for the fetches in flight; abandon them when the stop grace runs out, and
        at once those that can make no page when ``--max-pages`` stopped the crawl (a
        robots.txt fetch). An abandoned fetch's lease is released: its URL is at the head
        of its queue again, for this store's next run."""
        if self._stop_reason == "max_pages":
            await self._abandon([t for t in self._fetches if not self._claims.holds(t)])
        while self._fetches:
            stop_at = self._stop_at if self._stop_at is not None else self._clock.now()
            left = stop_at + self._stop_grace_s - _CLOSE_RESERVE_S - self._clock.now()
            if left <= 0:
                await self._abandon(list(self._fetches))
                return
            self._wake.clear()
            await self._idle(left)

    async def _abandon(self, fetches: Sequence[asyncio.Task[None]]) -> None:
        """Cancel ``fetches`` and release their leases. The host waits the gap after the
        abandoned request as after any (a store shared with other crawlers, such as
        Redis, lets them lease it again at once otherwise)."""
        leases = [self._lease_of[t] for t in fetches if t in self._lease_of]
        for task in fetches:
            task.cancel()
        await asyncio.gather(*fetches, return_exceptions=True)
        now = self._clock.now()
        cfg = self.frontier.config.politeness
        for lease in leases:
            host = lease.host
            gap = politeness_delay_s(now - lease.leased_at, host.crawl_delay_s, host.backoff_s, cfg)
            with contextlib.suppress(Exception):  # fenced if it had ended: nothing to do
                await self.frontier.release(lease, Outcome.deferred(now, gap))

    async def _idle(self, wait_s: float) -> None:
        """Wait ``wait_s`` seconds on the crawl's clock, or less if ``_wake`` is set."""
        if self._wake.is_set():
            return
        if type(self._clock) is SystemClock:
            # The system clock sleeps on the loop's timer: one timeout, no extra tasks.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(wait_s, 0.001)):
                    await self._wake.wait()
            return
        waiter = asyncio.ensure_future(self._wake.wait())
        sleeper = asyncio.ensure_future(self._clock.sleep(wait_s))
        try:
            await asyncio.wait((waiter, sleeper), return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            sleeper.cancel()

    async def _process(self, lease: Lease) -> None:
        authority = authority_of(lease.url)
        decision = self._robots.lookup(authority, self._clock.now())
        if decision is None and (self._robots_shared or authority not in self._robots_restored):
            decision = await self._restore_robots(authority)
        if decision is None:
            # no page under this lease: its unit of --max-pages serves another host now
            if self._claims.give_back(asyncio.current_task()):
                self._wake.set()
            await self._fetch_robots(lease, authority)
            return
        self.events.publish(RobotsResult(lease.leased_at, lease.host_key, decision.kind, False))
        if decision.kind == "unreachable":
            # robots.txt unreachable: disallow all *for now*; keep the URLs, hold the host.
            now = self._clock.now()
            wait_s = max(0.0, decision.valid_until_at - now)
            await self.frontier.release(lease, Outcome.deferred(now, wait_s))
            return
        if not decision.allowed(lease.url, self._ua):
            log.info("%s disallowed by robots.txt", lease.url)
            self.stats.skipped["robots"] += 1
            entry = CatalogueEntry(lease.url, depth=lease.depth, skip_reason="robots")
            await self._complete(lease, Outcome.no_request(self._clock.now()), (), (entry,))
            return
        await self._fetch_page(lease, decision)

    async def _fetch_robots(self, lease: Lease, authority: tuple[str, str, int]) -> None:
        assert self._robots_fetcher is not None
        politeness = self.frontier.config.politeness
        paced = _PacedFetcher(self._robots_fetcher, self._clock, politeness)
        outcome = await fetch_robots(paced, robots_url_for(lease.url))
        self.stats.robots_fetches += 1
        for result in outcome.results:
            self._archive(result)
        now = self._clock.now()
        decision = self._robots.store(authority, outcome, now)
        answer = "blocked" if outcome.error_kind == "blocked" else decision.kind
        self.events.publish(RobotsResult(now, lease.host_key, answer, True))
        saved = outcome_to_bytes(outcome, now)
        if saved is not None:
            await self._store.put_blob("robots", robots_url_for(lease.url), saved)
        if outcome.results:
            last = outcome.results[-1]
            started = outcome.results[0].started_at
            # The end of the last request, a failed hop after the last response included.
            ended = paced.ended_at if paced.ended_at is not None else last.ended_at
            retry = parse_retry_after(last.header("Retry-After"), ended)
            crawl_delay = decision.crawl_delay_s(self._ua)
            if outcome.kind == "unreachable" and last.status < 500 and last.status != 429:
                kind = OutcomeKind.SERVER_ERROR  # e.g. a truncated body
                result_outcome = Outcome(kind, started, ended, last.status, retry, crawl_delay)
            else:
                result_outcome = Outcome.from_status(
                    last.status, started, ended, retry_after_s=retry, crawl_delay_s=crawl_delay
                )
        elif outcome.error_kind == "blocked":  # no request to this host can ever be made
            self.stats.errors["robots_blocked"] += 1
            result_outcome = Outcome(OutcomeKind.BLOCKED, now, now)
        else:
            self.stats.errors["robots_unreachable"] += 1
            result_outcome = Outcome(OutcomeKind.NETWORK_ERROR, now, now)
        await self.frontier.release(lease, result_outcome)
        if result_outcome.kind is OutcomeKind.THROTTLED:
            await self._store.flush()  # keep the back-off across a crash (see _fetch_page)
        if self.config.follow_sitemaps and outcome.kind == "ok":
            await self._add_sitemaps(decision, lease.url)

    async def _restore_robots(self, authority: tuple[str, str, int]) -> RobotsDecision | None:
        """The robots.txt decision a previous run stored for ``authority``, if still fresh."""
        self._robots_restored.add(authority)
        data = await self._store.get_blob("robots", robots_url_for(authority))
        if data is None:
            return None
        try:
            outcome, fetched_at = outcome_from_bytes(data)
        except StateError as error:
            log.warning("%s", error)
            return None
        self._robots.store(authority, outcome, fetched_at)
        return self._robots.lookup(authority, self._clock.now())

    async def _add_sitemaps(self, decision: RobotsDecision, found_on: str) -> None:
        assert self._scope is not None
        candidates: list[Candidate] = []
        for raw in decision.sitemaps:
            if len(self._sitemaps) >= _MAX_SITEMAPS:
                break
            try:
                url = canonicalize(raw, params=self._params)
            except InvalidURL:
                continue
            if self._scope.check(url, 0) is not None or url in self._sitemaps:
                continue
            self._sitemaps.add(url)
            candidates.append(Candidate(url, depth=1))
        if candidates and self._partition is None:
            await self.frontier.add_many(candidates, canonical=True)
        elif candidates:
            entries, _ = self.frontier.prepare(candidates, canonical=True)
            await self.frontier.add_queued(await self._forward(entries, None))

    async def _fetch_page(self, lease: Lease, decision: RobotsDecision) -> None:
        assert self._fetcher is not None
        crawl_delay = decision.crawl_delay_s(self._ua)
        try:
            if self.recrawl is not None:
                result = await self.recrawl.fetch(self._fetcher, lease.url)
            else:
                result = await self._fetcher.fetch(lease.url)
        except FetchError as error:
            if self.recrawl is not None:
                self.recrawl.visited(lease.url, lease.depth, None, None)
            now = self._clock.now()
            self.stats.errors[error.kind] += 1
            self.events.publish(
                FetchDone(now, lease.host_key, None, error.kind, now - lease.leased_at, 0)
            )
            kind = OutcomeKind.NETWORK_ERROR
            if error.kind in ("blocked", "too_long_url"):
                kind = OutcomeKind.NO_REQUEST
            outcome = Outcome(kind, lease.leased_at, now, crawl_delay_s=crawl_delay)
            log.info("%s failed: %s (%s)", lease.url, error.kind, error)
            if self.frontier.retries(lease, outcome):
                await self._retry(lease, outcome, error.kind)
                return
            entry = CatalogueEntry(
                lease.url,
                depth=lease.depth,
                fetched_at=now,
                skip_reason=f"error:{error.kind}",
                fail_reason=error.kind,
            )
            await self._complete(lease, outcome, (), (entry,))
            return
        size = len(result.raw_body or result.body)
        self.stats.statuses[result.status] += 1
        self.stats.bytes_received += size
        self.events.publish(
            FetchDone(result.ended_at, lease.host_key, result.status, None, result.elapsed_s, size)
        )
        visit = None
        if self.recrawl is not None:
            visit, position = self.recrawl.visited(lease.url, lease.depth, result, self._warc)
            await self.recrawl.save()
        else:
            position = self._archive(result)
        retry_after = parse_retry_after(result.header("Retry-After"), result.ended_at)
        outcome = Outcome.from_status(
            result.status,
            result.started_at,
            result.ended_at,
            retry_after_s=retry_after,
            crawl_delay_s=crawl_delay,
        )
        if result.interrupted:
            # The connection broke mid-body: an answer, but not whole (a server fault
            # for politeness, as a truncated robots.txt is); retried like a 5xx.
            self.stats.errors["interrupted"] += 1
            outcome = dataclasses.replace(outcome, kind=OutcomeKind.SERVER_ERROR)
        elif outcome.kind is not OutcomeKind.SUCCESS:
            self.stats.errors[f"http_{result.status}"] += 1
        log.info(
            "%s %d in %.3f s, %d bytes",
            lease.url,
            result.status,
            result.elapsed_s,
            len(result.body),
        )
        if self.frontier.retries(lease, outcome):
            # 5xx/429: the URL returns to the head of its queue with one more attempt
            # counted, and the host waits out the back-off (Retry-After); the last
            # attempt is kept as any response (see courtly.frontier.retry).
            reason = "interrupted" if result.interrupted else fail_reason_for_status(result.status)
            await self._retry(lease, outcome, reason)
            return
        self.stats.pages += 1
        self._claims.made_page(asyncio.current_task())  # its unit of --max-pages is spent
        if result.status == 304 and visit is not None:  # not modified: the stored copy stands
            await self._complete(lease, outcome, (), ())
            return
        facts = self._links_of(lease, result)
        discovered = facts.queued
        if self._partition is not None and discovered:
            discovered = await self._forward(discovered, lease.url)
        content_type = result.header("Content-Type")
        page_entry = CatalogueEntry(
            lease.url,
            status=result.status,
            fetched_at=result.ended_at,
            depth=lease.depth,
            content_type=content_type,
            content_hash=xxhash.xxh3_64_intdigest(result.body),
            content_bytes=len(result.body),
            raw_bytes=len(result.raw_body or result.body),
            elapsed_s=result.elapsed_s,
            warc_file=position[0] if position else None,
            warc_offset=position[1] if position else None,
            warc_length=position[2] if position else None,
            redirect_to=facts.redirect_to,
            canonical=facts.canonical,
            title=facts.title,
            noindex=facts.noindex,
            etag=result.header("ETag"),
            last_modified=result.header("Last-Modified"),
            change_count=visit.state.changes if visit is not None else 0,
            fail_reason="interrupted"
            if result.interrupted
            else fail_reason_for_status(result.status),
        )
        statuses = await self._complete(lease, outcome, discovered, (page_entry, *facts.skipped))
        if statuses is not None and discovered:
            self._count_drops(statuses)  # the store catalogued the newly queued ones
        if facts.chains:
            self._settle_walks(lease.url, facts.chains, discovered, statuses)
        if self._on_page is not None:
            page = Page(
                lease.url,
                result.status,
                lease.depth,
                result.headers,
                result.body,
                facts.links,
                result.ended_at,
                result.elapsed_s,
                result.truncated,
            )
            maybe = self._on_page(page)
            if inspect.isawaitable(maybe):
                await maybe

    async def _retry(self, lease: Lease, outcome: Outcome, fail_reason: str | None) -> None:
        """A failed attempt to be made again later (see :mod:`courtly.frontier.retry`)."""
        self.stats.retries += 1
        # Catalogued as not fetched (no status) but why; replaced once it is fetched.
        entry = CatalogueEntry(lease.url, depth=lease.depth, fail_reason=fail_reason)
        await self._store.record([entry])
        await self.frontier.retry(lease, outcome)
        # Commit the back-off and the attempt now: a crash in the commit window would
        # otherwise forget them, and the resumed crawl would ask again inside the gap.
        await self._store.flush()

    def _links_of(self, lease: Lease, result: FetchResult) -> _PageFacts:
        """What a response says: its links (to queue or skipped, with why), redirect, title."""
        depth = lease.depth + 1
        joiner = UrlJoiner(lease.url, canonical=True, cache=self._join_cache, params=self._params)
        urls: list[str] = []
        redirect_to: str | None = None
        title: str | None = None
        canonical: str | None = None
        noindex = False
        if result.status in _REDIRECTS:
            location = result.header("Location")
            target = joiner.join(location) if location else None
            if target is not None:
                redirect_to = target
                urls.append(target)
                self.stats.redirects += 1
        elif 200 <= result.status < 300:
            if lease.url in self._sitemaps or _looks_like_sitemap(result):
                sitemap = parse_sitemap(result.body)
                for item in sitemap.urls:
                    if (url := joiner.join(item.loc)) is not None:
                        urls.append(url)
                for child in sitemap.sitemaps:
                    if (url := joiner.join(child)) is not None and len(
                        self._sitemaps
                    ) < _MAX_SITEMAPS:
                        self._sitemaps.add(url)
                        urls.append(url)
            else:
                page = extract_links(
                    result.body,
                    lease.url,
                    content_type=result.header("Content-Type"),
                    x_robots_tag=[v for k, v in result.headers if k.lower() == "x-robots-tag"],
                    join=joiner.join,
                    robots_token=self._token,
                )
                title = page.title
                noindex = page.noindex
                canonical = page.canonical
                if page.nofollow:
                    self.stats.skipped["page_nofollow"] += 1
                urls.extend(link.url for link in page.followable())
        assert self._scope is not None
        queued: list[QueuedUrl] = []
        skipped: list[CatalogueEntry] = []
        seen_here: set[str] = set()
        chains: dict[str, int] = {}
        admitted: list[str] = []
        referrer_chain = self._walks.read(lease.url)
        for url in urls:
            if url in seen_here:
                continue
            seen_here.add(url)
            reason = self._scope.check(url, depth) or trap_reason(url, self._traps)
            if reason is None:
                reason, chain = self._walks.check(lease.url, referrer_chain, url)
                if reason is None and chain:
                    chains[url] = chain
            if reason is not None:
                self.stats.skipped[reason] += 1
                skipped.append(
                    CatalogueEntry(url, depth=depth, referrer=lease.url, skip_reason=reason)
                )
                continue
            admitted.append(url)
        for candidate in self._rank(lease.url, admitted, depth):
            try:
                queued.append(self.frontier.queued_url(candidate, canonical=True))
            except InvalidURL:
                self.stats.skipped["invalid"] += 1
        return _PageFacts(
            tuple(seen_here), queued, skipped, redirect_to, title, noindex, canonical, chains
        )

    def _rank(self, page: str, urls: Sequence[str], depth: int) -> list[Candidate]:
        """Candidates for the links ``urls`` of ``page``, with the importance learnt so far
        (``courtly.frontier.importance``: the page's cash is spent on them first)."""
        signals = self._importance.rank(page, urls)
        candidates: list[Candidate] = []
        for url, known in zip(urls, signals, strict=True):
            candidates.append(
                Candidate(
                    url,
                    depth=depth,
                    inlinks=known.inlinks,
                    host_quality=known.host_quality,
                    cash_ratio=known.cash_ratio,
                )
            )
        return candidates

    async def _forward(self, entries: Sequence[QueuedUrl], referrer: str | None) -> list[QueuedUrl]:
        """Forward the entries other partitions own (durably); return the ones owned here."""
        assert self._partition is not None
        owns = self._partition.owns
        mine = [entry for entry in entries if owns(entry.host_key)]
        if len(mine) < len(entries):
            await self._partition.forward([e for e in entries if not owns(e.host_key)], referrer)
        return mine

    async def add_forwarded(
        self, entries: Sequence[QueuedUrl], referrers: Sequence[str | None]
    ) -> list[AddStatus]:
        """Queue URLs another partition found (each with the page it was found on, if
        any) and catalogue the new ones, as if found here; wakes idle workers."""
        statuses = await self.frontier.add_queued(entries)
        await self._record_discoveries(referrers, entries, statuses)
        self._wake.set()
        return statuses

    async def _record_discoveries(
        self,
        referrers: Sequence[str | None],
        discovered: Sequence[QueuedUrl],
        statuses: Sequence[AddStatus],
    ) -> None:
        """Catalogue every newly queued URL with its referrer and depth (first discovery wins;
        URLs with no referrer, e.g. from a robots.txt Sitemap line, are not catalogued)."""
        entries = [
            CatalogueEntry(entry.url, depth=entry.depth, referrer=referrer)
            for entry, status, referrer in zip(discovered, statuses, referrers, strict=True)
            if status is AddStatus.QUEUED and referrer is not None
        ]
        self._count_drops(statuses)
        if entries:
            await self._store.record(entries)

    def _count_drops(self, statuses: Sequence[AddStatus]) -> None:
        for status in statuses:
            if status in (AddStatus.OVER_HOST_BUDGET, AddStatus.OVER_CRAWL_BUDGET):
                self.stats.skipped["budget"] += 1
            elif status is AddStatus.HOST_RETIRED:
                self.stats.skipped["host_retired"] += 1

    def _settle_walks(
        self,
        referrer: str,
        chains: dict[str, int],
        discovered: Sequence[QueuedUrl],
        statuses: Sequence[AddStatus] | None,
    ) -> None:
        """Tell the walk guard which of the walk steps found on ``referrer`` were queued."""
        queued = {
            entry.url
            for entry, status in zip(discovered, statuses or (), strict=False)
            if status is AddStatus.QUEUED
        }
        for url, chain in chains.items():
            self._walks.settle(referrer, url, chain, queued=url in queued)

    async def _complete(
        self,
        lease: Lease,
        outcome: Outcome,
        discovered: Sequence[QueuedUrl],
        records: Sequence[CatalogueEntry],
    ) -> list[AddStatus] | None:
        statuses = await self.frontier.complete(lease, outcome, discovered, records)
        if statuses is None:
            self.stats.fenced += 1
            log.info("lease on %s expired before completion; result discarded", lease.host_key)
        return statuses

    def _archive(self, result: FetchResult) -> tuple[str, int, int] | None:
        if self._warc is None:
            return None
        # write_exchange returns once the records are with the OS, so the catalogue never
        # commits a pointer past the end of a WARC that a killed process leaves behind.
        position = self._warc.write_exchange(result)
        return (position.filename, position.offset, position.length)


def _crawlable(seeds: Sequence[str], stats: CrawlStats) -> list[str]:
    """The stored seeds that are crawlable URLs; the others (stored by an older courtly,
    which did not check seeds first) are reported, counted and skipped."""
    kept: list[str] = []
    for seed in seeds:
        try:
            canonicalize(seed)
        except InvalidURL as error:
            stats.skipped["invalid_seed"] += 1
            log.warning(
                "skipping a stored seed that is not a crawlable URL: %s (%s)", shorten(seed), error
            )
            continue
        kept.append(seed)
    return kept


def _host_key_function(mode: Literal["host", "domain"]) -> Callable[[str], str]:
    """The politeness unit of a canonical URL: its host, or its registered domain."""
    if mode == "host":
        return host_of
    resolver = DomainResolver()
    return functools.partial(host_key, mode="domain", resolver=resolver)


@dataclass(frozen=True, slots=True)
class _PageFacts:
    """What one response tells the crawl (see ``Crawler._links_of``)."""

    links: tuple[str, ...]
    """Every distinct canonical link followed (before scope checks)."""
    queued: list[QueuedUrl]
    skipped: list[CatalogueEntry]
    redirect_to: str | None
    title: str | None
    noindex: bool
    canonical: str | None
    chains: dict[str, int]
    """The walk chain of each admitted link that is a walk step (``courtly.frontier.traps``)."""


class _PacedFetcher:
    """A fetcher that leaves the politeness gap between its own consecutive requests.

    robots.txt redirects are followed inside one lease; each hop is a request
    like any other, so the next one waits out the delay the previous one earned.
    ``ended_at`` is the end of the last request made, a failed one included (when
    the failure was seen), so the lease's outcome measures the host's gap from the
    end of the last request, not of the last response.
    """

    def __init__(self, inner: Fetcher, clock: Clock, politeness: PolitenessConfig) -> None:
        self._inner = inner
        self._clock = clock
        self._politeness = politeness
        self._next_at: float | None = None
        self.ended_at: float | None = None

    async def fetch(self, url: str) -> FetchResult:
        if self._next_at is not None:
            await self._clock.sleep(self._next_at - self._clock.now())
        try:
            result = await self._inner.fetch(url)
        except FetchError:
            self.ended_at = self._clock.now()
            self._next_at = self.ended_at + self._politeness.min_delay_s
            raise
        self.ended_at = result.ended_at
        gap = politeness_delay_s(result.elapsed_s, None, 0.0, self._politeness)
        self._next_at = result.ended_at + gap
        return result


def _looks_like_sitemap(result: FetchResult) -> bool:
    head = result.body[:512].lstrip()
    if head.startswith(b"\x1f\x8b"):
        return True
    content_type = (result.header("Content-Type") or "").lower()
    if "xml" not in content_type:
        return False
    return b"<urlset" in result.body[:2048] or b"<sitemapindex" in result.body[:2048]

"""The crawler: its lifecycle, the dispatcher, and what each lease does first.

See :mod:`courtly.crawl` for the data flow of a lease. This module starts and stops the
crawl (seeds, the stored configuration, the deadline, progress ticks, the stop grace),
runs the dispatcher (:mod:`courtly.crawl.dispatch`), and sends each lease to robots.txt
(:mod:`courtly.crawl.robots_gate`) or to the page pipeline (:mod:`courtly.crawl.page`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from courtly.archive.catalogue import CatalogueEntry
from courtly.archive.warc import WarcWriter, archive_prefix
from courtly.autoscale import AutoscaleConfig, Autoscaler
from courtly.clock import Clock, StepWatch, SystemClock
from courtly.config import CrawlConfig, shorten
from courtly.crawl.dispatch import LEASE_AHEAD_S, Fetches, ReadyWaits, idle, wait_until
from courtly.crawl.links import LinkAdmission
from courtly.crawl.page import PagePipeline, drop_reasons
from courtly.crawl.records import CrawlSnapshot, OnPage, Partition, ProgressSink
from courtly.crawl.robots_gate import RobotsGate
from courtly.crawl.seeds import SeedScope
from courtly.crawl.stats import STATS_EVENTS, CrawlStats
from courtly.crawl.wiring import (
    frontier_config,
    host_key_function,
    is_shared,
    open_store,
    shared_ip_gate,
)
from courtly.errors import FetchError, InvalidURL, StateError, sole_error
from courtly.events import EventBus, HostStateChanged, RobotsResult, Tick, UrlsSkipped
from courtly.fetch.address_holds import AddressHolds
from courtly.fetch.config import FetchConfig
from courtly.fetch.deadline import LEASE_MARGIN_S, REQUEST_NOT_AFTER
from courtly.fetch.http_fetcher import HttpFetcher
from courtly.fetch.machine_ip_gate import MachineIpGate
from courtly.fetch.records import Fetcher
from courtly.frontier.frontier import Candidate, Frontier
from courtly.frontier.learnt import load_learnt, save_learnt
from courtly.frontier.politeness import PolitenessConfig
from courtly.frontier.records import (
    AddStatus,
    DelaySource,
    FrontierCounts,
    Lease,
    Outcome,
    QueuedUrl,
)
from courtly.heap import CRAWL_THRESHOLDS, FrozenHeap
from courtly.observe.observation import Observation
from courtly.observe.status_file import (
    StatusFile,
    TickToProgress,
    last_run_record,
    status_config,
)
from courtly.page_budget import FetchClaims, LocalPageBudget, PageBudget
from courtly.robots import RobotsCache, authority_of, product_token
from courtly.stop import ending
from courtly.store.base import (
    SHARED_POLL_S,
    FrontDepths,
    FrontierStore,
    HeldHosts,
    QueuedCounts,
    RidesOutages,
    lease_ahead_s,
)
from courtly.store.redis.address import shown
from courtly.url import Scope, canonicalize

if TYPE_CHECKING:
    from courtly.recrawl import Recrawl  # loads numpy: imported only by a recrawl

__all__ = ["STATUS_FILE", "Crawler", "build_crawler"]

log = logging.getLogger("courtly.crawl")

_CLOSE_RESERVE_S = 0.5
"""The part of the stop grace kept for closing the store, the archive and the connections:
after a stop, requests in flight get ``config.stop_grace_s`` less this, then are abandoned,
so ``run`` returns within the grace of the stop (of ``max_time_s``)."""
_IDLE_S = 0.5
"""Longest the dispatcher waits without a completion, a due host or a new fetcher count."""
STATUS_FILE = "status.json"
"""Written to the state directory with every progress tick: what ``courtly status``
shows while the crawl holds its state file."""

_FETCHED = ("crawl", "fetched")
"""The blob a process of a shared crawl writes once it has fetched a page."""


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
        self.stats = CrawlStats()
        """The run's counters: a subscriber of :attr:`events`."""
        self.events.subscribe(self.stats, STATS_EVENTS)
        if page_budget is None and config.max_pages is not None:
            page_budget = LocalPageBudget(config.max_pages)
        self._claims = FetchClaims(page_budget)
        self._fetches = Fetches(self._claims, on_end=self._fetch_ended)
        self._wake = self._fetches.wake
        self._partition = partition
        self._machine_gate = machine_gate
        self._clock: Clock = clock or SystemClock()
        self._steps = StepWatch() if isinstance(self._clock, SystemClock) else None
        fconfig = frontier_config(config)
        if politeness is not None:
            fconfig = dataclasses.replace(fconfig, politeness=politeness)
        self._store = store if store is not None else open_store(config, fconfig.queues)
        self._shared = is_shared(self._store)
        """Other processes share the store (Redis): they change it without a signal here."""
        self._fetched_said = False  # this process wrote the shared crawl's _FETCHED blob
        self._others_fetched = False  # ...and, ending with no page, found another's there
        # Every store leases ahead (Redis maps the server's times onto this clock); on a
        # shared one no further than half the min delay, so that a host this process
        # completes is seen due by the others before it leases it again.
        self._ahead_s = lease_ahead_s(
            LEASE_AHEAD_S, fconfig.politeness.min_delay_s, shared=self._shared
        )
        held = self._store.holds if isinstance(self._store, HeldHosts) else None
        self.ready_waits = ReadyWaits(held)
        """Fetchers idle while a host was ready (see :class:`ReadyWaits`)."""
        self.events.subscribe(self.ready_waits, (HostStateChanged,))
        host_key = host_key_function(config.host_key)
        self.frontier = Frontier(
            self._store, fconfig, clock=self._clock, host_key=host_key, events=self.events
        )
        store_ = self._store
        self.observation = Observation(
            store_.queued_of if isinstance(store_, QueuedCounts) else None,
            store_.front_by_level if isinstance(store_, FrontDepths) else None,
        )
        self.events.subscribe(self.observation)
        self._status_file = StatusFile(
            config.state_dir / STATUS_FILE, config.identity(), self._clock.now
        )
        self.events.subscribe(self._status_file, (Tick,))
        if progress is not None:
            self.events.subscribe(TickToProgress(progress), (Tick,))
        self._observed: dict[str, Any] = {}
        self.resumed = False
        self._fetcher: Fetcher | None = fetcher
        self._http: HttpFetcher | None = None  # the fetcher built here, if any
        self._progress = progress
        self._ua = config.user_agent
        self._params = fconfig.params  # tracking parameters dropped from every URL
        self._links = LinkAdmission(
            params=self._params,
            host_key=host_key,
            levels=fconfig.queues.levels,
            robots_token=product_token(config.user_agent),
        )
        if partition is not None:  # a URL's importance is learnt by the partition owning it
            self._links.owns = partition.owns
        self._seeds = SeedScope(
            self._store,
            self._links,
            lambda seeds: Scope.from_seeds(
                seeds,
                config.scope,
                include=config.include,
                exclude=config.exclude,
                max_depth=config.max_depth,
            ),
            others=self._shared or partition is not None,
            clock=self._clock.now,
        )
        self.recrawl: Recrawl | None = None
        if config.recrawl:
            from courtly.recrawl import Recrawl

            self.recrawl = Recrawl(config, self._store, self.frontier, self._clock)
        self._pages = PagePipeline(
            frontier=self.frontier,
            store=self._store,
            events=self.events,
            clock=self._clock,
            claims=self._claims,
            links=self._links,
            user_agent=self._ua,
            recrawl=self.recrawl,
            on_page=on_page,
            forward=self._forward if partition is not None else None,
            seeds=self._seeds if config.scope != "any" else None,
        )
        retry_s = fconfig.politeness.robots_retry_s
        self._robots = RobotsGate(
            cache=RobotsCache(
                ttl_s=config.robots_ttl_s,
                retry_initial_s=retry_s,
                retry_max_s=max(3_600.0, retry_s),
            ),
            store=self._store,
            frontier=self.frontier,
            events=self.events,
            clock=self._clock,
            user_agent=self._ua,
            # a shared store's robots.txt cache is filled by every process: look again on a miss
            shared=self._shared,
            archive=self._pages.archive,
        )
        self._robots.fetcher = fetcher  # robots.txt: a shorter timeout when built here
        self._pages.fetcher = fetcher
        self._warc: WarcWriter | None = None
        self._scaler = Autoscaler(
            autoscale if autoscale is not None else AutoscaleConfig.auto(config.concurrency),
            self._clock,
        )
        self._stop_grace_s = config.stop_grace_s if stop_grace_s is None else stop_grace_s
        self._holds = AddressHolds(self._local_per_ip())
        """Leases held per address (:mod:`courtly.fetch.address_holds`)."""
        self._held_at: dict[asyncio.Task[None], tuple[str, float, float]] = {}
        """Per fetch task counted in :attr:`_holds`: its address, its host's time and
        when it started."""
        self.addresses_busy = 0
        """Leases given back untouched because their address had no room (this run)."""
        self._stopping = False
        self._stop_reason: str | None = None
        self._stop_detail: str | None = None
        self._stop_at: float | None = None
        self._finished = False
        self._ended = False
        self.config_changes: list[str] = []

    # -- lifecycle ------------------------------------------------------------

    def request_stop(self, reason: str = "requested", detail: str | None = None) -> None:
        """Stop leasing; requests in flight finish, or are abandoned once the stop grace
        (``config.stop_grace_s``, 5 s) has passed (their leases stay void: the URLs are
        fetched again on resume). ``detail``: why, in words (the snapshot's
        ``stop_detail``, which ``courtly status`` shows)."""
        if not self._stopping:
            self._stopping = True
            self._stop_reason = reason
            if detail is not None:  # else whatever the caller set before (``ending``)
                self._stop_detail = detail
            self._stop_at = self._clock.now()
            self._store_gives_up(self._stop_grace_s)
        self._wake.set()

    def abort(self) -> None:
        """Stop now: cancel requests in flight (their leases stay void; nothing is lost)."""
        self.request_stop("aborted")
        self._store_gives_up(0.0)
        self._fetches.cancel()

    def _store_gives_up(self, after_s: float) -> None:
        """A store that waits out an unreachable server stops waiting ``after_s`` from now
        (:class:`~courtly.store.base.RidesOutages`): a stop ends the crawl in its grace with
        the server down, not after the store's whole retry time."""
        if isinstance(self._store, RidesOutages):
            self._store.give_up_after(after_s)

    @property
    def fetchers(self) -> int:
        """Fetchers allowed in flight now (see :mod:`courtly.autoscale`)."""
        return self._scaler.desired

    @property
    def _in_flight(self) -> int:
        """Fetch tasks started and not ended (benchmarks/lateness.py reads it)."""
        return self._fetches.in_flight

    async def run(self) -> CrawlSnapshot:
        """Crawl; see the class doc. Returns the final snapshot.

        With ``max_time_s``, returns within ``max_time_s`` of the call when nothing is
        in flight at the deadline, and within ``max_time_s`` + the stop grace otherwise.
        """
        self.stats.started_at = self._clock.now()
        warc_dir = self.config.state_dir / "warc"
        self._warc = WarcWriter.open_existing(
            warc_dir,
            prefix=archive_prefix(warc_dir),
            gzip_level=self.config.warc_gzip_level,
            clock=self._clock,
            warcinfo_fields={"operator-agent": self._ua},
        )
        self._pages.warc = self._warc
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
                    verify_tls=self.config.verify_tls,
                ),
                self._clock,
                ip_gate=self._machine_gate or shared_ip_gate(self._store, self.config),
                on_ip_wait=self._news,
            )
            self._fetcher = self._pages.fetcher = http
            self._robots.fetcher = http.limited(http.config.robots_timeout_s)
            self._http = http
        heap = FrozenHeap(enabled=True, thresholds=CRAWL_THRESHOLDS)
        try:
            async with asyncio.TaskGroup() as group:
                helpers: list[asyncio.Task[None]] = []
                limit_s = self.config.max_time_s
                deadline = None if limit_s is None else self.stats.started_at + limit_s
                if deadline is not None:
                    helpers.append(group.create_task(self._deadline(deadline)))
                await self._start()
                if deadline is not None and self._clock.now() >= deadline:
                    self.request_stop("max_time")  # set-up took the time: start no fetch
                heap.freeze()  # the crawl is set up: its long-lived objects (courtly.heap)
                helpers.append(group.create_task(self._reporter()))
                helpers.append(
                    group.create_task(self._scaler.run(lambda: self._fetches.in_flight, self._news))
                )
                if self._partition is not None:
                    helpers.append(group.create_task(self._partition.serve(self)))
                try:
                    await self._dispatcher(group)
                    await self._drain()
                    if not self._finished:  # a stop by a limit or signal (the end looked)
                        with contextlib.suppress(Exception):  # a store gone: nothing known
                            await self._look_for_others_pages()
                finally:
                    self._ended = True
                    for task in helpers:
                        task.cancel()
            snapshot = await self._tick()
            return snapshot
        except BaseExceptionGroup as errors:
            # the task group wraps even one failure: raise it as itself, so that a
            # CourtlyError (an unreadable stored configuration, say) reaches the command
            # as one, for its message and exit code rather than a traceback
            error = sole_error(errors)
            raise error from error.__cause__
        finally:
            heap.thaw()
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

    async def _look_for_others_pages(self) -> None:
        """A process of a shared crawl that has no page of its own: did another process
        of the crawl fetch some (its ``_FETCHED`` blob)? Then its zero pages are not the
        crawl's, and it ends done, not "nothing fetched"."""
        if self._shared and not self.stats.pages and not self._others_fetched:
            self._others_fetched = await self._store.get_blob(*_FETCHED) is not None

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
            if "seeds_total" not in old:  # an older courtly kept every seed here
                stored_seeds = list(old.get("seeds", []))
            for key, value in identity.items():
                if key == "seeds" or key not in old:
                    continue
                before = old[key]
                if key == "store" and isinstance(before, str):
                    before = shown(before)  # stored unmasked by an older courtly
                if before != value:
                    self.config_changes.append(f"{key}: {before!r} -> {value!r}")
            if self._partition is None or self._partition.primary:  # said once a crawl
                for change in self.config_changes:
                    log.warning("resuming with a changed configuration: %s", change)
        seeds = await self._seeds.start(self.config.seeds, self._crawlable(stored_seeds))
        if not seeds:
            raise StateError(
                f"nothing to crawl: no seeds given and no crawl in {self.config.state_dir}"
            )
        identity["seeds"] = seeds  # the first LISTED_SEEDS: the store keeps every one
        await self._store.put_blob("crawl", "config", json.dumps(status_config(identity)).encode())
        self._status_file.configure(identity)  # status.json: every seed, not the given ones
        candidates = [Candidate(s, is_seed=True) for s in seeds]
        if self._partition is None:  # walk budgets and host quality, kept across a resume
            await load_learnt(self._store, self._links.walks, self._links.importance)
        for seed in seeds:
            with contextlib.suppress(InvalidURL):
                self._links.importance.seed(canonicalize(seed, params=self._params))
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
            log.warning("seed %r is not a crawlable URL", seed)
        if invalid:
            self.events.publish(UrlsSkipped(self._clock.now(), ("invalid_seed",) * len(invalid)))

    def _crawlable(self, seeds: Sequence[str]) -> list[str]:
        """The stored seeds that are crawlable URLs; the others (stored by an older courtly,
        which did not check seeds first) are reported, counted and skipped."""
        kept: list[str] = []
        for seed in seeds:
            try:
                canonicalize(seed)
            except InvalidURL as error:
                self.events.publish(UrlsSkipped(self._clock.now(), ("invalid_seed",)))
                log.warning(
                    "skipping a stored seed that is not a crawlable URL: %s (%s)",
                    shorten(seed),
                    error,
                )
                continue
            kept.append(seed)
        return kept

    async def _deadline(self, at: float) -> None:
        """Request the ``max_time`` stop at ``at`` (epoch seconds on the crawl's clock)."""
        while (left := at - self._clock.now()) > 0:
            await self._clock.sleep(left)
        self.request_stop("max_time")

    async def _reporter(self) -> None:
        """Tick every progress interval until the crawl has ended.

        The crawl's end cancels this task, but the loop also stops on ``_ended``: a
        cancellation can be lost in a store's client (on Python 3.11,
        ``asyncio.wait_for`` returns the result of a call that completed as the
        cancellation came, and the Redis client sends every command under it), and a
        reporter that went on ticking would keep the crawl's task group, and so the
        process, from ever ending."""
        while not self._ended:
            await asyncio.sleep(self.config.progress_interval_s)
            if self._ended:
                break
            if self._steps is not None and (step_s := self._steps.look()) is not None:
                log.warning(
                    "the system clock was stepped %+.1f s: politeness waits run on it (a "
                    "step forward lets each host's next request go up to that early, once; "
                    "a step back holds every host that much longer)",
                    step_s,
                )
            if self._shared and self.config.scope != "any":
                await self._seeds.refresh()  # another process may have added seeds
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
                await save_learnt(self._store, self._links.walks, self._links.importance)

    async def snapshot(self) -> CrawlSnapshot:
        """Counters and frontier sizes now."""
        return self._make_snapshot(await self.frontier.counts())

    def _make_snapshot(self, counts: FrontierCounts) -> CrawlSnapshot:
        stats = self.stats
        elapsed = max(1e-9, self._clock.now() - stats.started_at)
        warc_files: tuple[str, ...] = ()
        if self._warc is not None:
            warc_files = tuple(str(p) for p in self._warc.existing_files())
        done = self._finished or self._ended
        return CrawlSnapshot(
            elapsed_s=elapsed,
            pages=stats.pages,
            pages_per_s=stats.pages / elapsed,
            robots_fetches=stats.robots_fetches,
            bytes_received=stats.bytes_received,
            redirects=stats.redirects,
            in_flight=self._fetches.in_flight,
            counts=counts,
            errors=dict(stats.errors),
            error_examples=dict(stats.error_examples),
            skipped=dict(stats.skipped),
            statuses=dict(stats.statuses),
            warc_files=warc_files,
            state_dir=str(self.config.state_dir),
            finished=done,
            stop_reason=self._stop_reason or ("done" if self._finished else None),
            stop_detail=self._stop_detail,
            hosts_retired=dict(self.frontier.retired),
            fetchers=self._scaler.desired,
            observed=self._observed,
            resumed=self.resumed,
            others_fetched=self._others_fetched,
            dispatch=self.ready_waits.summary(),
        )

    # -- workers --------------------------------------------------------------

    async def _dispatcher(self, group: asyncio.TaskGroup) -> None:
        """Lease up to ``desired − busy`` ready hosts and start a fetch for each.

        *Busy* fetches are those in flight less those waiting for a slot of their
        address (per-IP cap): a fetch parked behind a slow or hanging request to its
        address does not keep a ready host on another address waiting. The fetcher
        wakes the dispatcher when a fetch starts to wait so.

        A lease on a busy address where this process already holds as many leases as
        it can start soon (its per-IP places and as many waiting:
        :class:`~courtly.fetch.address_holds.AddressHolds`) is given back untouched,
        its host held a moment (``address_busy``): another process of a shared crawl
        may take it, and this one does not take it again at once.

        One task leases for all fetchers, so a completion or a host coming due wakes
        one task, not every idle fetcher (no thundering herd on the frontier). It
        waits only when every allowed fetcher is busy or no host is ready, and then
        wakes for a completion, a forwarded URL, a larger fetcher count, the next
        host's due time, or a stop. Returns when stopping; the fetches it started
        may still be in flight (see :meth:`_drain`).
        """
        budget = self._claims.budget
        scaler = self._scaler
        fetches = self._fetches
        while not self._stopping:
            # Cleared before looking, so a completion from here on wakes the wait below.
            self._wake.clear()
            if self._shared and not self._fetched_said and self.stats.pages:
                self._fetched_said = True  # a process of the crawl that ends with none
                await self._store.put_blob(*_FETCHED, b"1")  # of its own ends done, not 5
            if self.recrawl is not None:  # due URLs back into the frontier, within the share
                await self.recrawl.feed(self.frontier.config.budget)
            free = scaler.desired - fetches.in_flight + self._waiting_for_ip()
            if budget is not None and free > 0:
                if budget.spent():
                    # Every page is made; what is still in flight holds no unit (robots.txt
                    # fetches): the stop abandons it at once (see _drain).
                    self.request_stop("max_pages")
                    break
                # each fetch started holds a unit of --max-pages until it ends
                free = budget.claim(free)
            if free <= 0:
                self._note_free()
                await self._idle(_IDLE_S)
                continue
            # each lease is announced when its request starts (in _process)
            batch = await self.frontier.lease(free, ahead_s=self._ahead_s, announce=False)
            if budget is not None:
                budget.settle(free - len(batch.leases), 0)
            if self._stopping:  # the stop came while leasing: start nothing more
                for lease in batch.leases:
                    await self.frontier.release(lease)
                if budget is not None:
                    budget.settle(len(batch.leases), 0)
                break
            now = self._clock.now()
            started, busy = self._start_fetches(group, batch.leases, now)
            if len(started) >= free and self._due_now(started) >= free:
                # hosts due now filled every free fetcher (not hosts leased ahead: they
                # would have been leased in time anyway)
                scaler.note_capped()
            if busy:
                await self._give_back_busy(busy, now)
            self._note_free()
            if batch.leases:
                continue
            if (
                batch.next_ready_at is None
                and fetches.in_flight == 0
                and self._partition is None
                and self.recrawl is None  # a recrawl ends only by a signal or --max-time
            ):
                counts = await self.frontier.counts()
                if counts.queued == 0 and counts.leased == 0:
                    self._finished = True
                    await self._look_for_others_pages()
                    pages = self.stats.pages or int(self._others_fetched)
                    reason, self._stop_detail = ending(pages, self.frontier.retired)
                    if self._stop_detail is not None:
                        log.warning("%s", self._stop_detail)
                    self.request_stop(reason)
                    break
            wait_s = SHARED_POLL_S if self._shared else _IDLE_S
            if batch.next_ready_at is not None:
                due_in_s = batch.next_ready_at - self._ahead_s - self._clock.now()
                wait_s = min(wait_s, max(0.0, due_in_s))
            await self._idle(wait_s)

    async def _idle(self, wait_s: float) -> None:
        """The dispatcher's one wait: ``wait_s`` seconds on the crawl's clock, or less if
        woken (tests hook it to check that no fetcher waits while a host is ready)."""
        await idle(self._wake, self._clock, wait_s)

    def _start_fetches(
        self, group: asyncio.TaskGroup, leases: Sequence[Lease], now: float
    ) -> tuple[list[Lease], list[tuple[Lease, str]]]:
        """Start a fetch for each lease whose address has room here; the leases
        started, and those not (with their address)."""
        fetches = self._fetches
        started: list[Lease] = []
        busy: list[tuple[Lease, str]] = []
        for lease in leases:
            ip = self._known_address(lease)
            due_at = lease.host.next_allowed_at
            if ip is not None and not self._take_place(ip, due_at, now):
                busy.append((lease, ip))
                continue
            self.ready_waits.leased(lease, now)
            task = fetches.start(group, lease, self._process)
            if ip is not None:
                self._held_at[task] = (ip, due_at, now)
            started.append(lease)
        return started, busy

    async def _give_back_busy(self, busy: Sequence[tuple[Lease, str]], now: float) -> None:
        """Give back, untouched, leases whose address holds as many leases of this
        process as it can start soon; each host waits a moment (``address_busy``)."""
        budget = self._claims.budget
        if budget is not None:
            budget.settle(len(busy), 0)
        for lease, ip in busy:
            await self._release_busy(lease, ip, now)

    async def _release_busy(self, lease: Lease, ip: str, now: float) -> None:
        self.addresses_busy += 1
        wait_s = self._holds.wait_s(ip, self._ahead_s)
        await self.frontier.release(lease, Outcome.deferred(now, wait_s, DelaySource.ADDRESS_BUSY))

    async def _hold_address(self, lease: Lease) -> bool:
        """For a fetch started with its address unknown (its host not yet resolved in
        this process): resolve it now (the request would; the answer is cached for it)
        and hold the lease by the same rule as :meth:`_start_fetches`. ``False``: the
        address holds as many leases of this process as it can start soon, and the
        lease was given back untouched.

        Without this, a process's first lease step takes every ready host of an address
        it has not met yet: on a shared crawl a process that starts a moment earlier
        holds them all, and re-leases each the moment it comes due, while the others
        find nothing to lease. A name that does not resolve (or is refused) is held:
        its request reports the error.
        """
        http = self._http
        if http is None:
            return True
        task = asyncio.current_task()
        if task is None or task in self._held_at:
            return True
        try:
            ip = await http.resolve(authority_of(lease.url)[1])
        except (FetchError, InvalidURL):
            return True
        now = self._clock.now()
        due_at = lease.host.next_allowed_at
        if not self._take_place(ip, due_at, now):
            await self._release_busy(lease, ip, now)
            return False
        self._held_at[task] = (ip, due_at, now)
        return True

    def _take_place(self, ip: str, due_at: float, now: float) -> bool:
        """The address rule (:class:`~courtly.fetch.address_holds.AddressHolds`): whether
        this process may hold one more lease at ``ip`` (its host due at ``due_at``) at
        ``now``; if so it is counted there."""
        http = self._http
        assert http is not None  # only an HTTP fetcher knows addresses
        if not self._holds.room(ip, now, http.waiting_at(ip)):
            return False
        self._holds.take(ip, due_at)
        return True

    def _known_address(self, lease: Lease) -> str | None:
        """The address ``lease``'s request would go to, if this process's fetcher knows
        it without a lookup (``None``: unknown, or not an HTTP fetcher)."""
        http = self._http
        if http is None:
            return None
        try:
            host = authority_of(lease.url)[1]
        except InvalidURL:
            return None
        return http.known_address(host)

    def _due_now(self, leases: Sequence[Lease]) -> int:
        """How many of ``leases`` were due at once (not taken ahead of their time)."""
        now = self._clock.now()
        return sum(1 for lease in leases if lease.host.next_allowed_at <= now)

    def _free(self) -> int:
        """Fetchers free now: allowed, less in flight, plus those waiting for an address."""
        return self._scaler.desired - self._fetches.in_flight + self._waiting_for_ip()

    def _note_free(self) -> None:
        """Tell :attr:`ready_waits` how many fetchers are free from now on."""
        self.ready_waits.note(self._clock.now(), self._free())

    def _fetch_ended(self, task: asyncio.Task[None]) -> None:
        held = self._held_at.pop(task, None)
        if held is not None:
            ip, due_at, started_at = held
            self._holds.give(ip, due_at, self._clock.now() - started_at)
        self._note_free()

    def _news(self) -> None:
        """More fetchers are free (a new fetcher count, a fetch waiting for its address):
        note it and wake the dispatcher."""
        self._note_free()
        self._wake.set()

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

    async def _drain(self) -> None:
        """Wait for the fetches in flight; abandon them when the stop grace runs out, and
        at once those that can make no page when ``--max-pages`` stopped the crawl (a
        robots.txt fetch). An abandoned fetch's lease is released: its URL is at the head
        of its queue again, for this store's next run."""
        fetches = self._fetches
        if self._stop_reason == "max_pages":
            unclaimed = [t for t in fetches.tasks if not self._claims.holds(t)]
            await fetches.abandon(unclaimed, self.frontier, self._clock)
        while fetches.tasks:
            stop_at = self._stop_at if self._stop_at is not None else self._clock.now()
            left = stop_at + self._stop_grace_s - _CLOSE_RESERVE_S - self._clock.now()
            if left <= 0:
                await fetches.abandon(list(fetches.tasks), self.frontier, self._clock)
                return
            self._wake.clear()
            await self._idle(left)

    async def _process(self, lease: Lease) -> None:
        """One lease: robots.txt first (fetched under this lease if unknown), then the page.

        A lease taken ahead of its host's allowed time (:data:`LEASE_AHEAD_S`) waits for
        it here: no request under it starts before ``lease.host.next_allowed_at``."""
        # its own task (dispatch.py): no request under it once the lease runs out
        REQUEST_NOT_AFTER.set(lease.expires_at - LEASE_MARGIN_S)
        if not await self._hold_address(lease):
            return
        authority = authority_of(lease.url)
        robots = self._robots
        decision = await robots.known(authority)
        clock = self._clock
        await wait_until(clock, lease.host.next_allowed_at)
        self.ready_waits.begun(lease.host_key, clock.now())
        self.frontier.begin(lease)
        if decision is None:
            # no page under this lease: its unit of --max-pages serves another host now
            if self._claims.give_back(asyncio.current_task()):
                self._wake.set()
            decision = await robots.fetch(lease, authority)
            if decision is not None and self.config.follow_sitemaps:
                await self._add_sitemaps(self._links.sitemap_candidates(decision))
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
            now = self._clock.now()
            self.events.publish(UrlsSkipped(now, ("robots",)))
            entry = CatalogueEntry(lease.url, depth=lease.depth, skip_reason="robots")
            await self._pages.complete(lease, Outcome.no_request(now), (), (entry,))
            return
        await self._pages.run(lease, decision)

    async def _add_sitemaps(self, candidates: list[Candidate]) -> None:
        if candidates and self._partition is None:
            await self.frontier.add_many(candidates, canonical=True)
        elif candidates:
            entries, _ = self.frontier.prepare(candidates, canonical=True)
            await self.frontier.add_queued(await self._forward(entries, None))

    # -- partitions -----------------------------------------------------------

    async def _forward(
        self,
        entries: Sequence[QueuedUrl],
        referrer: str | None,
        links: Sequence[QueuedUrl] = (),
        cash: Sequence[float] = (),
    ) -> list[QueuedUrl]:
        """Forward the entries other partitions own (durably); return the ones owned here.

        ``links`` (with their ``cash``): a page's links to other partitions' hosts, each
        an in-link its owner credits (:meth:`LinkAdmission.credit`), all forwarded."""
        assert self._partition is not None
        owns = self._partition.owns
        mine = [entry for entry in entries if owns(entry.host_key)]
        if len(mine) < len(entries):
            theirs = [e for e in entries if not owns(e.host_key)]
            await self._partition.forward(theirs, referrer)
            self._links.note_forwarded(theirs)
        if links:
            await self._partition.forward(links, referrer, cash)
            self._links.note_forwarded(links)
        return mine

    async def add_forwarded(
        self,
        entries: Sequence[QueuedUrl],
        referrers: Sequence[str | None],
        cash: Sequence[float | None] | None = None,
    ) -> list[AddStatus]:
        """Queue URLs another partition found (each with the page it was found on, if
        any) and catalogue the new ones, as if found here; wakes idle workers.

        With ``cash`` (the share of its page's cash each link carries, ``None`` for an
        entry without), each link is first credited to this partition's importance
        tables and its level judged here (:meth:`LinkAdmission.credit`): the statuses are
        then those of the entries offered (new URLs, and known ones whose level a link
        lifted), not one per entry."""
        if cash is not None:
            entries, referrers = self._links.credit(entries, referrers, cash)
        statuses = await self.frontier.add_queued(entries)
        await self._record_discoveries(referrers, entries, statuses)
        self._links.note(entries, statuses)
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
        if reasons := drop_reasons(statuses):
            self.events.publish(UrlsSkipped(self._clock.now(), tuple(reasons)))
        if entries:
            await self._store.record(entries)


build_crawler = Crawler
"""Wire a crawler from a config: the same call as :class:`Crawler`, every collaborator
injectable by keyword (kept as the documented name of the wiring entry point)."""

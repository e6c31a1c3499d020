"""CourtlyScheduler: courtly's frontier as Scrapy's scheduler.

The engine's three calls are synchronous and O(1) in the size of the frontier:

* :meth:`~CourtlyScheduler.enqueue_request` fingerprints the request with the
  crawler's request fingerprinter, answers duplicates from an in-memory set of
  the fingerprints enqueued in this run (``dont_filter`` requests are never
  duplicates), serialises it and appends it to the *add buffer*;
* :meth:`~CourtlyScheduler.next_request` pops the *due buffer*: requests whose
  host is leased to this process and whose time has come;
* :meth:`~CourtlyScheduler.has_pending_requests` is true while anything is
  buffered, leased or in flight, or the frontier holds a host due within
  ``COURTLY_MAX_WAIT`` seconds. When only retired hosts or hosts due later than
  that are left, it is false and the spider can close.

The parts, each in its module: the buffers and their moves
(:mod:`~courtly.integrations.scrapy.pipeline`), the refill task that does the
store I/O (:mod:`~courtly.integrations.scrapy.refill`), completion and feedback
from the downloader's signals (:mod:`~courtly.integrations.scrapy.feedback`),
request serialisation (:mod:`~courtly.integrations.scrapy.payloads`) and the
``courtly/*`` figures (:mod:`~courtly.integrations.scrapy.stats`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any, Final

from scrapy import Request, Spider, signals
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.reactor import is_asyncio_reactor_installed
from twisted.internet.defer import Deferred

from courtly.clock import Clock, SystemClock
from courtly.errors import CrawlFailed, InvalidURL, StateError
from courtly.frontier import Frontier, FrontierConfig, PolitenessConfig, QueueConfig, QueuedUrl
from courtly.frontier.politeness import lost_answer_hold_s
from courtly.heap import FrozenHeap
from courtly.integrations.scrapy.codec import RequestCodec
from courtly.integrations.scrapy.engine import wake_engine
from courtly.integrations.scrapy.feedback import Feedback, own_errback
from courtly.integrations.scrapy.held import KEY_META, PARENT_META, SLOT_META, Add, Held
from courtly.integrations.scrapy.keys import key_for, level_for_priority, payload_id_of
from courtly.integrations.scrapy.loop_probe import LoopProbe
from courtly.integrations.scrapy.payloads import Payloads
from courtly.integrations.scrapy.pipeline import Pipeline
from courtly.integrations.scrapy.refill import Refill
from courtly.integrations.scrapy.robots import RobotsBook
from courtly.integrations.scrapy.settings import CourtlySettings
from courtly.integrations.scrapy.shared_gate import SharedIpGate
from courtly.integrations.scrapy.stats import SchedulerStats
from courtly.store.base import FrontierStore, RidesOutages
from courtly.store.memory import MemoryStore
from courtly.store.redis.address import is_redis_error, open_redis_store, shown
from courtly.url import host_of
from courtly.write_failure import os_error_text

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["KEY_META", "PARENT_META", "CourtlyScheduler"]

log = logging.getLogger(__name__)

CLOSE_GIVE_UP_S: Final = 5.0
"""How long the close waits out an unreachable store (a Redis server down: its calls
retry for 60 s otherwise), as a crawl's stop grace does: its leases expire, and what the
spider fetched but could not store is fetched again by the next run."""


class CourtlyScheduler:
    """Scrapy scheduler over a :class:`~courtly.frontier.Frontier`; see the module doc.

    Installed by :class:`~courtly.integrations.scrapy.CourtlyAddon`. ``clock`` is
    injectable; the store is opened in :meth:`open` (SQLite in ``COURTLY_STATE``,
    memory, or the shared crawl ``COURTLY_CRAWL_NAME`` in a Redis ``COURTLY_STORE``).
    """

    def __init__(
        self, crawler: Crawler, config: CourtlySettings, *, clock: Clock | None = None
    ) -> None:
        self.crawler = crawler
        self.config = config
        self._clock: Clock = clock or SystemClock()
        assert crawler.stats is not None
        self._stats = SchedulerStats(crawler.stats)
        self._fingerprinter = crawler.request_fingerprinter
        self._politeness = PolitenessConfig(
            min_delay_s=config.min_delay_s,
            delay_factor=config.delay_factor,
            max_delay_s=config.max_delay_s,
        )
        self._fconfig = FrontierConfig(
            queues=QueueConfig(max_back_queues=config.back_queues),
            politeness=self._politeness,
            lease_ttl_s=config.lease_ttl_s,
        )
        self._seen: set[bytes] = set()
        self._pipe: Pipeline | None = None
        self._refill: Refill | None = None
        self._feedback: Feedback | None = None
        self._payloads: Payloads | None = None
        self._task: asyncio.Task[None] | None = None
        self._heap = FrozenHeap(config.gc_freeze)
        self._probe: LoopProbe | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CourtlyScheduler:
        return cls(crawler, CourtlySettings.from_settings(crawler.settings))

    # -- the engine's calls (synchronous) ----------------------------------------

    def has_pending_requests(self) -> bool:
        if self._refill is not None and self._refill.failure is not None:
            return True  # the close with its reason is on its way: not idle, not "finished"
        return self._pipe is None or self._pipe.pending()

    def enqueue_request(self, request: Request) -> bool:
        """Accept ``request`` unless its fingerprint was enqueued before in this run
        (``dont_filter`` requests always go in). Duplicates from an earlier run are
        dropped later by the store's seen-set (``courtly/duplicates_resumed``)."""
        pipe, payloads, feedback = self._pipe, self._payloads, self._feedback
        assert pipe is not None and payloads is not None and feedback is not None, "not open"
        own_errback(request)  # a copy (redirect, retry) of a request handed to the engine
        meta = request.meta
        stale = meta.pop(KEY_META, None)
        if stale is not None:
            # A copy of a leased request (redirect, retry, replacement): our slot is not
            # its, and the original's response will not reach the spider.
            meta.pop(SLOT_META, None)
            feedback.copy_enqueued(stale)
        fingerprint = self._fingerprinter.fingerprint(request)
        if not request.dont_filter:
            if fingerprint in self._seen:
                self._stats.inc("duplicates")
                return False
            self._seen.add(fingerprint)
        try:
            key = key_for(request.url, fingerprint, dont_filter=request.dont_filter)
        except InvalidURL:
            pipe.bypass.append(request)  # not http(s): no host to be polite to
            self._stats.inc("bypassed")
            self._wake_engine(False)
            return True
        payload_id = payload_id_of(key)
        payload = payloads.encode(payload_id, request)
        pipe.adds.append(Add(self._entry(key, request), payload_id, payload))
        self._stats.inc("enqueued")
        self._poke()
        return True

    def next_request(self) -> Request | None:
        pipe = self._pipe
        if pipe is None:
            return None
        if pipe.bypass:
            return pipe.bypass.popleft()
        if not pipe.due:
            return None
        held = pipe.due.popleft()
        held.handed_at = self._clock.now()
        request = held.request
        request.meta[KEY_META] = held.lease.url
        request.meta[SLOT_META] = held.lease.host_key
        assert self._feedback is not None, "not open"
        self._feedback.handing(request, held.lease.url)
        return request

    # -- the middlewares' calls ---------------------------------------------------

    def child_yielded(self, request: Request, parent: Request) -> None:
        """The callback of ``parent``'s response yielded ``request`` (spider middleware)."""
        if self._feedback is not None:
            self._feedback.child_yielded(request, parent)

    def output_done(self, parent: Request) -> None:
        """The callback of ``parent``'s response has yielded everything (spider middleware)."""
        if self._feedback is not None:
            self._feedback.output_done(parent)

    def delivered(self, request: Request) -> None:
        """``request``'s response goes on to the spider (downloader middleware)."""
        if self._feedback is not None:
            self._feedback.delivered(request)

    def never_downloaded(self, request: Request) -> None:
        """A middleware answered, dropped or replaced ``request`` before the downloader
        (downloader middleware)."""
        if self._feedback is not None:
            self._feedback.never_downloaded(request)

    # -- lifecycle (Deferreds, as the engine expects) ----------------------------

    def open(self, spider: Spider) -> Deferred[None]:
        return deferred_from_coro(self._open(spider))

    def close(self, reason: str) -> Deferred[None]:
        return deferred_from_coro(self._close(reason))

    async def _open(self, spider: Spider) -> None:
        if not is_asyncio_reactor_installed():
            raise RuntimeError(
                "the courtly scheduler needs Scrapy's asyncio reactor (TWISTED_REACTOR = "
                "'twisted.internet.asyncioreactor.AsyncioSelectorReactor', the default)"
            )
        failure: StateError | CrawlFailed | None = None
        try:
            store = self._open_store()
        except StateError as error:  # locked, damaged, foreign: the spider is closed below
            store, failure = MemoryStore(self._fconfig.queues), error
        frontier = Frontier(store, self._fconfig, clock=self._clock)
        self._payloads = Payloads(RequestCodec(spider), self._stats)
        pipe = Pipeline(
            self._clock,
            self.config.per_ip,
            self._payloads,
            poke=self._poke,
            wake_engine=self._wake_engine,
            fetch_robots=self._fetch_robots,
        )
        robots = RobotsBook(
            self._clock, self._politeness, self.config.user_agent, shared=self.config.shared
        )
        refill = Refill(
            frontier,
            pipe,
            self.config,
            self._stats,
            robots,
            engine=self.crawler.engine,
            clock=self._clock,
            on_store_error=lambda: self._close_spider("courtly_store_error"),
        )
        if self.config.shared:
            from courtly.store.redis import RedisStore

            assert isinstance(store, RedisStore)
            # The per-IP cap holds across every process of the crawl.
            places = store.ip_gate(self.config.per_ip, self.config.lease_ttl_s)
            pipe.gate = SharedIpGate(places, refill.spawn, pipe.admitted)
        feedback = Feedback(pipe, self._stats, self.config.user_agent, self._clock)
        self._pipe, self._feedback, self._refill = pipe, feedback, refill
        sig = self.crawler.signals
        sig.connect(feedback.reached, signal=signals.request_reached_downloader)
        sig.connect(feedback.downloaded, signal=signals.response_downloaded)
        sig.connect(feedback.left, signal=signals.request_left_downloader)
        sig.connect(feedback.scheduled, signal=signals.request_scheduled)
        if failure is None:
            try:
                counts = await frontier.counts()  # the store's first call: it opens
            except Exception as error:
                failure = opening_failure(error, self.config.store)
                if failure is None:
                    raise
        if failure is not None:
            # One line, then a close once the engine is open (a close from inside its
            # open leaves Scrapy half open: tracebacks from its own close).
            log.error("the courtly frontier cannot be opened, closing the spider: %s", failure)
            refill.failure = failure
            self._stats.inc("store_errors")
            sig.connect(self._close_after_open, signal=signals.spider_opened)
            return
        self._stats.set("resumed_queued", counts.queued)
        loop = asyncio.get_running_loop()
        self._probe = LoopProbe(self._clock, loop.call_later, self._stats.loop_lag)
        self._probe.start()
        self._task = loop.create_task(refill.run())
        self._heap.freeze()  # everything made so far lives as long as the spider

    def _open_store(self) -> FrontierStore:
        queues = self._fconfig.queues
        config = self.config
        if config.shared:
            assert config.crawl_name is not None  # CourtlySettings checks it
            if config.state_dir is not None:
                log.warning("courtly: COURTLY_STATE is not used with a Redis COURTLY_STORE")
            return open_redis_store(config.store, config.crawl_name, queues)
        if config.store == "memory":
            return MemoryStore(queues)
        from courtly.store.sqlite import SqliteStore

        assert self.config.state_dir is not None
        try:
            self.config.state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:  # a file in the way, no permission: the spider is closed
            where = f"COURTLY_STATE {self.config.state_dir}"
            raise StateError(os_error_text(error, where)) from None
        # Hosts in flight when a previous run was killed have no stored next-allowed
        # time for that request: hold every host one minimum delay from the resume,
        # and the hosts leased at the kill as after a failure (their answer is lost).
        return SqliteStore(
            self.config.state_dir / "frontier.sqlite3",
            queues,
            resume_guard_s=self.config.min_delay_s,
            resume_in_flight_s=lost_answer_hold_s(self._politeness),
            synchronous="normal",
        )

    async def _close(self, reason: str) -> None:
        self._heap.thaw()
        refill, pipe, payloads = self._refill, self._pipe, self._payloads
        if refill is None or pipe is None or payloads is None:
            return
        refill.stop()
        frontier = refill.frontier
        if isinstance(frontier.store, RidesOutages):
            frontier.store.give_up_after(CLOSE_GIVE_UP_S)
        if self._probe is not None:
            self._probe.stop()
        if self._task is not None:
            await self._task
        # Leased but never handed out: give them back (their URLs stay at the head).
        for held in pipe.unhanded():
            pipe.give_back(held, None)
        if refill.failure is not None:
            # The store failed for good (a full disk): it refuses every step now, and
            # the next run resumes from its last commit, as after a kill.
            self._stats.set("in_memory_lost", payloads.in_memory)
            self._stats.publish()
            await frontier.aclose()
            log.info("courtly scheduler closed (%s) after the frontier failed", reason)
            return
        # Responses the spider had not finished with stay leased: the next run
        # fetches them again.
        try:
            await refill.drain(final=True)
            counts = await frontier.counts()
        except Exception as error:
            if not is_redis_error(error):
                raise
            # the store gave up (CLOSE_GIVE_UP_S): one line, no traceback into the engine
            log.error(
                "courtly scheduler closed (%s) with the Redis store unreachable (%s): its "
                "leases expire there, and what was not stored is fetched again",
                reason,
                error,
            )
            self._stats.inc("store_errors")
            self._stats.set("in_memory_lost", payloads.in_memory)
            self._stats.publish()
            with contextlib.suppress(Exception):
                await frontier.aclose()
            return
        self._stats.set("left_queued", counts.queued)
        self._stats.set("left_hosts_snoozed", counts.hosts_snoozed)
        self._stats.set("left_hosts_retired", counts.hosts_retired)
        self._stats.set("in_memory_lost", payloads.in_memory)
        self._stats.publish()
        await frontier.aclose()
        log.info("courtly scheduler closed (%s): %d URLs left queued", reason, counts.queued)

    # -- helpers ------------------------------------------------------------------

    def _entry(self, key: str, request: Request) -> QueuedUrl:
        """The frontier entry of ``request`` under ``key``."""
        depth = request.meta.get("depth", 0)
        return QueuedUrl(
            key,
            host_of(key),
            level_for_priority(request.priority, self._fconfig.queues.levels),
            depth if isinstance(depth, int) else 0,
        )

    def _fetch_robots(self, held: Held) -> None:
        assert self._refill is not None
        self._refill.fetch_robots(held)

    def _poke(self) -> None:
        if self._refill is not None:
            self._refill.work.poke()

    def _wake_engine(self, at_once: bool) -> None:
        if wake_engine(self.crawler.engine, at_once=at_once):
            self._stats.inc("engine_wakeups")
        else:
            self._stats.inc("engine_wake_unavailable")

    def _close_after_open(self) -> None:
        """The store could not be opened: close the spider now that it is open."""
        self._close_spider("courtly_store_error")

    def _close_spider(self, reason: str) -> None:
        engine: Any = self.crawler.engine
        close = getattr(engine, "close_spider_async", None)
        if close is not None:
            asyncio.get_running_loop().create_task(close(reason=reason))
        else:
            engine.close_spider(self.crawler.spider, reason)


def opening_failure(error: Exception, store: str) -> StateError | CrawlFailed | None:
    """``error``, raised by the store's first call, as the failure that closes the spider:
    a state file that cannot be used (:class:`StateError`), or a Redis server that does
    not answer (its client's error, named with the store's URL, password masked); ``None``
    for anything else (a defect: raised as it is)."""
    if isinstance(error, StateError | CrawlFailed):
        return error
    if is_redis_error(error):
        return CrawlFailed(f"the Redis store {shown(store)}: {error}")
    return None

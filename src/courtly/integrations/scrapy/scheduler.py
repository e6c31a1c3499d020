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

A background task (the *pump*) does the store I/O: it drains the add buffer into
the frontier (payloads as blobs first, then the keys), feeds completions back,
leases ready hosts, fetches a host's robots.txt under its lease when the copy is
unknown or stale, applies robots.txt and the per-IP cap, fills the due buffer and
wakes the engine (:func:`~courtly.integrations.scrapy.engine.wake_engine`). It
sleeps until the next host is due or new work arrives.

The end of a response (``request_left_downloader``, after success or failure)
completes the host's lease: the status (``response_downloaded``), a
``Retry-After`` and the time from entering the downloader to the end of the
transfer become an :class:`~courtly.frontier.Outcome`, and the host is due again
at that end plus courtly's politeness delay. Requests that never reach the
downloader (a middleware answered, dropped or replaced them) complete without a
request; anything else lost is covered by the lease's expiry.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from scrapy import Request, Spider, signals
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.reactor import is_asyncio_reactor_installed
from twisted.internet.defer import Deferred

from courtly.clock import Clock, SystemClock
from courtly.errors import InvalidURL, StateError
from courtly.fetch.guard import is_blocked_address
from courtly.frontier import (
    AddStatus,
    Frontier,
    FrontierConfig,
    Lease,
    Outcome,
    OutcomeKind,
    PolitenessConfig,
    QueueConfig,
    QueuedUrl,
    parse_retry_after,
)
from courtly.integrations.scrapy.codec import RequestCodec
from courtly.integrations.scrapy.engine import wake_engine
from courtly.integrations.scrapy.gate import IpGate
from courtly.integrations.scrapy.keys import (
    PAYLOAD_NAMESPACE,
    key_for,
    level_for_priority,
    payload_id_of,
)
from courtly.integrations.scrapy.robots import EngineFetcher, robots_outcome
from courtly.integrations.scrapy.settings import CourtlySettings
from courtly.integrations.scrapy.waker import Waker
from courtly.robots import (
    Authority,
    RobotsCache,
    RobotsDecision,
    authority_of,
    fetch_robots,
    robots_url_for,
)
from courtly.robots.persist import outcome_from_bytes, outcome_to_bytes
from courtly.store.base import FrontierStore
from courtly.store.memory import MemoryStore
from courtly.url import host_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["KEY_META", "PARENT_META", "CourtlyScheduler"]

log = logging.getLogger(__name__)

KEY_META: Final = "courtly_key"
"""Request meta key naming the lease a request was handed out under."""
PARENT_META: Final = "courtly_parent"
"""Request meta key naming the lease of the response whose callback yielded the request."""
_SLOT_META: Final = "download_slot"
_ROBOTS_NAMESPACE: Final = "robots"
_ADD_BATCH: Final = 2_000
_MAX_IDLE_S: Final = 1.0
"""The pump looks again at least this often, even with nothing to do."""
_LAG_SAMPLES: Final = 50_000
_SCRAPE_GRACE_S: Final = 30.0
"""A lease whose response the spider has not finished with after this long completes anyway."""


@dataclass(slots=True)
class _Held:
    """A leased request, from its lease to the end of its response (mutable state)."""

    lease: Lease
    request: Request
    payload_id: str
    stored: bool
    """Its payload is a blob in the store (cleared when the request completes)."""
    authority: Authority
    decision: RobotsDecision | None = None
    ip: str | None = None
    owed_at: float | None = None
    """When the host came due while the scheduler was waiting for it (start-lag statistic)."""
    gate_wait_s: float = 0.0
    """How long it waited for a place at its address (the per-IP cap)."""
    gated_at: float | None = None
    buffered_at: float | None = None
    """When it entered the due buffer."""
    handed_at: float | None = None
    """When :meth:`CourtlyScheduler.next_request` handed it to the engine."""
    started_at: float | None = None
    status: int | None = None
    retry_after_s: float | None = None
    outcome: Outcome | None = None
    """Set at the end of the response; the lease completes once the spider is done with it."""
    children: int = 0
    """Requests the callback yielded that have not reached :meth:`enqueue_request` yet."""
    output_done: bool = False


_Step = Literal["release", "complete"]
"""What the pump does with a lease: give it back, or complete it (the payload is cleared)."""


@dataclass(frozen=True, slots=True)
class _Add:
    entry: QueuedUrl
    payload_id: str
    payload: bytes | None


class CourtlyScheduler:
    """Scrapy scheduler over a :class:`~courtly.frontier.Frontier`; see the module doc.

    Installed by :class:`~courtly.integrations.scrapy.CourtlyAddon`. ``clock`` is
    injectable; the store is opened in :meth:`open` (SQLite in ``COURTLY_STATE``, or
    memory).
    """

    def __init__(
        self, crawler: Crawler, config: CourtlySettings, *, clock: Clock | None = None
    ) -> None:
        self.crawler = crawler
        self.config = config
        self._clock: Clock = clock or SystemClock()
        stats = crawler.stats
        assert stats is not None
        self._stats = stats
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
        self._frontier: Frontier | None = None
        self._codec: RequestCodec | None = None
        self._robots = RobotsCache()
        self._robots_restored: set[Authority] = set()
        self._seen: set[bytes] = set()
        self._in_memory: dict[str, Request] = {}
        self._adds: deque[_Add] = deque()
        self._completions: deque[tuple[_Held, Outcome | None, _Step]] = deque()
        self._due: deque[_Held] = deque()
        self._bypass: deque[Request] = deque()
        self._held: dict[str, _Held] = {}
        """Leased requests, from their lease to the end of their response."""
        self._scraping: dict[str, _Held] = {}
        """Requests whose response the spider is working on (still leased: the lease
        completes once the requests of the callback are enqueued)."""
        self._gate: IpGate[_Held] = IpGate(config.per_ip)
        self._ips: dict[str, str | None] = {}
        self._admitting = 0
        self._frontier_busy = True
        self._last_lease_at = float("-inf")
        self._lags: list[tuple[float, float, float, float]] = []
        """Per request that was owed: (due -> due buffer less the per-IP wait, -> engine,
        -> downloader, the per-IP wait), seconds."""
        self._scrape_lags: list[float] = []
        """Per response: seconds from its end to the end of its callback's output."""
        self._pump_steps = 0
        self._pump_busy_s = 0.0
        self._work: Waker | None = None
        self._stopping = False
        self._pump: asyncio.Task[None] | None = None
        self._children: set[asyncio.Task[None]] = set()
        self._group: asyncio.TaskGroup | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CourtlyScheduler:
        return cls(crawler, CourtlySettings.from_settings(crawler.settings))

    # -- the engine's calls (synchronous) ----------------------------------------

    def has_pending_requests(self) -> bool:
        return bool(
            self._bypass
            or self._due
            or self._adds
            or self._held
            or self._scraping
            or self._completions
            or self._admitting
            or self._frontier_busy
        )

    def enqueue_request(self, request: Request) -> bool:
        """Accept ``request`` unless its fingerprint was enqueued before in this run
        (``dont_filter`` requests always go in). Duplicates from an earlier run are
        dropped later by the store's seen-set (``courtly/duplicates_resumed``)."""
        meta = request.meta
        stale = meta.pop(KEY_META, None)
        if stale is not None:
            # A copy of a leased request (redirect, retry, replacement): our slot is not
            # its, and the original's response will not reach the spider.
            meta.pop(_SLOT_META, None)
            self._copy_enqueued(stale)
        fingerprint = self._fingerprinter.fingerprint(request)
        if not request.dont_filter:
            if fingerprint in self._seen:
                self._inc("duplicates")
                return False
            self._seen.add(fingerprint)
        try:
            key = key_for(request.url, fingerprint, dont_filter=request.dont_filter)
        except InvalidURL:
            self._bypass.append(request)  # not http(s): no host to be polite to
            self._inc("bypassed")
            self._wake_engine()
            return True
        payload_id = payload_id_of(key)
        assert self._codec is not None, "the scheduler is not open"
        payload = self._codec.encode(request)
        if payload is None:
            self._in_memory[payload_id] = request
            self._inc("unserializable")
        self._adds.append(_Add(self._entry(key, request), payload_id, payload))
        self._inc("enqueued")
        self._poke()
        return True

    def next_request(self) -> Request | None:
        if self._bypass:
            return self._bypass.popleft()
        if not self._due:
            return None
        held = self._due.popleft()
        held.handed_at = self._clock.now()
        request = held.request
        request.meta[KEY_META] = held.lease.url
        request.meta[_SLOT_META] = held.lease.host_key
        return request

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
        self._codec = RequestCodec(spider)
        self._frontier = Frontier(self._open_store(), self._fconfig, clock=self._clock)
        self._work = Waker()
        sig = self.crawler.signals
        sig.connect(self._reached, signal=signals.request_reached_downloader)
        sig.connect(self._downloaded, signal=signals.response_downloaded)
        sig.connect(self._left, signal=signals.request_left_downloader)
        sig.connect(self._scheduled, signal=signals.request_scheduled)
        counts = await self._frontier.counts()
        self._set("resumed_queued", counts.queued)
        self._pump = asyncio.get_running_loop().create_task(self._run())

    def _open_store(self) -> FrontierStore:
        queues = self._fconfig.queues
        if self.config.store == "memory":
            return MemoryStore(queues)
        from courtly.store.sqlite import SqliteStore

        assert self.config.state_dir is not None
        self.config.state_dir.mkdir(parents=True, exist_ok=True)
        # Hosts in flight when a previous run was killed have no stored next-allowed
        # time for that request: hold every host one minimum delay from the resume.
        return SqliteStore(
            self.config.state_dir / "frontier.sqlite3",
            queues,
            resume_guard_s=self.config.min_delay_s,
            synchronous="normal",
        )

    async def _close(self, reason: str) -> None:
        self._stopping = True
        self._poke()
        if self._pump is not None:
            await self._pump
        frontier = self._frontier
        if frontier is None:
            return
        # Leased but never handed out: give them back (their URLs stay at the head).
        for held in [*self._due, *self._gate.drain_waiting()]:
            self._give_back(held, None)
        self._due.clear()
        # Responses the spider had not finished with stay leased: the next run
        # fetches them again.
        await self._drain()
        counts = await frontier.counts()
        self._set("left_queued", counts.queued)
        self._set("left_hosts_snoozed", counts.hosts_snoozed)
        self._set("left_hosts_retired", counts.hosts_retired)
        self._set("in_memory_lost", len(self._in_memory))
        self._record_lags()
        await frontier.aclose()
        log.info("courtly scheduler closed (%s): %d URLs left queued", reason, counts.queued)

    # -- the pump -----------------------------------------------------------------

    async def _run(self) -> None:
        assert self._work is not None
        async with asyncio.TaskGroup() as group:
            self._group = group
            while not self._stopping:
                self._pump_steps += 1
                self._work.clear()
                wait_s = 0.0
                began = self._clock.now()
                try:
                    await self._drain()
                    wait_s = await self._fill()
                except StateError:
                    log.exception("the courtly frontier failed; closing the spider")
                    self._inc("store_errors")
                    self._stopping = True
                    self._close_spider("courtly_store_error")
                    break
                except Exception:
                    log.exception("courtly scheduler: pump step failed")
                    self._inc("pump_errors")
                    wait_s = _MAX_IDLE_S
                self._pump_busy_s += self._clock.now() - began
                await self._work.wait(wait_s)
            for task in list(self._children):
                task.cancel()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        assert self._group is not None
        task = self._group.create_task(self._guarded(coro))
        self._children.add(task)
        task.add_done_callback(self._children.discard)

    async def _guarded(self, coro: Coroutine[Any, Any, None]) -> None:
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("courtly scheduler: a lease step failed")
            self._inc("pump_errors")

    async def _drain(self) -> None:
        """Adds into the frontier (payloads first), then completions; one commit."""
        frontier = self._frontier
        assert frontier is not None
        store = frontier.store
        wrote = False
        while self._adds:
            batch = [self._adds.popleft() for _ in range(min(len(self._adds), _ADD_BATCH))]
            for add in batch:
                if add.payload is not None:
                    await store.put_blob(PAYLOAD_NAMESPACE, add.payload_id, add.payload)
            statuses = await frontier.add_queued([add.entry for add in batch])
            for add, status in zip(batch, statuses, strict=True):
                if status is not AddStatus.QUEUED:
                    self._in_memory.pop(add.payload_id, None)
                    label = "duplicates_resumed" if status is AddStatus.SEEN else status.name
                    self._inc(f"dropped/{label.lower()}")
            self._frontier_busy = True
            wrote = True
        while self._completions:
            held, outcome, step = self._completions.popleft()
            wrote = True
            if step == "release":
                if not await frontier.release(held.lease, outcome):
                    self._inc("fenced")
                continue
            result = await frontier.complete(held.lease, outcome or Outcome.no_request(0.0))
            if result is None:
                self._inc("fenced")
            elif held.stored:
                await store.put_blob(PAYLOAD_NAMESPACE, held.payload_id, b"")
        if wrote:
            await store.flush()

    async def _fill(self) -> float:
        """Lease ready hosts into the pipeline; seconds the pump may sleep."""
        frontier = self._frontier
        assert frontier is not None
        # Responses in the spider's hands count too: what a kill can make the next run
        # repeat stays within twice CONCURRENT_REQUESTS.
        outstanding = len(self._held) + len(self._scraping) + self._admitting
        room = 2 * self.config.concurrency - outstanding
        if room <= 0:
            return _MAX_IDLE_S
        now = self._clock.now()
        batch = await frontier.lease(room)
        previous, self._last_lease_at = self._last_lease_at, now
        for lease in batch.leases:
            due = lease.host.next_allowed_at
            owed = due if due > previous else None
            self._admitting += 1
            if self._resolved(lease.url):
                # No lookup to wait for: no task, no turn of the loop.
                await self._guarded(self._admit(lease, owed))
            else:
                self._spawn(self._admit(lease, owed))
        leased = len(batch.leases)
        if leased:
            self._inc("leases", leased)
        if leased == room:
            self._frontier_busy = True
            return 0.0
        if batch.next_ready_at is None:
            self._frontier_busy = bool(leased or self._adds)
            return _MAX_IDLE_S
        wait_s = batch.next_ready_at - now
        self._frontier_busy = bool(leased or self._adds) or wait_s <= self.config.max_wait_s
        return max(0.0005, min(wait_s, _MAX_IDLE_S))

    async def _admit(self, lease: Lease, owed_at: float | None) -> None:
        """Load a leased request, apply robots.txt and the address rules, queue it."""
        try:
            held = await self._load(lease, owed_at)
            if held is None:
                return
            self._held[lease.url] = held
            decision = self._robots.lookup(held.authority, self._clock.now())
            if decision is None and held.authority not in self._robots_restored:
                decision = await self._restore_robots(held.authority)
            held.decision = decision
            if decision is not None and not self._robots_allow(held, decision):
                return
            hostname = held.authority[1]
            ip = await self._resolve(hostname)
            if ip is not None and not self.config.allow_private_networks:
                reason = is_blocked_address(ip)
                if reason is not None:
                    self._inc(f"blocked/{reason.replace(' ', '_')}")
                    self._finish(held, Outcome.no_request(self._clock.now()))
                    return
            held.ip = ip
            if ip is None or self._gate.admit(ip, held):
                self._go(held)
            else:
                held.gated_at = self._clock.now()
        finally:
            self._admitting -= 1

    def _entry(self, key: str, request: Request) -> QueuedUrl:
        """The frontier entry of ``request`` under ``key``."""
        depth = request.meta.get("depth", 0)
        return QueuedUrl(
            key,
            host_of(key),
            level_for_priority(request.priority, self._fconfig.queues.levels),
            depth if isinstance(depth, int) else 0,
        )

    def _decode(self, data: bytes | None) -> Request | None:
        """A stored request, or ``None`` if there is none or it cannot be read back."""
        assert self._codec is not None
        try:
            return self._codec.decode(data) if data else None
        except Exception:
            log.exception("courtly scheduler: a stored request cannot be read back")
            return None

    async def _load(self, lease: Lease, owed_at: float | None) -> _Held | None:
        assert self._frontier is not None and self._codec is not None
        payload_id = payload_id_of(lease.url)
        request = self._in_memory.pop(payload_id, None)
        stored = request is None
        if request is None:
            data = await self._frontier.store.get_blob(PAYLOAD_NAMESPACE, payload_id)
            request = self._decode(data)
        if request is None:
            # Its payload was lost (kept in memory by a previous run, or never committed).
            self._inc("lost")
            await self._frontier.complete(lease, Outcome.no_request(self._clock.now()))
            return None
        try:
            authority = authority_of(request.url)
        except InvalidURL:
            await self._frontier.complete(lease, Outcome.no_request(self._clock.now()))
            return None
        return _Held(lease, request, payload_id, stored, authority, owed_at=owed_at)

    def _robots_allow(self, held: _Held, decision: RobotsDecision) -> bool:
        """Apply a robots.txt decision; ``False`` if the request was settled here."""
        now = self._clock.now()
        if decision.kind == "unreachable":
            # Disallow all *for now*: keep the request, hold the host until the retry.
            self._give_back(held, Outcome.deferred(now, max(0.0, decision.valid_until_at - now)))
            self._inc("robots_unreachable_deferred")
            return False
        if not decision.allowed(held.request.url, self.config.user_agent):
            self._inc("robots_disallowed")
            self._finish(held, Outcome.no_request(now))
            return False
        return True

    def _go(self, held: _Held) -> None:
        """``held`` has its place at its address: fetch robots.txt first, or hand it out."""
        if held.decision is None:
            self._spawn(self._fetch_robots(held))
            return
        held.buffered_at = self._clock.now()
        self._due.append(held)
        self._wake_engine()

    async def _fetch_robots(self, held: _Held) -> None:
        fetcher = EngineFetcher(
            self.crawler.engine, self._clock, self._politeness, held.lease.host_key
        )
        url = robots_url_for(held.authority)
        fetched = await fetch_robots(fetcher, url)
        self._inc("robots_fetches")
        now = self._clock.now()
        decision = self._robots.store(held.authority, fetched, now)
        saved = outcome_to_bytes(fetched, now)
        if saved is not None and self._frontier is not None:
            await self._frontier.store.put_blob(_ROBOTS_NAMESPACE, url, saved)
        outcome = robots_outcome(fetched, decision, self.config.user_agent, now)
        self._release_ip(held)
        self._give_back(held, outcome)

    async def _restore_robots(self, authority: Authority) -> RobotsDecision | None:
        """The robots.txt decision a previous run stored for ``authority``, if still fresh."""
        assert self._frontier is not None
        self._robots_restored.add(authority)
        data = await self._frontier.store.get_blob(_ROBOTS_NAMESPACE, robots_url_for(authority))
        if not data:
            return None
        try:
            fetched, fetched_at = outcome_from_bytes(data)
        except StateError as error:
            log.warning("%s", error)
            return None
        self._robots.store(authority, fetched, fetched_at)
        return self._robots.lookup(authority, self._clock.now())

    def _resolved(self, url: str) -> bool:
        """Whether the address of ``url``'s host is known (a literal, or looked up)."""
        try:
            host = authority_of(url)[1].strip("[]")
        except InvalidURL:
            return True
        if host in self._ips:
            return True
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return False
        return True

    async def _resolve(self, hostname: str) -> str | None:
        """The address Scrapy will connect to (the reactor's resolver), ``None`` if unknown."""
        host = hostname.strip("[]")
        try:
            return str(ipaddress.ip_address(host))
        except ValueError:
            pass
        if host in self._ips:
            return self._ips[host]
        from twisted.internet import reactor  # the installed one: importing it earlier installs one

        resolver: Any = reactor
        try:
            ip = str(await maybe_deferred_to_future(resolver.resolve(host)))
        except Exception:
            ip = None  # Scrapy's own lookup will fail too, as a network error
        self._ips[host] = ip
        return ip

    # -- feedback from the downloader (synchronous signal handlers) ---------------

    def _held_for(self, request: Request) -> _Held | None:
        key = request.meta.get(KEY_META)
        return self._held.get(key) if isinstance(key, str) else None

    def _reached(self, request: Request, **_: Any) -> None:
        held = self._held_for(request)
        if held is None:
            return
        now = self._clock.now()
        held.started_at = now
        owed, buffered, handed = held.owed_at, held.buffered_at, held.handed_at
        full = len(self._lags) >= _LAG_SAMPLES
        if owed is not None and buffered is not None and handed is not None and not full:
            pump = buffered - owed - held.gate_wait_s
            self._lags.append((pump, handed - buffered, now - handed, held.gate_wait_s))

    def _downloaded(self, response: Response, request: Request, **_: Any) -> None:
        held = self._held_for(request)
        if held is None:
            return
        held.status = response.status
        header = response.headers.get(b"Retry-After")
        if header is not None:
            held.retry_after_s = parse_retry_after(header.decode("latin-1"), self._clock.now())

    def _left(self, request: Request, **_: Any) -> None:
        held = self._held_for(request)
        if held is None or held.started_at is None:
            return
        now = self._clock.now()
        crawl_delay = held.decision.crawl_delay_s(self.config.user_agent) if held.decision else None
        if held.status is None:
            kind = OutcomeKind.NETWORK_ERROR
            outcome = Outcome(kind, held.started_at, now, crawl_delay_s=crawl_delay)
            self._inc("network_errors")
        else:
            outcome = Outcome.from_status(
                held.status,
                held.started_at,
                now,
                retry_after_s=held.retry_after_s,
                crawl_delay_s=crawl_delay,
            )
            if outcome.kind is OutcomeKind.THROTTLED:
                self._inc("throttled")
        self._inc("completed")
        self._release_ip(held)
        if held.status is None:
            self._finish(held, outcome)  # no response: nothing goes to the spider
            return
        # The host's next time is fixed now (from this end); the lease itself completes
        # once the callback's requests are enqueued, so a kill cannot lose them, and the
        # host keeps its place (its back queue holds those links before it is released).
        held.outcome = outcome
        self._held.pop(held.lease.url, None)
        self._scraping[held.lease.url] = held
        asyncio.get_running_loop().call_later(_SCRAPE_GRACE_S, self._settle, held, True)

    def child_yielded(self, request: Request, parent: Request) -> None:
        """The callback of ``parent``'s response yielded ``request`` (spider middleware)."""
        key = parent.meta.get(KEY_META)
        held = self._scraping.get(key) if isinstance(key, str) else None
        if held is not None:
            request.meta[PARENT_META] = key
            held.children += 1

    def output_done(self, parent: Request) -> None:
        """The callback of ``parent``'s response has yielded everything (spider middleware)."""
        key = parent.meta.get(KEY_META)
        held = self._scraping.get(key) if isinstance(key, str) else None
        if held is not None:
            held.output_done = True
            self._settle(held)

    def _scheduled(self, request: Request, **_: Any) -> None:
        """A request reached the engine's scheduling step (``request_scheduled``: sent
        before a handler such as the offsite filter may drop it, and just before
        :meth:`enqueue_request`)."""
        parent = request.meta.pop(PARENT_META, None)
        held = self._scraping.get(parent) if isinstance(parent, str) else None
        if held is not None:
            held.children -= 1
            self._settle(held)

    def _settle(self, held: _Held, late: bool = False, *, done: bool = False) -> None:
        """The spider is done with ``held``'s response once its callback has yielded
        everything and each request it yielded is enqueued (or after the grace)."""
        if held.outcome is None or self._scraping.get(held.lease.url) is not held:
            return
        if late:
            self._inc("completed_late")
        elif not done and (not held.output_done or held.children > 0):
            return
        if len(self._scrape_lags) < _LAG_SAMPLES:
            self._scrape_lags.append(self._clock.now() - held.outcome.ended_at)
        del self._scraping[held.lease.url]
        self._completions.append((held, held.outcome, "complete"))
        self._poke()

    def _copy_enqueued(self, key: str) -> None:
        scraping = self._scraping.get(key)
        if scraping is not None:
            self._settle(scraping, done=True)  # redirected or retried: no callback
        elif key in self._held:
            self._never_downloaded(key)

    def never_downloaded(self, request: Request) -> None:
        """A middleware answered, dropped or replaced ``request`` before the downloader:
        its lease ends with no request made (called by the downloader middleware)."""
        key = request.meta.get(KEY_META)
        if isinstance(key, str):
            self._never_downloaded(key)

    def _never_downloaded(self, key: str) -> None:
        held = self._held.get(key)
        if held is None or held.handed_at is None or held.started_at is not None:
            return
        self._inc("not_downloaded")
        self._release_ip(held)
        self._finish(held, Outcome.no_request(self._clock.now()))

    # -- helpers ------------------------------------------------------------------

    def _release_ip(self, held: _Held) -> None:
        if held.ip is None:
            return
        ip, held.ip = held.ip, None
        successor = self._gate.release(ip)
        if successor is not None:
            if successor.gated_at is not None:
                successor.gate_wait_s = self._clock.now() - successor.gated_at
            self._go(successor)

    def _finish(self, held: _Held, outcome: Outcome) -> None:
        """The lease is done: complete it (the request leaves the frontier)."""
        self._held.pop(held.lease.url, None)
        self._completions.append((held, outcome, "complete"))
        self._poke()

    def _give_back(self, held: _Held, outcome: Outcome | None) -> None:
        """Release the lease: the request returns to the head of its host's queue."""
        self._held.pop(held.lease.url, None)
        if not held.stored:
            self._in_memory[held.payload_id] = held.request
        self._completions.append((held, outcome, "release"))
        self._poke()

    def _poke(self) -> None:
        if self._work is not None:
            self._work.poke()

    def _wake_engine(self) -> None:
        if wake_engine(self.crawler.engine):
            self._inc("engine_wakeups")
        else:
            self._inc("engine_wake_unavailable")

    def _close_spider(self, reason: str) -> None:
        engine: Any = self.crawler.engine
        close = getattr(engine, "close_spider_async", None)
        if close is not None:
            asyncio.get_running_loop().create_task(close(reason=reason))
        else:
            engine.close_spider(self.crawler.spider, reason)

    def _record_lags(self) -> None:
        self._set("pump_steps", self._pump_steps)
        self._set("pump_busy_ms", round(1000 * self._pump_busy_s))
        self._set("start_lag_samples", len(self._lags))
        stages = {
            "start_lag": [sum(lag[:3]) for lag in self._lags],
            "start_lag_pump": [lag[0] for lag in self._lags],
            "start_lag_engine": [lag[1] for lag in self._lags],
            "start_lag_downloader": [lag[2] for lag in self._lags],
            "ip_wait": [lag[3] for lag in self._lags],
            "scrape": self._scrape_lags,
        }
        for stage, values in stages.items():
            if not values:
                continue
            values.sort()
            for name, q in (("p50", 0.5), ("p99", 0.99)):
                at = values[int(q * (len(values) - 1))]
                self._set(f"{stage}_{name}_ms", round(1000 * at, 1))
            self._set(f"{stage}_max_ms", round(1000 * values[-1], 1))

    def _inc(self, name: str, count: int = 1) -> None:
        self._stats.inc_value(f"courtly/{name}", count)

    def _set(self, name: str, value: object) -> None:
        self._stats.set_value(f"courtly/{name}", value)

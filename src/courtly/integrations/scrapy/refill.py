"""The refill task: the scheduler's store I/O, off the engine's calls.

One asyncio task per open scheduler. Each step leases the hosts already due (when
it has writes to make), drains the add buffer into the frontier (payloads as blobs
first, in one store step, then the keys) and the completion queue back into it
(on Redis, their round trips overlapped), with one store flush; then leases the
hosts that are ready or will be
within :data:`LEASE_AHEAD_S` (at most twice
``CONCURRENT_REQUESTS`` outstanding, responses in the spider's hands included),
loads each leased request, applies robots.txt (fetched under the host's lease
when the copy is unknown or stale) and the address check, and hands it to the
pipeline, which holds it until its host's time, then its address place, and
puts it in the due buffer, waking the engine. Then it sleeps on a
:class:`~courtly.integrations.scrapy.waker.Waker` until :data:`LEASE_AHEAD_S`
before the next host is due, or new work arrives (at most :data:`MAX_IDLE_S`).

Leasing ahead takes the refill task off the path from a host's time to its
request: at that time only a loop timer (the pipeline's holdback) and the
engine's poll are left, whatever the store I/O and the SQLite commit of the step
cost. The price: a host is leased up to that long before its request, and a
kill in between repeats nothing (no request was made).

On a store shared with other processes (Redis) the look-ahead is at most half
the min delay (:func:`~courtly.store.base.lease_ahead_s`), so that a host
one process completes is seen due by every process before any leases it again.
There the frontier says nothing is
waiting while they hold every host with work: then this process stays open as
long as the crawl has leases out (their callbacks may bring work), and asks for
leases every
:data:`SHARED_POLL_S` (another process's release is not signalled here).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Final

from scrapy import Request

from courtly.clock import Clock
from courtly.errors import CrawlFailed, InvalidURL, StateError
from courtly.fetch.guard import is_blocked_address
from courtly.frontier import AddStatus, Frontier, Lease, Outcome
from courtly.frontier.records import DelaySource
from courtly.integrations.scrapy.addresses import Addresses
from courtly.integrations.scrapy.held import Held, Step
from courtly.integrations.scrapy.keys import payload_id_of
from courtly.integrations.scrapy.pipeline import Pipeline
from courtly.integrations.scrapy.robots import RobotsBook
from courtly.integrations.scrapy.settings import CourtlySettings
from courtly.integrations.scrapy.stats import SchedulerStats
from courtly.integrations.scrapy.waker import Waker
from courtly.robots import RobotsDecision, authority_of
from courtly.store.base import SHARED_POLL_S, lease_ahead_s
from courtly.store.redis.address import is_redis_error

__all__ = ["LEASE_AHEAD_S", "MAX_IDLE_S", "SHARED_POLL_S", "Refill"]

log = logging.getLogger(__name__)

ADD_BATCH: Final = 2_000
MAX_IDLE_S: Final = 1.0
"""The task looks again at least this often, even with nothing to do."""
LEASE_AHEAD_S: Final = 0.25
"""Hosts due within this many seconds are leased now, on every store (the Redis store
leases as of its server's clock plus this, and maps the hosts' times onto this
process's clock no earlier than they are on the server's). A refill step late by less
than this delays no request."""


class Refill:
    """The refill task of one scheduler (see the module doc).

    ``engine`` is Scrapy's (robots.txt goes down its downloader); ``on_store_error``
    is called once if the store fails (the scheduler closes the spider).
    """

    def __init__(
        self,
        frontier: Frontier,
        pipeline: Pipeline,
        config: CourtlySettings,
        stats: SchedulerStats,
        robots: RobotsBook,
        *,
        engine: Any,
        clock: Clock,
        on_store_error: Callable[[], None],
    ) -> None:
        self.frontier = frontier
        self.pipeline = pipeline
        self.config = config
        self.stats = stats
        self.robots = robots
        self.work = Waker()
        self._engine = engine
        self._clock = clock
        self._on_store_error = on_store_error
        self._addresses = Addresses()
        self._last_lease_at = float("-inf")
        self._ahead_s = lease_ahead_s(LEASE_AHEAD_S, config.min_delay_s, shared=config.shared)
        """How far ahead this process leases: :data:`LEASE_AHEAD_S`, less on a shared
        crawl with a short min delay (:func:`~courtly.store.base.lease_ahead_s`)."""
        self._others_checked_at = float("-inf")
        self._stopping = False
        self.failure: StateError | CrawlFailed | None = None
        """The store's error that ended the task, if one did: the store refuses every
        step after it, so the close writes nothing more."""
        self._children: set[asyncio.Task[None]] = set()
        self._group: asyncio.TaskGroup | None = None

    def stop(self) -> None:
        """End the task after its current step."""
        self._stopping = True
        self.work.poke()

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            self._group = group
            while not self._stopping:
                self.work.clear()
                wait_s = 0.0
                began = self._clock.now()
                try:
                    if self.pipeline.adds or self.pipeline.completions:
                        # Hosts already due are leased before this step's writes (on
                        # Redis, adds and completions are round trips): a due host's
                        # request does not wait for them.
                        await self._fill()
                    await self.drain()
                    wait_s = await self._fill()
                except (StateError, CrawlFailed) as error:  # for good: a full disk, say
                    log.error("the courtly frontier failed, closing the spider: %s", error)
                    self.failure = error
                    self.stats.inc("store_errors")
                    self._stopping = True
                    self._on_store_error()
                    break
                except Exception as error:
                    if is_redis_error(error):  # the store's retries ran out: said in a line
                        log.error("courtly scheduler: the Redis store did not answer: %s", error)
                    else:
                        log.exception("courtly scheduler: pump step failed")
                    self.stats.inc("pump_errors")
                    wait_s = MAX_IDLE_S
                self.stats.pump_step(self._clock.now() - began)
                if not self.pipeline.pending():
                    # Nothing left: let the engine see it is idle now, not at its next
                    # heartbeat (5 s).
                    self.pipeline.wake_engine(False)
                await self.work.wait(wait_s)
            # Closing the gate first: its tasks end even if a cancellation is lost in a
            # store call (the Redis client on Python 3.11), and none starts again.
            self.pipeline.gate.close()
            for task in list(self._children):
                task.cancel()

    def fetch_robots(self, held: Held) -> None:
        """Fetch ``held``'s robots.txt in a task of its own (``held`` has its address place);
        once the task is stopping, give ``held`` back instead (no new exchange at close)."""
        if self._stopping:
            self.pipeline.release_ip(held)
            self.pipeline.give_back(held, None)
            return
        self.spawn(self._fetch_robots(held))

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` in a task of the refill task's group (errors logged and counted)."""
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
            self.stats.inc("pump_errors")

    async def drain(self, *, final: bool = False) -> None:
        """Adds into the frontier (payloads first, in one store step per batch), then
        completions; one flush. ``final`` (at close) also empties the blobs of the
        requests just completed, which otherwise waits for the next step's payloads."""
        frontier, pipe = self.frontier, self.pipeline
        store, payloads = frontier.store, pipe.payloads
        wrote = False
        while pipe.adds:
            batch = [pipe.adds.popleft() for _ in range(min(len(pipe.adds), ADD_BATCH))]
            await payloads.put_many(
                store, [(add.payload_id, add.payload) for add in batch if add.payload is not None]
            )
            statuses = await frontier.add_queued([add.entry for add in batch])
            for add, status in zip(batch, statuses, strict=True):
                if status is not AddStatus.QUEUED:
                    payloads.forget(add.payload_id)
                    label = "duplicates_resumed" if status is AddStatus.SEEN else status.name
                    self.stats.inc(f"dropped/{label.lower()}")
            pipe.frontier_busy = True
            wrote = True
        if pipe.completions:
            wrote = True
            ends = list(pipe.completions)
            pipe.completions.clear()
            if self.config.shared and len(ends) > 1:
                # Each is a round trip to Redis (its own host, its own lease): overlap them.
                results = await asyncio.gather(*map(self._end, ends), return_exceptions=True)
                errors = [r for r in results if isinstance(r, BaseException)]
                if errors:
                    raise errors[0]
            else:
                # A local store does not yield: no task, no turn of the loop.
                for end in ends:
                    await self._end(end)
        if final:
            await payloads.put_many(store, ())
        if wrote or final:
            await store.flush()

    async def _end(self, end: tuple[Held, Outcome | None, Step]) -> None:
        """Complete or give back one lease."""
        held, outcome, step = end
        frontier = self.frontier
        if step == "release":
            if not await frontier.release(held.lease, outcome):
                self.stats.inc("fenced")
            return
        result = await frontier.complete(held.lease, outcome or Outcome.no_request(0.0))
        if result is None:
            self.stats.inc("fenced")
        elif held.stored:
            self.pipeline.payloads.clear(held.payload_id)

    async def _fill(self) -> float:
        """Lease ready hosts into the pipeline; seconds the task may sleep."""
        pipe = self.pipeline
        # Responses in the spider's hands count too: what a kill can make the next run
        # repeat stays within twice CONCURRENT_REQUESTS.
        room = 2 * self.config.concurrency - pipe.outstanding()
        if room <= 0:
            return MAX_IDLE_S
        now = self._clock.now()
        ahead = self._ahead_s
        batch = await self.frontier.lease(room, ahead_s=ahead)
        if batch.leases and not self.config.shared:
            # The leases are on disk before any of their requests can be sent: after a
            # kill, the SQLite store holds those hosts as if their answers were lost.
            await self.frontier.store.flush()
        leased_at = self._clock.now()
        loaded = await pipe.payloads.load_many(
            self.frontier.store, [payload_id_of(lease.url) for lease in batch.leases]
        )
        # A host is owed (its request's start lag is sampled) if it was not leasable at
        # the previous lease.
        previous, self._last_lease_at = self._last_lease_at, now + ahead
        for lease, payload in zip(batch.leases, loaded, strict=True):
            due = lease.host.next_allowed_at
            freed = pipe.freed_at.pop(lease.host_key, None)
            owed = due if due > previous else None
            if owed is not None and freed is not None and freed > due:
                # Due while the spider still had its last response: the callback's
                # wait (courtly/scrape_*), not the scheduler's.
                owed = None
                self.stats.inc("start_lag_after_callback")
            pipe.admitting += 1
            if self._addresses.known(lease.url) and not self.config.shared:
                # No lookup to wait for, a store that does not yield: no task, no turn of
                # the loop. (On Redis each admission has round trips: they overlap.)
                await self._guarded(self._admit(lease, payload, owed, leased_at))
            else:
                self.spawn(self._admit(lease, payload, owed, leased_at))
        leased = len(batch.leases)
        if leased:
            self.stats.inc("leases", leased)
        if leased == room:
            pipe.frontier_busy = True
            return 0.0
        if batch.next_ready_at is None:
            busy = bool(leased or pipe.adds)
            if not self.config.shared:
                pipe.frontier_busy = busy
                return MAX_IDLE_S
            pipe.frontier_busy = busy or await self._crawl_has_leases(now)
            return SHARED_POLL_S
        wait_s = batch.next_ready_at - ahead - now
        busy = bool(leased or pipe.adds) or wait_s <= self.config.max_wait_s
        if not busy and self.config.shared:
            # The next host is far off, but another process's leases can bring one
            # sooner (a host it gives back, its completions' new links): a shared crawl
            # ends for this process only when no process holds a lease.
            busy = await self._crawl_has_leases(now)
        pipe.frontier_busy = busy
        return max(0.0005, min(wait_s, MAX_IDLE_S))

    async def _crawl_has_leases(self, now: float) -> bool:
        """Whether any process of the shared crawl holds a lease. A yes is trusted for
        :data:`MAX_IDLE_S`; a no is read afresh each time (it lets the spider close)."""
        if now - self._others_checked_at < MAX_IDLE_S:
            return True
        if (await self.frontier.counts()).leased > 0:
            self._others_checked_at = now
            return True
        return False

    async def _admit(
        self,
        lease: Lease,
        payload: tuple[Request, bool] | None,
        owed_at: float | None,
        leased_at: float,
    ) -> None:
        """A leased request (``payload``: loaded, or ``None`` if lost): apply robots.txt
        and the address rules, queue it."""
        pipe = self.pipeline
        try:
            held = await self._held(lease, payload, owed_at, leased_at)
            if held is None:
                return
            pipe.held[lease.url] = held
            decision = await self.robots.decision(self.frontier.store, held.authority)
            held.decision = decision
            if decision is not None and not self._robots_allow(held, decision):
                return
            ip = await self._addresses.resolve(held.authority[1])
            if ip is not None and not self.config.allow_private_networks:
                reason = is_blocked_address(ip)
                if reason is not None:
                    self.stats.inc(f"blocked/{reason.replace(' ', '_')}")
                    pipe.finish(held, Outcome.no_request(self._clock.now()))
                    return
            now = self._clock.now()
            if ip is not None and not pipe.holds.room(ip, now, pipe.gate.waiting_at(ip)):
                # As many leases at this address as this process can start soon: back
                # to the crawl untouched, its host held a moment (another process may
                # take it; this one's next lease step does not take it again at once).
                wait_s = pipe.holds.wait_s(ip, self._ahead_s)
                pipe.give_back(held, Outcome.deferred(now, wait_s, DelaySource.ADDRESS_BUSY))
                self.stats.inc("address_busy")
                return
            pipe.admit(held, ip)
        finally:
            pipe.admitting -= 1

    async def _held(
        self,
        lease: Lease,
        loaded: tuple[Request, bool] | None,
        owed_at: float | None,
        leased_at: float,
    ) -> Held | None:
        payload_id = payload_id_of(lease.url)
        if loaded is None:
            # Its payload was lost (kept in memory by a previous run, or never committed).
            self.stats.inc("lost")
            await self.frontier.complete(lease, Outcome.no_request(self._clock.now()))
            return None
        request, stored = loaded
        try:
            authority = authority_of(request.url)
        except InvalidURL:
            await self.frontier.complete(lease, Outcome.no_request(self._clock.now()))
            return None
        return Held(
            lease, request, payload_id, stored, authority, owed_at=owed_at, leased_at=leased_at
        )

    def _robots_allow(self, held: Held, decision: RobotsDecision) -> bool:
        """Apply a robots.txt decision; ``False`` if the request was settled here."""
        now = self._clock.now()
        if decision.kind == "unreachable":
            # Disallow all *for now*: keep the request, hold the host until the retry.
            outcome = Outcome.deferred(now, max(0.0, decision.valid_until_at - now))
            self.pipeline.give_back(held, outcome)
            self.stats.inc("robots_unreachable_deferred")
            return False
        if not decision.allowed(held.request.url, self.config.user_agent):
            self.stats.inc("robots_disallowed")
            self.pipeline.finish(held, Outcome.no_request(now))
            return False
        return True

    async def _fetch_robots(self, held: Held) -> None:
        outcome = await self.robots.fetch(
            self._engine, self.frontier.store, held.authority, held.lease.host_key
        )
        self.stats.inc("robots_fetches")
        self.pipeline.release_ip(held)
        self.pipeline.give_back(held, outcome)

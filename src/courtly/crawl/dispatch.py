"""The worker loop: one dispatcher leasing ready hosts for every free fetcher.

:class:`Fetches` is the set of fetch tasks in flight (one per lease) with the wake-up
event every completion sets; :func:`idle` is the one wait of the loop (a timeout on the
crawl's clock, or less when woken). The dispatcher itself is
:meth:`courtly.crawl.Crawler._dispatcher`, which reads the crawl's stop state.

The dispatcher leases hosts that are due within :data:`LEASE_AHEAD_S` (the lease step
and a task's start happen before the host's allowed time, not after it), and each
fetch task waits on the crawl's clock until its lease's ``host.next_allowed_at``
(:func:`wait_until`) before its first request: a request never starts before the
host's allowed time, and starts at it rather than a lease step and a turn of the loop
later. :class:`ReadyWaits` measures, from the crawler's own timestamps, the
fetcher-seconds lost while hosts were due: free fetchers not given to a due host, and
leased fetchers holding a due host whose request had not begun.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import math
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from courtly.clock import Clock, SystemClock
from courtly.events import Event, HostStateChanged
from courtly.frontier.frontier import Frontier
from courtly.frontier.politeness import delay_source, politeness_delay_s
from courtly.frontier.records import Lease, Outcome
from courtly.page_budget import FetchClaims

__all__ = ["LEASE_AHEAD_S", "Fetches", "ReadyWaits", "idle", "timer_delay_s", "wait_until"]

LEASE_AHEAD_S = 0.05
"""How far ahead of a host's allowed time the dispatcher may lease it (stores on the
crawl's clock only). The fetch task then waits for the allowed time itself: the lease
step, the task's start and the robots.txt lookup are done by then. A leased host's
fetcher is taken for at most this long before its request (it counts as in flight)."""


class Fetches:
    """The fetch tasks in flight, their leases and ``--max-pages`` claims.

    ``wake`` is set whenever a fetch ends (and by whoever else has news for the
    dispatcher); ``in_flight`` counts the tasks started and not yet ended.
    """

    def __init__(
        self, claims: FetchClaims, on_end: Callable[[asyncio.Task[None]], None] | None = None
    ) -> None:
        self.claims = claims
        self.wake = asyncio.Event()
        self.in_flight = 0
        self.tasks: set[asyncio.Task[None]] = set()
        self._lease_of: dict[asyncio.Task[None], Lease] = {}
        self.on_end = on_end
        """Called as each fetch task ends, when its slot is free (the crawler notes the
        moment for :class:`ReadyWaits`)."""

    def start(
        self,
        group: asyncio.TaskGroup,
        lease: Lease,
        process: Callable[[Lease], Coroutine[Any, Any, None]],
    ) -> asyncio.Task[None]:
        """Run ``process(lease)`` as a task of ``group``, holding a ``--max-pages`` unit;
        the task (it ends no earlier than the caller's next ``await``)."""
        self.in_flight += 1
        task = group.create_task(process(lease))
        self.tasks.add(task)
        self._lease_of[task] = lease
        self.claims.hold(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[None]) -> None:
        """A fetch task ended (done, failed, or cancelled even before it began): its slot
        is free. The set, the count and the wake-up change together."""
        self.tasks.discard(task)
        self.in_flight -= 1
        self._lease_of.pop(task, None)
        self.claims.ended(task)
        self.wake.set()
        if self.on_end is not None:
            self.on_end(task)

    def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()

    async def abandon(
        self, tasks: Sequence[asyncio.Task[None]], frontier: Frontier, clock: Clock
    ) -> None:
        """Cancel ``tasks`` and release their leases. The host waits the gap after the
        abandoned request as after any (a store shared with other crawlers, such as
        Redis, lets them lease it again at once otherwise)."""
        leases = [self._lease_of[t] for t in tasks if t in self._lease_of]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        now = clock.now()
        cfg = frontier.config.politeness
        for lease in leases:
            host = lease.host
            elapsed = max(0.0, now - lease.leased_at)  # a lease taken ahead may not have begun
            terms = (elapsed, host.crawl_delay_s, host.backoff_s, cfg)
            outcome = Outcome.deferred(now, politeness_delay_s(*terms), delay_source(*terms))
            with contextlib.suppress(Exception):  # fenced if it had ended: nothing to do
                await frontier.release(lease, outcome)


async def idle(wake: asyncio.Event, clock: Clock, wait_s: float) -> None:
    """Wait ``wait_s`` seconds on ``clock``, or less if ``wake`` is set."""
    if wake.is_set():
        return
    if type(clock) is SystemClock:
        # The system clock sleeps on the loop's timer: one timeout, no extra tasks.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(wait_s, 0.001)):
                await wake.wait()
        return
    waiter = asyncio.ensure_future(wake.wait())
    sleeper = asyncio.ensure_future(clock.sleep(wait_s))
    try:
        await asyncio.wait((waiter, sleeper), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        sleeper.cancel()


def timer_delay_s(left_s: float, monotonic_s: float) -> float:
    """The delay to give the loop's timer so that it fires ``left_s`` seconds from now on
    the monotonic clock, never before, and within the millisecond after.

    uvloop (libuv) keeps whole milliseconds: a timer started with ``delay`` fires once the
    loop's time, the monotonic clock truncated to the millisecond, reaches its truncated
    "now" at the start plus ``round(delay * 1000)``. So the delay asked for is the number
    of whole milliseconds from the truncated "now" to the first millisecond at or after
    the target: the timer can fire neither before the target (the loop's time never runs
    ahead of the monotonic clock) nor, on a free loop, more than a millisecond after it.
    A fixed slack of 1.5 ms on ``left_s`` did the same with 1.5-2.5 ms of lateness a wait.
    On asyncio's own loop (times kept as floats) the answer is at most a millisecond
    longer than ``left_s``. ``monotonic_s`` is ``time.monotonic()`` now (an argument, so
    that the rule is a pure function).
    """
    now_ms = monotonic_s * 1000.0
    return (math.ceil(now_ms + left_s * 1000.0) - math.floor(now_ms)) / 1000.0


async def wait_until(clock: Clock, at: float) -> None:
    """Return once ``clock.now() >= at``, never before (at once if it already is)."""
    if type(clock) is SystemClock:
        # A time to reach, no event to wait on: one timer, at the first millisecond of
        # the loop's clock at or after it (the wall clock is checked again on waking).
        while (left_s := at - clock.now()) > 0:  # noqa: ASYNC110
            await asyncio.sleep(timer_delay_s(left_s, time.monotonic()))
        return
    while (left_s := at - clock.now()) > 0:
        await clock.sleep(left_s)


class ReadyWaits:
    """Fetchers idle while a host was ready: fetcher-seconds, from the crawler's own times.

    A host is *waiting* from the moment it is due, the later of its previous lease's end
    in this run (the :class:`~courtly.events.HostStateChanged` of that completion or
    release) and that state's ``next_allowed_at``, until its next request begins. It
    waits only if it is back in line with a URL: ``holds`` (the store's
    :class:`~courtly.store.base.HeldHosts`, asked as the event arrives) says whether
    its back queue still has one; a host whose queue ran empty is not ready, and its
    later URLs are taken in through the front tier's draw. A host's first lease of the
    run (its robots.txt as a rule) is not measured, nor one taken in from the front tier.

    Two parts make a host's wait, both counted as time a fetcher could have been
    fetching for it:

    * *unleased*: while ``D`` hosts wait unleased and ``F`` fetchers are free (noted by
      :meth:`note` at every lease, fetch end, new fetcher count, address wait), the
      free fetchers are idle on ready hosts at a rate of ``min(F, D)``, shared equally
      by the waiting hosts. One free fetcher with 300 due hosts is one idle fetcher, not
      300: the other hosts wait for a fetcher, which is the fetcher count's limit (the
      autoscaler's business), not the dispatcher's;
    * *leased*: from the later of its due time and its lease (:meth:`leased`) to its
      request's start (:meth:`begun`), its own fetcher holds a due host and sends
      nothing (a lease taken ahead waits for its host's allowed time first: that part
      is not counted). This is the task's start, the robots.txt lookup and a timer that
      fires late on a busy loop.

    The sum over requests is the fetcher-seconds lost; each request's own figure is
    its share. Events, notes, leases and begins must come in time order (one loop, one
    clock); a time earlier than one already seen adds nothing. Hosts still waiting are
    kept (one float each) until their next lease or their next state.
    """

    def __init__(self, holds: Callable[[str], bool] | None = None) -> None:
        self._holds = holds
        self._at = float("-inf")
        """The time integrated up to."""
        self._free = 0
        self._share = 0.0
        """Each waiting host's share of the free fetchers, integrated (seconds)."""
        self._waiting: dict[str, float] = {}
        """Due, unleased hosts: ``_share`` when each became due."""
        self._pending: list[tuple[float, int, str]] = []
        """Hosts not yet due: (due at, sequence, host key); stale entries are skipped."""
        self._pending_seq: dict[str, tuple[int, float]] = {}
        """The live entry of each pending host: (sequence, due at)."""
        self._seq = 0
        self._leased: dict[str, tuple[float, float]] = {}
        """Leased waiting hosts: (the unleased part, counted from when)."""
        self.requests = 0
        """Requests measured (each one's host had a previous lease end in this run)."""
        self.waited = 0
        """Of those, requests that waited more than 1 ms while a fetcher could serve them."""
        self.wait_s = 0.0
        """Their summed wait, fetcher-seconds."""
        self.leased_wait_s = 0.0
        """Of ``wait_s``, the part after the lease (its own fetcher held, nothing sent)."""
        self.max_wait_s = 0.0

    def notify(self, event: Event) -> None:
        """A :class:`~courtly.events.HostStateChanged`: the host's lease ended; it waits
        from its due time if it is back in line with a URL."""
        if not isinstance(event, HostStateChanged):
            return
        state = event.state
        key = state.host_key
        self._advance(event.at)
        self._forget(key)
        if state.retired is not None or (self._holds is not None and not self._holds(key)):
            return
        due = max(event.at, state.next_allowed_at)
        if due <= self._at:
            self._waiting[key] = self._share
            return
        self._seq += 1
        self._pending_seq[key] = (self._seq, due)
        heapq.heappush(self._pending, (due, self._seq, key))

    def note(self, at: float, free: int) -> None:
        """``free`` fetchers are free from ``at`` on."""
        self._advance(at)
        self._free = max(0, free)

    def leased(self, lease: Lease, at: float) -> None:
        """``lease`` was taken at ``at``: its host no longer waits for a free fetcher."""
        self._advance(at)
        key = lease.host_key
        since = self._waiting.pop(key, None)
        if since is not None:
            self._leased[key] = (self._share - since, at)
            return
        pending = self._pending_seq.pop(key, None)
        if pending is not None:  # leased ahead of its due time: counted from that time
            self._leased[key] = (0.0, pending[1])

    def begun(self, host_key: str, at: float) -> None:
        """The request of ``host_key``'s lease begins at ``at``."""
        entry = self._leased.pop(host_key, None)
        if entry is None:
            return
        unleased, since = entry
        held_s = max(0.0, at - since)
        wait = unleased + held_s
        self.leased_wait_s += held_s
        self.requests += 1
        if wait > 0.001:
            self.waited += 1
        self.wait_s += wait
        self.max_wait_s = max(self.max_wait_s, wait)

    def _forget(self, key: str) -> None:
        self._waiting.pop(key, None)
        self._pending_seq.pop(key, None)
        self._leased.pop(key, None)

    def _advance(self, to: float) -> None:
        """Integrate the free fetchers' shares up to ``to``, taking in hosts falling due."""
        pending = self._pending
        while pending and pending[0][0] <= to:
            due, seq, key = heapq.heappop(pending)
            live = self._pending_seq.get(key)
            if live is None or live[0] != seq:
                continue  # stale: leased, requeued or let go since
            del self._pending_seq[key]
            self._integrate(due)
            self._waiting[key] = self._share
        self._integrate(to)

    def _integrate(self, to: float) -> None:
        dt = to - self._at
        if dt <= 0.0:
            return
        waiting = len(self._waiting)
        if waiting and self._free:
            self._share += dt * min(self._free, waiting) / waiting
        self._at = to

    def summary(self) -> dict[str, float]:
        """The figures as JSON values (``CrawlSnapshot.dispatch``)."""
        return {
            "requests_measured": self.requests,
            "requests_waited": self.waited,
            "fetchers_idle_while_ready_s": round(self.wait_s, 4),
            "fetchers_idle_while_ready_max_s": round(self.max_wait_s, 4),
            "fetchers_idle_while_ready_leased_s": round(self.leased_wait_s, 4),
        }

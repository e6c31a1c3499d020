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
later. :class:`ReadyWaits` measures, from the crawler's own timestamps, how long due
hosts waited for their request while a fetcher was free.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from courtly.clock import Clock, SystemClock
from courtly.events import Event, HostStateChanged
from courtly.frontier.frontier import Frontier
from courtly.frontier.politeness import politeness_delay_s
from courtly.frontier.records import Lease, Outcome
from courtly.page_budget import FetchClaims

__all__ = ["LEASE_AHEAD_S", "Fetches", "ReadyWaits", "idle", "wait_until"]

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
    ) -> None:
        """Run ``process(lease)`` as a task of ``group``, holding a ``--max-pages`` unit."""
        self.in_flight += 1
        task = group.create_task(process(lease))
        self.tasks.add(task)
        self._lease_of[task] = lease
        self.claims.hold(task)
        task.add_done_callback(self._done)

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
            gap = politeness_delay_s(elapsed, host.crawl_delay_s, host.backoff_s, cfg)
            with contextlib.suppress(Exception):  # fenced if it had ended: nothing to do
                await frontier.release(lease, Outcome.deferred(now, gap))


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


_TIMER_SLACK_S = 0.0015
"""Added to a timer on the system clock so that it fires after its time, not up to a
millisecond before it (the loop's timers keep whole milliseconds): one turn of the loop
for the wait, where a timer that fired early takes another (and a turn of a busy loop
costs more than the slack)."""


async def wait_until(clock: Clock, at: float) -> None:
    """Return once ``clock.now() >= at``, never before (at once if it already is)."""
    if type(clock) is SystemClock:
        # A time to reach, no event to wait on: the slack makes it one timer.
        while (left_s := at - clock.now()) > 0:  # noqa: ASYNC110
            await asyncio.sleep(left_s + _TIMER_SLACK_S)
        return
    while (left_s := at - clock.now()) > 0:
        await clock.sleep(left_s)


class ReadyWaits:
    """How long due hosts waited for their request while a fetcher was free.

    The crawler's own timestamps: :meth:`note` is told the number of free fetchers
    (allowed less in flight, fetches waiting for their address not counted) each time
    it may have changed: a lease, a fetch's end, a new fetcher count, a fetch starting
    to wait for its address. A host is *due* from the later of its lease's
    ``next_allowed_at`` and the moment its previous lease ended in this run (the
    :class:`~courtly.events.HostStateChanged` of that completion or release; a host's
    first lease of the run, its robots.txt as a rule, is not measured). When its
    request begins (:meth:`begun`), the part of ``[due, begin]`` during which at least
    one fetcher was free is the host's wait while a fetcher was idle: the dispatcher's
    own delay (a late wake-up, a busy loop, the lease step, the task's start), not the
    politeness rule's and not a lack of fetchers. Waits are summed (host-seconds).

    Free time is kept as a cumulative function of time with its breakpoints of the
    last ``history_s`` seconds: a wait that began earlier counts from there.
    """

    def __init__(self, *, history_s: float = 60.0) -> None:
        self._history_s = history_s
        self._marks: deque[tuple[float, float, bool]] = deque()
        """(at, free seconds up to at, free after at), oldest first."""
        self._times: deque[float] = deque()
        self._requeued_at: dict[str, float] = {}
        self.requests = 0
        """Requests measured (each one's host had a previous lease end in this run)."""
        self.waited = 0
        """Of those, requests that waited more than 1 ms while a fetcher was free."""
        self.wait_s = 0.0
        """Their summed wait while a fetcher was free, seconds."""
        self.max_wait_s = 0.0

    def notify(self, event: Event) -> None:
        """A :class:`~courtly.events.HostStateChanged`: the host is back in the frontier."""
        if isinstance(event, HostStateChanged):
            if event.state.retired is None:
                self._requeued_at[event.state.host_key] = event.at
            else:
                self._requeued_at.pop(event.state.host_key, None)

    def note(self, at: float, free: int) -> None:
        """``free`` fetchers are free from ``at`` on."""
        is_free = free > 0
        marks = self._marks
        if marks:
            last_at, total, was_free = marks[-1]
            if was_free == is_free:
                return
            at = max(at, last_at)
            total += at - last_at if was_free else 0.0
        else:
            total = 0.0
        marks.append((at, total, is_free))
        self._times.append(at)
        while len(marks) > 2 and marks[1][0] < at - self._history_s:
            marks.popleft()
            self._times.popleft()

    def free_s(self, at: float) -> float:
        """Seconds with a free fetcher up to ``at`` (from the oldest breakpoint kept)."""
        marks = self._marks
        if not marks:
            return 0.0
        i = bisect.bisect_right(self._times, at) - 1
        if i < 0:
            return marks[0][1]
        mark_at, total, is_free = marks[i]
        return total + (at - mark_at if is_free else 0.0)

    def due_at(self, lease: Lease) -> float | None:
        """When ``lease``'s host became due (``None``: its first lease of the run)."""
        requeued = self._requeued_at.pop(lease.host_key, None)
        if requeued is None:
            return None
        return max(requeued, lease.host.next_allowed_at)

    def begun(self, due: float | None, at: float) -> None:
        """A request of a host due at ``due`` (see :meth:`due_at`) begins at ``at``."""
        if due is None:
            return
        self.requests += 1
        wait = max(0.0, self.free_s(at) - self.free_s(min(due, at)))
        if wait > 0.001:
            self.waited += 1
        self.wait_s += wait
        self.max_wait_s = max(self.max_wait_s, wait)

    def summary(self) -> dict[str, float]:
        """The figures as JSON values (``CrawlSnapshot.dispatch``)."""
        return {
            "requests_measured": self.requests,
            "requests_waited": self.waited,
            "fetchers_idle_while_ready_s": round(self.wait_s, 4),
            "fetchers_idle_while_ready_max_s": round(self.max_wait_s, 4),
        }

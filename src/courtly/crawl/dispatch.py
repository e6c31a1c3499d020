"""The worker loop: one dispatcher leasing ready hosts for every free fetcher.

:class:`Fetches` is the set of fetch tasks in flight (one per lease) with the wake-up
event every completion sets; :func:`idle` is the one wait of the loop (a timeout on the
crawl's clock, or less when woken). The dispatcher itself is
:meth:`courtly.crawl.Crawler._dispatcher`, which reads the crawl's stop state.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from courtly.clock import Clock, SystemClock
from courtly.frontier.frontier import Frontier
from courtly.frontier.politeness import politeness_delay_s
from courtly.frontier.records import Lease, Outcome
from courtly.page_budget import FetchClaims

__all__ = ["Fetches", "idle"]


class Fetches:
    """The fetch tasks in flight, their leases and ``--max-pages`` claims.

    ``wake`` is set whenever a fetch ends (and by whoever else has news for the
    dispatcher); ``in_flight`` counts the tasks started and not yet ended.
    """

    def __init__(self, claims: FetchClaims) -> None:
        self.claims = claims
        self.wake = asyncio.Event()
        self.in_flight = 0
        self.tasks: set[asyncio.Task[None]] = set()
        self._lease_of: dict[asyncio.Task[None], Lease] = {}

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
            gap = politeness_delay_s(now - lease.leased_at, host.crawl_delay_s, host.backoff_s, cfg)
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

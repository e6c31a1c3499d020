"""A request's last allowed start: the lease it is made under must still hold then.

A crawl's fetch task runs one lease; it sets :data:`REQUEST_NOT_AFTER` (a
:class:`contextvars.ContextVar`: each task has its own value, so each lease its own
deadline) to the lease's expiry less :data:`LEASE_MARGIN_S`. :class:`~courtly.fetch.
HttpFetcher` reads it once it holds its address's slot, right before the request goes
out, and raises ``FetchError("lease_expired")`` instead of sending when that time has
passed. A lease that waited past its expiry (a process starved of CPU, a long wait for
its address behind other hosts) may have been reclaimed and handed to another fetch,
which may be making a request to the same host now: sending anyway would put two
requests to one host back to back. Unset (``None``, the default) means no deadline: a
fetch made outside a lease (the tests, a tool) is never refused.

Times are the fetcher's clock's (epoch seconds), the clock the crawl's leases are
mapped onto.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Final

from courtly.clock import Clock
from courtly.errors import FetchError

__all__ = ["LEASE_MARGIN_S", "REQUEST_NOT_AFTER", "check_not_after"]

LEASE_MARGIN_S: Final = 1.0
"""Seconds before a lease's expiry after which no request starts under it: more than a
lease-ahead (a store reclaims a lease that much before its expiry) and the error of
mapping a Redis server's times onto this process's clock."""

REQUEST_NOT_AFTER: ContextVar[float | None] = ContextVar("courtly_request_not_after", default=None)
"""The time (epoch seconds) after which the current task makes no request (module doc)."""


def check_not_after(clock: Clock) -> None:
    """Raise ``FetchError("lease_expired")`` if the current task's deadline has passed by
    ``clock``; nothing if it has none (the clock is then not read)."""
    not_after = REQUEST_NOT_AFTER.get()
    if not_after is None:
        return
    now_at = clock.now()
    if now_at > not_after:
        raise FetchError(
            "lease_expired",
            f"the lease ran out before its request could start ({now_at - not_after:.3f} s "
            "past its last allowed start): not sent",
        )

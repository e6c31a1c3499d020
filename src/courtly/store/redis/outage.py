"""How an outage of the Redis server is told in the log: once as it starts, then every
few seconds while it lasts, and once when it is over.

A store retries each of its calls while the server is unreachable
(:meth:`~courtly.store.redis.store.RedisStore._retrying`); with dozens of calls in flight,
each backing off to a retry every 0.25 s, a line per retry was about 20 warnings a second
for as long as the server was down. This keeps the first and then one every
:data:`EVERY_S` seconds, with how long the outage has lasted, and says when the server
answers again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["EVERY_S", "OutageLog"]

EVERY_S = 5.0
"""Seconds between two warnings of one outage."""


class OutageLog:
    """The log lines of the store's outages (see the module doc); ``clock``: seconds."""

    def __init__(
        self,
        log: logging.Logger,
        *,
        every_s: float = EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self._every_s = every_s
        self._clock = clock
        self._since: float | None = None
        self._warned_at = 0.0

    def failed(self, error: BaseException, retry_in_s: float | None) -> None:
        """A call found the server unreachable and retries in ``retry_in_s`` seconds
        (``None``: it does not retry; what it would have done is undone by the server,
        a slot that frees itself, say)."""
        now = self._clock()
        if self._since is None:
            self._since, self._warned_at = now, now
            if retry_in_s is None:
                self._log.warning("redis unavailable: %s", error)
            else:
                self._log.warning("redis unavailable, retrying in %.2f s: %s", retry_in_s, error)
        elif now - self._warned_at >= self._every_s:
            self._warned_at = now
            self._log.warning(
                "redis unavailable for %.0f s, still retrying: %s", now - self._since, error
            )
        else:
            self._log.debug("redis unavailable (retry in %s s): %s", retry_in_s, error)

    def answered(self) -> None:
        """A call went through: an outage, if one was on, is over."""
        if self._since is not None:
            self._log.warning("redis answers again after %.1f s", self._clock() - self._since)
            self._since = None

"""Per-authority robots.txt cache: when a copy may be used and what to obey meanwhile.

Pure time logic: every method takes ``now_at`` (epoch seconds) and nothing
reads a clock or performs I/O; the fetch itself is the caller's (through the
host's politeness lease), or goes through :meth:`RobotsCache.get_or_fetch`,
which only coalesces concurrent callers around a fetch function they supply.

Policy, per authority ``(scheme, host, port)``:

* ``ok`` (a parsed file) and ``unavailable`` (allow all) are used for
  ``ttl_s`` (default 24 h); after that :meth:`~RobotsCache.lookup` returns
  ``None``: the entry is stale and must be refetched.
* ``unreachable``: retry after ``retry_initial_s`` (60 s), doubling on each
  consecutive failure up to ``retry_max_s`` (1 h), or later if the server sent
  a ``Retry-After``. Until then the decision is:

  - ``stale``: the last good parsed copy, however old, if there is one;
  - ``outage``: allow all, once the outage (counted from its first failure)
    has lasted ``outage_allow_after_s`` (30 days) with no good copy (RFC 9309
    §2.3.1.4 permits treating it as unavailable); decided when a failure is
    stored, so it starts at most one retry interval late;
  - ``unreachable``: disallow all, otherwise.

  A later ``ok`` or ``unavailable`` ends the outage.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from courtly.robots.authority import Authority
from courtly.robots.fetch import RobotsFetchOutcome
from courtly.robots.rules import RobotsRules

__all__ = ["DecisionKind", "RobotsCache", "RobotsDecision"]

DecisionKind = Literal["ok", "unavailable", "unreachable", "stale", "outage"]

_DAY_S = 86_400.0


@dataclass(frozen=True, slots=True)
class RobotsDecision:
    """What to obey for one authority until ``valid_until_at``.

    ``rules`` are the effective rules (parsed, allow-all or disallow-all);
    ``fetched_at`` is when those rules were fetched (``None`` for the
    synthetic allow-all/disallow-all of an outage); ``decided_at`` when this
    decision was stored.
    """

    kind: DecisionKind
    rules: RobotsRules
    decided_at: float
    valid_until_at: float
    fetched_at: float | None

    def allowed(self, url: str, user_agent: str) -> bool:
        """May ``user_agent`` fetch ``url`` under this decision?"""
        return self.rules.allowed(url, user_agent)

    def crawl_delay_s(self, user_agent: str) -> float | None:
        """The robots ``Crawl-delay`` of the effective rules, seconds (``None`` if unset)."""
        return self.rules.crawl_delay_s(user_agent)

    @property
    def sitemaps(self) -> list[str]:
        """The ``Sitemap`` URLs of the effective rules."""
        return self.rules.sitemaps


@dataclass(frozen=True, slots=True)
class _Entry:
    decision: RobotsDecision
    good_rules: RobotsRules | None
    good_fetched_at: float | None
    outage_since_at: float | None
    failures: int


class _FetchAbandoned(Exception):
    """The caller that owned an in-flight fetch went away; a waiter should take over."""


class RobotsCache:
    """Cached robots decisions keyed by authority; see the module doc for the policy."""

    def __init__(
        self,
        *,
        ttl_s: float = _DAY_S,
        retry_initial_s: float = 60.0,
        retry_max_s: float = 3_600.0,
        outage_allow_after_s: float = 30 * _DAY_S,
    ) -> None:
        if ttl_s <= 0 or retry_initial_s <= 0 or retry_max_s < retry_initial_s:
            raise ValueError(
                "ttl_s and retry_initial_s must be > 0, retry_max_s >= retry_initial_s"
            )
        self.ttl_s = ttl_s
        self.retry_initial_s = retry_initial_s
        self.retry_max_s = retry_max_s
        self.outage_allow_after_s = outage_allow_after_s
        self._entries: dict[Authority, _Entry] = {}
        self._in_flight: dict[Authority, asyncio.Future[RobotsDecision]] = {}
        self._allow_all = RobotsRules.allow_all()
        self._disallow_all = RobotsRules.disallow_all()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, authority: object) -> bool:
        return authority in self._entries

    def lookup(self, authority: Authority, now_at: float) -> RobotsDecision | None:
        """The decision in force at ``now_at``, or ``None`` if a (re)fetch is due."""
        entry = self._entries.get(authority)
        if entry is None or now_at >= entry.decision.valid_until_at:
            return None
        return entry.decision

    def retry_delay_s(self, failures: int) -> float:
        """Back-off after ``failures`` consecutive unreachable fetches (1 = the initial delay)."""
        exponent = min(max(failures, 1) - 1, 60)
        return float(min(self.retry_initial_s * 2.0**exponent, self.retry_max_s))

    def store(
        self, authority: Authority, outcome: RobotsFetchOutcome, now_at: float
    ) -> RobotsDecision:
        """Record a fetch outcome obtained at ``now_at``; returns the decision now in force."""
        previous = self._entries.get(authority)
        if outcome.kind == "ok":
            rules = outcome.rules if outcome.rules is not None else self._allow_all
            decision = RobotsDecision("ok", rules, now_at, now_at + self.ttl_s, now_at)
            entry = _Entry(decision, rules, now_at, None, 0)
        elif outcome.kind == "unavailable":
            decision = RobotsDecision(
                "unavailable", self._allow_all, now_at, now_at + self.ttl_s, now_at
            )
            entry = _Entry(decision, None, None, None, 0)
        else:
            in_outage = previous is not None and previous.outage_since_at is not None
            failures = previous.failures + 1 if previous is not None and in_outage else 1
            outage_since_at = (
                previous.outage_since_at
                if previous is not None and previous.outage_since_at is not None
                else now_at
            )
            delay_s = self.retry_delay_s(failures)
            asked_s = outcome.retry_after_s(now_at)
            if asked_s is not None:
                delay_s = max(delay_s, min(asked_s, self.retry_max_s))
            entry = self._failing(previous, failures, outage_since_at, now_at, now_at + delay_s)
            decision = entry.decision
        self._entries[authority] = entry
        return decision

    def failure(self, authority: Authority) -> tuple[int, float] | None:
        """``(failures, outage_since_at)`` while ``authority``'s robots.txt is unreachable
        (the decision's ``valid_until_at`` is when to try again); else ``None``."""
        entry = self._entries.get(authority)
        if entry is None or entry.outage_since_at is None:
            return None
        return entry.failures, entry.outage_since_at

    def restore_failure(
        self,
        authority: Authority,
        *,
        failures: int,
        outage_since_at: float,
        retry_at: float,
        decided_at: float,
    ) -> None:
        """Take in a record of failed fetches of ``authority``'s robots.txt made elsewhere
        (another process of a shared crawl, or an earlier run): their count, when the
        outage began and when to try again, as :meth:`failure` gives them. Ignored if what
        this cache holds was decided at or after ``decided_at``; a good copy it holds is
        kept (obeyed as ``stale``), and the next failure here counts on from ``failures``."""
        previous = self._entries.get(authority)
        if previous is not None and previous.decision.decided_at >= decided_at:
            return
        self._entries[authority] = self._failing(
            previous, max(1, failures), outage_since_at, decided_at, retry_at
        )

    def _failing(
        self,
        previous: _Entry | None,
        failures: int,
        outage_since_at: float,
        now_at: float,
        valid_until_at: float,
    ) -> _Entry:
        """The entry of an unreachable robots.txt: the last good copy if there is one
        (``stale``), allow-all once the outage is long enough (``outage``), else
        disallow-all (``unreachable``), until ``valid_until_at``."""
        good_rules = previous.good_rules if previous is not None else None
        good_fetched_at = previous.good_fetched_at if previous is not None else None
        if good_rules is not None:
            decision = RobotsDecision("stale", good_rules, now_at, valid_until_at, good_fetched_at)
        elif now_at - outage_since_at >= self.outage_allow_after_s:
            decision = RobotsDecision("outage", self._allow_all, now_at, valid_until_at, None)
        else:
            decision = RobotsDecision(
                "unreachable", self._disallow_all, now_at, valid_until_at, None
            )
        return _Entry(decision, good_rules, good_fetched_at, outage_since_at, failures)

    def forget(self, authority: Authority) -> None:
        """Drop everything known about ``authority`` (no error if unknown)."""
        self._entries.pop(authority, None)

    def prune(self, now_at: float, *, keep_stale_s: float = _DAY_S) -> int:
        """Drop entries that have needed a refetch for more than ``keep_stale_s``; returns how many.

        An entry dropped loses its last good copy (so a later outage starts
        from disallow-all). Entries being fetched are kept.
        """
        doomed = [
            authority
            for authority, entry in self._entries.items()
            if now_at - entry.decision.valid_until_at > keep_stale_s
            and authority not in self._in_flight
        ]
        for authority in doomed:
            del self._entries[authority]
        return len(doomed)

    def is_fetching(self, authority: Authority) -> bool:
        """True while a :meth:`get_or_fetch` for ``authority`` is fetching."""
        return authority in self._in_flight

    async def get_or_fetch(
        self,
        authority: Authority,
        fetch: Callable[[], Awaitable[RobotsFetchOutcome]],
        now_at: float,
    ) -> RobotsDecision:
        """The decision for ``authority``, fetching at most once however many callers wait.

        If :meth:`lookup` has a decision it is returned. Otherwise the first
        caller runs ``fetch()`` and stores its outcome at ``now_at``; callers
        arriving meanwhile await that same result. If the fetching caller is
        cancelled or its ``fetch`` raises, the exception goes to that caller
        only and one waiter takes over with its own ``fetch``.
        """
        while True:
            decision = self.lookup(authority, now_at)
            if decision is not None:
                return decision
            pending = self._in_flight.get(authority)
            if pending is None:
                break
            try:
                return await asyncio.shield(pending)
            except _FetchAbandoned:
                continue
        future: asyncio.Future[RobotsDecision] = asyncio.get_running_loop().create_future()
        self._in_flight[authority] = future
        try:
            outcome = await fetch()
            decision = self.store(authority, outcome, now_at)
        except BaseException:
            future.set_exception(_FetchAbandoned())
            future.exception()  # retrieved here, so an unwaited future logs nothing
            raise
        finally:
            del self._in_flight[authority]
        future.set_result(decision)
        return decision

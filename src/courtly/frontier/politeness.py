"""Politeness policy: pure functions of plain values.

The gap rule (DESIGN.md): the next request to a host starts no earlier than the
end of the previous response plus::

    max(min_delay_s, delay_factor × last fetch duration, robots Crawl-delay, back-off)

The first two terms are capped by ``max_delay_s``; robots' Crawl-delay and
server-requested back-off (``Retry-After``) are not capped by it: they are the
server's own words. Back-off grows from three signals: 429/503 (with
``Retry-After`` if given), error streaks, and a doubling of latency against the
host's baseline. A host whose errors keep coming is *parked* for growing
intervals and, after ``retire_after_parks`` parkings, *retired* (``"failing"``).

A 429 or 503 that carries ``Retry-After`` is the server's own schedule: the host
waits exactly that long (never less than the gap rule), and such *guided* answers
park the host only after ``park_after_throttles`` of them in a row (a server that
never lets the crawler in), not after ``park_after_errors``: a server working
through an overload window is asked again when it said, as it asked, rather than
left for a minute it did not ask for. Failures that carry no such guidance (5xx,
429/503 without ``Retry-After``, no response) park after ``park_after_errors``;
the streak counts both kinds, so guided answers followed by unguided ones park at
the lower threshold.

A host is also retired when no request to it can succeed: ``"blocked"`` at once
when the address guard refuses its address (:attr:`OutcomeKind.BLOCKED`), and
``"dead"`` after ``dead_after_failures`` consecutive requests with no response at
all (connection refused, DNS failure, timeout: :attr:`OutcomeKind.NETWORK_ERROR`),
spaced by the error back-off (pages: 5, 10, 20 s) or, for robots.txt, by the
robots.txt retry interval (``robots_retry_s``, doubling: 1, 2, 4 min); with the
defaults a host that never answers is retired after 4 attempts over about 7 minutes.

Nothing here reads a clock: every time comes in as an argument.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime

from courtly.frontier.records import DelaySource, HostState, Outcome, OutcomeKind

__all__ = [
    "PolitenessConfig",
    "apply_outcome",
    "delay_source",
    "is_parked",
    "lost_answer_hold_s",
    "parse_retry_after",
    "politeness_delay_s",
]


@dataclass(frozen=True, slots=True)
class PolitenessConfig:
    """Politeness knobs. Durations in seconds."""

    min_delay_s: float = 1.0
    """Floor of the gap between two requests to one host."""
    delay_factor: float = 2.0
    """Multiple of the last fetch's duration: a slow server earns a longer pause."""
    max_delay_s: float = 60.0
    """Cap on the min-delay/delay-factor terms (not on Crawl-delay or Retry-After)."""
    max_retry_after_s: float = 86_400.0
    """A longer ``Retry-After`` is clamped to this (and the host is then parked)."""
    error_backoff_s: float = 5.0
    """Back-off after the first failure; doubles with each further one."""
    max_backoff_s: float = 600.0
    """Cap on error-streak back-off."""
    latency_alpha: float = 0.2
    """Weight of a new sample in the latency baseline (exponential mean)."""
    latency_doubling: float = 2.0
    """A fetch this many times slower than the baseline counts as the host struggling."""
    min_latency_for_backoff_s: float = 0.05
    """Latency signals are ignored below this baseline (loopback jitter is not a struggle)."""
    park_after_errors: int = 5
    """This many consecutive failures park the host."""
    park_after_throttles: int = 20
    """This many consecutive 429/503 answers that each carried ``Retry-After`` (each
    waited out exactly) park the host; see the module doc."""
    park_s: float = 60.0
    """First parking interval; doubles with each parking."""
    retire_after_parks: int = 4
    """After this many parkings without a success in between the host is retired."""
    dead_after_failures: int = 4
    """This many consecutive requests with no response retire the host as ``"dead"``."""
    robots_retry_s: float = 60.0
    """First retry of an unreachable robots.txt; doubles with each failure (up to 1 h)."""
    max_attempts: int = 3
    """Attempts at one page URL whose fetch fails in a retryable way (no response, 5xx,
    429) before it is catalogued as failed; see :mod:`courtly.frontier.retry`."""

    def __post_init__(self) -> None:
        for name in (
            "min_delay_s",
            "delay_factor",
            "max_delay_s",
            "error_backoff_s",
            "park_s",
            "robots_retry_s",
        ):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.max_delay_s < self.min_delay_s:
            raise ValueError("max_delay_s must be >= min_delay_s")
        if self.robots_retry_s <= 0:
            raise ValueError("robots_retry_s must be > 0")
        if self.park_after_errors < 1 or self.park_after_throttles < 1:
            raise ValueError("park_after_errors and park_after_throttles must be >= 1")
        if self.dead_after_failures < 1:
            raise ValueError("dead_after_failures must be >= 1")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")


def lost_answer_hold_s(cfg: PolitenessConfig) -> float:
    """How long a host waits after a request whose answer was lost (the crawl died
    between sending it and storing its end): as after a failed fetch,
    ``error_backoff_s``, and never less than ``min_delay_s``. That answer may have
    carried a longer ``Retry-After``, which nothing can know."""
    return max(cfg.error_backoff_s, cfg.min_delay_s)


def politeness_delay_s(
    last_fetch_s: float,
    crawl_delay_s: float | None,
    backoff_s: float,
    cfg: PolitenessConfig,
) -> float:
    """The gap to leave after a response ends, in seconds.

    ``max(min(max(min_delay, factor × last_fetch), max_delay), crawl_delay, backoff)``.
    """
    base = cfg.delay_factor * last_fetch_s
    if base < cfg.min_delay_s:
        base = cfg.min_delay_s
    elif base > cfg.max_delay_s:
        base = cfg.max_delay_s
    if crawl_delay_s is not None and crawl_delay_s > base:
        base = crawl_delay_s
    return backoff_s if backoff_s > base else base


def delay_source(
    last_fetch_s: float,
    crawl_delay_s: float | None,
    backoff_s: float,
    cfg: PolitenessConfig,
    *,
    retry_after: bool = False,
) -> DelaySource:
    """Which term of :func:`politeness_delay_s` sets the gap (same arguments, same order).

    Ties go to the term checked first: min delay, then k × fetch time, Crawl-delay,
    back-off. ``retry_after`` says the back-off term is a server's ``Retry-After``.
    """
    base = cfg.delay_factor * last_fetch_s
    source = DelaySource.FETCH_TIME
    if base <= cfg.min_delay_s:
        base, source = cfg.min_delay_s, DelaySource.MIN_DELAY
    elif base > cfg.max_delay_s:
        base = cfg.max_delay_s
    if crawl_delay_s is not None and crawl_delay_s > base:
        base, source = crawl_delay_s, DelaySource.CRAWL_DELAY
    if backoff_s > base:
        return DelaySource.RETRY_AFTER if retry_after else DelaySource.BACKOFF
    return source


def parse_retry_after(value: str | None, now_at: float) -> float | None:
    """A ``Retry-After`` header as seconds from ``now_at``; ``None`` if absent or garbage.

    Accepts delta-seconds (``"120"``) and an HTTP-date; a date in the past gives 0.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isdigit():
        return float(int(text))
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now_at)


def is_parked(state: HostState, cfg: PolitenessConfig) -> bool:
    """True while a host waits because of failures rather than plain politeness."""
    return state.error_streak > 0 or state.backoff_s > cfg.min_delay_s


def apply_outcome(state: HostState, outcome: Outcome, cfg: PolitenessConfig) -> HostState:
    """The host's state after one leased fetch ended with ``outcome``.

    Pure. ``next_allowed_at`` is always measured from ``outcome.ended_at``, so the
    gap holds from the end of the response, whatever the fetch took.
    """
    kind = outcome.kind
    if kind is OutcomeKind.NO_REQUEST:
        return state
    if kind is OutcomeKind.BLOCKED:
        return state if state.retired is not None else replace(state, retired="blocked")
    if kind is OutcomeKind.DEFERRED:
        until = outcome.ended_at + max(0.0, outcome.retry_after_s or 0.0)
        if until <= state.next_allowed_at:
            return state
        return replace(state, next_allowed_at=until, delay_source=outcome.delay_source)
    elapsed = outcome.elapsed_s
    crawl_delay = (
        outcome.crawl_delay_s if outcome.crawl_delay_s is not None else state.crawl_delay_s
    )
    requests = state.requests_made + 1
    baseline = state.latency_baseline_s
    backoff = state.backoff_s
    streak = state.error_streak
    parks = state.parks
    retired = state.retired
    unanswered = state.unanswered + 1 if kind is OutcomeKind.NETWORK_ERROR else 0
    if unanswered >= cfg.dead_after_failures and retired is None:
        retired = "dead"
    park_until = 0.0
    from_retry_after = False

    if kind is OutcomeKind.SUCCESS:
        slow = (
            baseline >= cfg.min_latency_for_backoff_s and elapsed >= cfg.latency_doubling * baseline
        )
        if slow:
            backoff = min(max(2 * backoff, 2 * cfg.min_delay_s, elapsed), cfg.max_backoff_s)
        else:
            backoff = backoff / 2 if backoff / 2 > cfg.min_delay_s else 0.0
        baseline = (
            elapsed if baseline == 0.0 else baseline + cfg.latency_alpha * (elapsed - baseline)
        )
        streak = 0
        parks = 0
    else:
        streak += 1
        if kind is OutcomeKind.THROTTLED and outcome.retry_after_s is not None:
            wanted = min(outcome.retry_after_s, cfg.max_retry_after_s)
            backoff = max(wanted, cfg.min_delay_s)
            from_retry_after = True
        else:
            backoff = min(cfg.error_backoff_s * 2 ** min(streak - 1, 30), cfg.max_backoff_s)
        if streak >= (cfg.park_after_throttles if from_retry_after else cfg.park_after_errors):
            parks += 1
            streak = 0
            if parks >= cfg.retire_after_parks and retired is None:
                retired = "failing"
            park_until = outcome.ended_at + cfg.park_s * 2 ** (parks - 1)

    gap = politeness_delay_s(elapsed, crawl_delay, backoff, cfg)
    next_at = outcome.ended_at + gap
    source = delay_source(elapsed, crawl_delay, backoff, cfg, retry_after=from_retry_after)
    if park_until > next_at:
        next_at, source = park_until, DelaySource.PARKED
    if next_at < state.next_allowed_at:
        next_at, source = state.next_allowed_at, state.delay_source
    return HostState(
        host_key=state.host_key,
        next_allowed_at=next_at,
        last_fetch_s=elapsed,
        latency_baseline_s=baseline,
        backoff_s=backoff,
        error_streak=streak,
        parks=parks,
        requests_made=requests,
        crawl_delay_s=crawl_delay,
        retired=retired,
        unanswered=unanswered,
        delay_source=source,
        last_status=outcome.status,
    )

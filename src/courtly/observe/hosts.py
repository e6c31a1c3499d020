"""The per-host table: each host's latest politeness state, from events (a subscriber).

One small record per host seen (about 300 bytes with its share of the table's
indexes, and its four kept sort keys), updated in O(1) per event. The table answers
the dashboard's questions once per tick, at a cost that does not grow with the hosts
where it need not:

* **counts by state and by delay source** are kept as events arrive: each host is
  counted in one *category* (retired, leased, ready, or waiting for its delay source),
  moved when an event changes it; a waiting host also sits in a min-heap by its next
  allowed time, and a census pops the hosts whose time has come (waiting -> ready). A
  census costs O(hosts that came due since the last one x log hosts); the soonest due
  host is the heap's top. A census for a time earlier than the last (a clock set back)
  counts every host, as :meth:`HostTable.scan` does.
* **the top-N of a sort** (``next_allowed``, ``errors``, ``delay``, ``requests``) is
  kept, not sorted per request: a :class:`~courtly.observe.kept_top.KeptTop` per sort
  holds a few hundred candidates and a bound below which every host is a candidate;
  a changed host is offered to each (at :meth:`HostTable._sync`, not on the hot path:
  O(log candidates)), and a top pops the candidates' heap (well under 1 ms at 100,000
  hosts, where ``heapq.nlargest`` over every host took 10-50 ms on a loaded 2-core
  machine). Ties rank the host first seen first, as a stable sort does; retired hosts
  rank last by ``next_allowed``. When the candidates fall behind the bound, a top
  rebuilds them from every host (O(hosts), rare: see that module).
  :meth:`HostTable.top_by_scan` is the ``nlargest`` reference the kept tops are
  checked against.
* **queue lengths** (``queued``, and the log2 histogram) are the store's, which change
  with every URL found, not with a host event: one pass over the hosts asks the store
  (:data:`QueuedOf`), counts the bins and ranks the longest queues; its answer is
  reused until the time moved on by :data:`LENGTHS_EVERY` times what the pass took
  (the summary's top ``queued`` and the page's ``/api/hosts?sort=queued`` reuse the
  census's pass, and its ranking).

Events only mark a host changed (a flag and a list append: the hot path's share); the
table counts the changed hosts, and offers their new keys to the kept tops, at the
next census or top (:meth:`HostTable._sync`), once each however many events they had.

It also checks the frontier's own promise: a lease of a host already in flight
(``overlap``) or before its next allowed time (``early``) is counted as a politeness
violation (it must stay 0).
"""

from __future__ import annotations

import heapq
import operator
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, Final, NamedTuple

from courtly.events import Event, HostLeased, HostStateChanged, LeaseExpired, RobotsResult
from courtly.frontier.records import DelaySource, HostState
from courtly.observe.kept_top import KEEP, KeptTop

__all__ = ["LENGTHS_EVERY", "SORTS", "Census", "HostTable", "HostView", "host_row", "log2_bin"]

_PARKED_SOURCES: Final = frozenset(
    {
        DelaySource.BACKOFF,
        DelaySource.PARKED,
        DelaySource.RETRY_AFTER,
        DelaySource.ROBOTS_UNREACHABLE,
    }
)
_EARLY_SLACK_S: Final = 1e-6
_RETIRED: Final = "retired"
_LEASED: Final = "leased"
_READY: Final = "ready"
_FIXED: Final = frozenset({_RETIRED, _LEASED, _READY})
"""The categories that are not a delay source (no source has these names)."""
_COMPACT_SLACK: Final = 4_096
LENGTHS_EVERY: Final = 50
"""Queue lengths are asked again once ``now`` moved on by this many times the last pass."""


class Census(NamedTuple):
    """What :meth:`HostTable.census` counts."""

    by_state: Counter[str]
    waiting_by_source: Counter[str]
    next_due_at: float | None
    queue_bins: dict[str, int]


class HostView:
    """What the table knows of one host (``category`` and ``due`` are the table's)."""

    __slots__ = (
        "category",
        "changed_at",
        "delay",
        "dirty",
        "due",
        "in_flight",
        "key_delay",
        "key_errors",
        "key_next_allowed",
        "key_requests",
        "order",
        "robots_at",
        "robots_result",
        "state",
    )

    def __init__(self, state: HostState, order: int = 0) -> None:
        self.state = state
        self.order = order
        """When the table first saw it (0, 1, 2...): ties in a top rank first seen first."""
        self.key_next_allowed: float | None = None
        """Its key in each kept top (negated: smallest first), as last offered."""
        self.key_errors: int | None = None
        self.key_delay: float | None = None
        self.key_requests: int | None = None
        self.changed_at = 0.0
        self.delay = 0.0
        """The last wait set: next allowed time less the time it was set (0 before one)."""
        self.in_flight = False
        self.robots_at: float | None = None
        self.robots_result: str | None = None
        self.category: str | None = None
        """Where the table counts it: retired, leased, ready, or a delay source."""
        self.due = 0
        """The sequence number of its live entry in the table's due heap (0: none)."""
        self.dirty = False
        """Changed since the table last counted it."""

    def host_state(self, now: float) -> str:
        """``retired``, ``leased``, ``parked`` (waiting because of failures or an
        unreachable robots.txt), ``snoozed`` (waiting out politeness) or ``ready``."""
        if self.state.retired is not None:
            return "retired"
        if self.in_flight:
            return "leased"
        if self.state.next_allowed_at > now:
            return "parked" if self.state.delay_source in _PARKED_SOURCES else "snoozed"
        return "ready"


QueuedOf = Callable[[str], int | None]


def _no_queue(host_key: str) -> int | None:
    return None


def host_row(view: HostView, now: float, queued: int | None) -> dict[str, Any]:
    """One host as ``/api/hosts`` reports it (seconds, epoch seconds)."""
    s = view.state
    waits = s.next_allowed_at > now and s.retired is None
    return {
        "host": s.host_key,
        "state": view.host_state(now),
        "queued": queued,
        "in_flight": 1 if view.in_flight else 0,
        "last_status": s.last_status,
        "last_fetch_s": s.last_fetch_s,
        "delay_s": max(0.0, s.next_allowed_at - view.changed_at) if view.changed_at else None,
        "delay_source": s.delay_source.value,
        "next_allowed_at": s.next_allowed_at,
        "next_allowed_in_s": (s.next_allowed_at - now) if waits else 0.0,
        "error_streak": s.error_streak,
        "requests": s.requests_made,
        "crawl_delay_s": s.crawl_delay_s,
        "robots_age_s": (now - view.robots_at) if view.robots_at is not None else None,
        "robots": view.robots_result,
        "retired": s.retired,
    }


SORTS: Final = ("queued", "next_allowed", "errors", "delay", "requests")
"""``/api/hosts?sort=``: largest first."""
_KEPT: Final = ("next_allowed", "errors", "delay", "requests")
"""The sorts whose tops the table keeps in heaps (``queued`` is the store's)."""
_PARKS_BITS: Final = 32
_MOST_PARKS: Final = (1 << _PARKS_BITS) - 1
_INF: Final = float("inf")


_KEY_ATTRS: Final = {sort: f"key_{sort}" for sort in _KEPT}
"""The :class:`HostView` attribute holding its key in each kept top."""


class HostTable:
    """Latest state per host; ``queued_of`` (a store's, if it has one) gives queue lengths."""

    def __init__(
        self, queued_of: QueuedOf | None = None, timer: Callable[[], float] = time.perf_counter
    ) -> None:
        self.hosts: dict[str, HostView] = {}
        self.violations: Counter[str] = Counter({"overlap": 0, "early": 0})
        self._queued_of: QueuedOf = queued_of or _no_queue
        self._counts: dict[str, int] = dict.fromkeys((*_FIXED, *DelaySource), 0)
        self._due: list[tuple[float, int, HostView]] = []
        self._seq = 0
        self._drained_at = float("-inf")
        """The latest census time: a host waits while its next allowed time is after it."""
        self._tops: dict[str, KeptTop[HostView]] = {
            sort: KeptTop(operator.attrgetter(attr)) for sort, attr in _KEY_ATTRS.items()
        }
        """Per kept sort, its candidates (see the module doc)."""
        self._dirty: list[HostView] = []
        """The hosts changed since the last :meth:`_sync` (each once)."""
        self._timer = timer
        """Measures what a pass over the queue lengths costs (a duration, not a wait)."""
        self._lengths_at: float | None = None
        self._lengths_cost = 0.0
        self._bins_cache: dict[str, int] = {}
        self._longest: list[int] = []
        """Indices of the longest queues in the lengths of ``_longest_of``, longest first."""
        self._longest_of: object = None
        self._lengths: tuple[list[HostView], list[int | None]] = ([], [])

    def notify(self, event: Event) -> None:
        if isinstance(event, HostStateChanged):
            key = event.state.host_key
            view = self.hosts.get(key)
            if view is None:
                view = self._new(key, event.state)
            view.state = event.state
            view.changed_at = event.at
            view.in_flight = False
            if not view.dirty:
                view.dirty = True
                self._dirty.append(view)
        elif isinstance(event, HostLeased):
            view = self.hosts.get(event.host_key)
            if view is None:
                view = self._new(event.host_key, HostState(event.host_key))
            elif view.in_flight:
                self.violations["overlap"] += 1
            elif event.at + _EARLY_SLACK_S < view.state.next_allowed_at:
                self.violations["early"] += 1
            view.in_flight = True
            if not view.dirty:
                view.dirty = True
                self._dirty.append(view)
        elif isinstance(event, LeaseExpired):
            view = self.hosts.get(event.host_key)
            if view is not None:
                view.in_flight = False
                if not view.dirty:
                    view.dirty = True
                    self._dirty.append(view)
        elif isinstance(event, RobotsResult) and event.fetched:
            view = self.hosts.get(event.host_key)
            if view is None:
                view = self._new(event.host_key, HostState(event.host_key))
            view.robots_at = event.at
            view.robots_result = event.result

    def _new(self, key: str, state: HostState) -> HostView:
        view = self.hosts[key] = HostView(state, len(self.hosts))
        view.dirty = True
        self._dirty.append(view)
        return view

    def _sync(self) -> None:
        """Count each host changed since the last call in its category (as of the last
        census: see the module doc), and in the candidates of the sorts."""
        dirty = self._dirty
        if not dirty:
            return
        counts = self._counts
        due, push = self._due, heapq.heappush
        tops = self._tops
        offer_next, offer_errors = tops["next_allowed"].offer, tops["errors"].offer
        offer_delay, offer_requests = tops["delay"].offer, tops["requests"].offer
        most_parks = _MOST_PARKS
        drained_at = self._drained_at
        seq = self._seq
        for view in dirty:
            view.dirty = False
            if view.category is not None:
                counts[view.category] -= 1
            view.due = 0
            s = view.state
            changed_at = view.changed_at
            view.delay = max(0.0, s.next_allowed_at - changed_at) if changed_at else 0.0
            category: str
            if s.retired is not None:
                category = _RETIRED
            elif view.in_flight:
                category = _LEASED
            elif s.next_allowed_at > drained_at:
                category = s.delay_source
                seq += 1
                view.due = seq
                push(due, (s.next_allowed_at, seq, view))
            else:
                category = _READY
            view.category = category
            counts[category] += 1
            # the kept tops' keys, negated (largest first); offered when they changed
            order = view.order
            key = -s.next_allowed_at if s.retired is None else _INF
            if key != view.key_next_allowed:
                view.key_next_allowed = key
                offer_next(key, order, view)
            errors = -((s.error_streak << _PARKS_BITS) | min(s.parks, most_parks))
            if errors != view.key_errors:
                view.key_errors = errors
                offer_errors(errors, order, view)
            key = -view.delay
            if key != view.key_delay:
                view.key_delay = key
                offer_delay(key, order, view)
            requests = -s.requests_made
            if requests != view.key_requests:
                view.key_requests = requests
                offer_requests(requests, order, view)
        self._seq = seq
        dirty.clear()

    def census(self, now: float) -> Census:
        """Counts by state, waiting hosts by delay source, the soonest next allowed time
        among them, and the log2 bins of queue lengths, as of ``now``.

        The counts are kept as events arrive (module doc): this pops the hosts that came
        due since the last census; the bins take one pass over the store's lengths."""
        if now < self._drained_at:
            return self.scan(now)
        self._sync()
        due, counts = self._due, self._counts
        pop = heapq.heappop
        while due and due[0][0] <= now:
            _, seq, view = pop(due)
            if view.due == seq:
                view.due = 0
                counts[view.category or _READY] -= 1
                view.category = _READY
                counts[_READY] += 1
        self._drained_at = now
        while due and due[0][2].due != due[0][1]:
            pop(due)  # a stale entry: the host changed since it was pushed
        waiting = {k.value: counts[k] for k in DelaySource if counts[k]}
        if len(due) > 2 * sum(waiting.values()) + _COMPACT_SLACK:
            self._compact()
        parked = sum(counts[k] for k in _PARKED_SOURCES)
        states = Counter(
            {
                _RETIRED: counts[_RETIRED],
                _LEASED: counts[_LEASED],
                _READY: counts[_READY],
                "parked": parked,
                "snoozed": sum(waiting.values()) - parked,
            }
        )
        return Census(
            +states,  # drop the zeros
            Counter(waiting),
            due[0][0] if due else None,
            self._bins(now),
        )

    def _compact(self) -> None:
        """Drop the stale entries of the due heap (each host has at most one live)."""
        self._due = [(v.state.next_allowed_at, v.due, v) for v in self.hosts.values() if v.due]
        heapq.heapify(self._due)

    def scan(self, now: float) -> Census:
        """:meth:`census` by one pass over every host (about 1 us a host): the reference
        the kept counts are checked against, and the answer for a past ``now``."""
        retired = leased = ready = parked = snoozed = 0
        waiting: dict[DelaySource, int] = dict.fromkeys(DelaySource, 0)
        soonest = float("inf")
        parked_sources = _PARKED_SOURCES
        for view in self.hosts.values():
            s = view.state
            if s.retired is not None:
                retired += 1
            elif view.in_flight:
                leased += 1
            elif s.next_allowed_at > now:
                source = s.delay_source
                if source in parked_sources:
                    parked += 1
                else:
                    snoozed += 1
                waiting[source] += 1
                if s.next_allowed_at < soonest:
                    soonest = s.next_allowed_at
            else:
                ready += 1
        states = Counter(
            {"retired": retired, "leased": leased, "ready": ready, "parked": parked}
            | {"snoozed": snoozed}
        )
        sources = Counter({k.value: n for k, n in waiting.items() if n})
        next_due = None if soonest == float("inf") else soonest
        return Census(+states, sources, next_due, self._bins(now))

    def by_state(self, now: float) -> Counter[str]:
        return Counter(view.host_state(now) for view in self.hosts.values())

    def waiting_by_source(self, now: float) -> Counter[str]:
        """Hosts not in flight, not retired, whose next allowed time is ahead: by source."""
        counts: Counter[str] = Counter()
        for view in self.hosts.values():
            s = view.state
            if s.next_allowed_at > now and not view.in_flight and s.retired is None:
                counts[s.delay_source.value] += 1
        return counts

    def _queue_lengths(self, now: float) -> tuple[list[HostView], list[int | None]]:
        """Each host and its queued URLs (the store's), and their log2 bins.

        One pass asks the store for every host and counts the bins; its answer serves
        until ``now`` has moved on by :data:`LENGTHS_EVERY` times what the pass took
        (10-50 ms at 100,000 hosts on a loaded 2-core machine: asked again 0.5-2.5 s
        later), so the pass costs the loop at most about 1/LENGTHS_EVERY of its time
        however many hosts there are (the lengths shown are then that much older)."""
        at = self._lengths_at
        moved = float("inf") if at is None else abs(now - at)
        if moved > 0 and moved >= self._lengths_cost * LENGTHS_EVERY:
            start = self._timer()
            lengths = list(map(self._queued_of, self.hosts))
            self._lengths = (list(self.hosts.values()), lengths)
            by_bits = Counter(map(int.bit_length, [q for q in lengths if q is not None]))
            self._bins_cache = {_bits_label(bits): n for bits, n in sorted(by_bits.items())}
            self._rank_longest(lengths, KEEP)
            self._lengths_cost = self._timer() - start
            self._lengths_at = now
        return self._lengths

    def _rank_longest(self, lengths: list[int | None], n: int) -> None:
        """The indices of the ``n`` longest queues of ``lengths``, longest first (ties:
        first seen first). Part of the pass over the lengths (so under its duty bound),
        for the ``KEEP`` longest; a larger ``n`` asked ranks again."""
        zeroed = [q or 0 for q in lengths]
        self._longest = heapq.nlargest(n, range(len(zeroed)), key=zeroed.__getitem__)
        self._longest_of = lengths

    def queue_lengths_pass(self, now: float) -> None:
        """Ask the store for every host's queue length now, recent or not (a benchmark's)."""
        self._lengths_at = None
        self._queue_lengths(now)

    def _bins(self, now: float) -> dict[str, int]:
        """The log2 bins of the queue lengths (counted by :meth:`_queue_lengths`)."""
        self._queue_lengths(now)
        return dict(self._bins_cache)

    def queue_bins(self) -> dict[str, int]:
        """Hosts per log2 bin of queued URLs (``"0"``, ``"1"``, ``"2-3"``, ``"4-7"``...)."""
        bins: Counter[str] = Counter()
        queued_of = self._queued_of
        for key in self.hosts:
            queued = queued_of(key)
            if queued is not None:
                bins[log2_bin(queued)] += 1
        return dict(bins)

    def top(self, sort: str, n: int, now: float) -> list[dict[str, Any]]:
        """The ``n`` hosts largest by ``sort`` (one of :data:`SORTS`), as rows."""
        if sort not in SORTS:
            raise ValueError(f"sort must be one of {', '.join(SORTS)}")
        self._sync()
        queued_of = self._queued_of
        if sort == "queued":
            views, lengths = self._queue_lengths(now)
            if self._longest_of is not lengths or len(self._longest) < min(n, len(lengths)):
                self._rank_longest(lengths, n)
            return [host_row(views[i], now, lengths[i]) for i in self._longest[:n]]
        return [host_row(v, now, queued_of(v.state.host_key)) for v in self._kept_top(sort, n)]

    def _kept_top(self, sort: str, n: int) -> list[HostView]:
        key_of = operator.attrgetter(_KEY_ATTRS[sort])
        hosts = self.hosts

        def everyone() -> Iterator[tuple[float | int | None, int, HostView]]:
            return ((key_of(v), v.order, v) for v in hosts.values())

        return self._tops[sort].top(n, everyone)

    def kept_top_rebuilds(self) -> dict[str, int]:
        """How many times each kept top was rebuilt from every host (O(hosts) each)."""
        return {sort: top.rebuilds for sort, top in self._tops.items()}

    def top_by_scan(self, sort: str, n: int, now: float) -> list[dict[str, Any]]:
        """:meth:`top` by ``heapq.nlargest`` over every host (O(hosts)): the reference the
        kept tops are checked against."""
        if sort == "queued" or sort not in SORTS:
            return self.top(sort, n, now)
        self._sync()
        chosen = heapq.nlargest(n, self.hosts.values(), key=_SCAN_KEYS[sort])
        queued_of = self._queued_of
        return [host_row(v, now, queued_of(v.state.host_key)) for v in chosen]


def _next_allowed(view: HostView) -> float:
    s = view.state
    return s.next_allowed_at if s.retired is None else _NEVER


_NEVER: Final = float("-inf")


def _errors(view: HostView) -> tuple[int, int]:
    return (view.state.error_streak, view.state.parks)


def _delay(view: HostView) -> float:
    return view.delay


def _requests(view: HostView) -> int:
    return view.state.requests_made


_SCAN_KEYS: Final[dict[str, Callable[[HostView], float | int | tuple[int, int]]]] = {
    "next_allowed": _next_allowed,
    "errors": _errors,
    "delay": _delay,
    "requests": _requests,
}


def _bits_label(bits: int) -> str:
    if bits <= 1:
        return str(bits)
    low = 1 << (bits - 1)
    return f"{low}-{2 * low - 1}"


def log2_bin(n: int) -> str:
    """The log2 bin of a count: ``0``, ``1``, ``2-3``, ``4-7``, ..."""
    if n <= 1:
        return str(max(n, 0))
    low = 1 << (n.bit_length() - 1)
    return f"{low}-{2 * low - 1}"

"""The revisit book: every fetched URL's :class:`RevisitState`, and which are due.

One book per crawl process (``courtly crawl --recrawl``). It answers three questions:

* :meth:`RevisitBook.headers_for` — what validators a fetch of a URL sends;
* :meth:`RevisitBook.note` — fold a visit in (:func:`~courtly.frontier.revisit.observe`)
  and schedule the next one (:func:`~courtly.frontier.revisit.schedule`), the lane's
  μ re-fitted to the revisit budget every :data:`REFIT_EVERY` visits;
* :meth:`RevisitBook.take_due` — the URLs whose next due time has come, earliest first;
  they are *out* (re-entered into the frontier, through the store's ``revisit``) until
  their next visit is noted, so a URL is never queued twice for one due time.

Persistence: :meth:`to_bytes` / :meth:`from_bytes` (JSON), kept by the crawl as one
store blob. A URL noted after the last save is lost from the book; the crawl adds every
fetched catalogue URL missing from it back as due at once (:meth:`ensure`), so no page
is forgotten, at the cost of an early visit. Time is the caller's (an injected clock);
jitter comes from the ``rng`` given.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from courtly.fetch.validators import Validators, conditional_headers
from courtly.frontier.news_lane import NEWS, ORDINARY, lane_of
from courtly.frontier.recrawl import LaneSchedule, fit_mu
from courtly.frontier.revisit import RevisitState, Visit, estimate_rate, observe, schedule

__all__ = ["REFIT_EVERY", "DueUrl", "RevisitBook"]

REFIT_EVERY = 64
_FORMAT = 1


@dataclass(frozen=True, slots=True)
class DueUrl:
    """A URL to visit again: its ``depth`` as first found, its due time."""

    url: str
    depth: int
    due_at: float
    lane: int = ORDINARY


class RevisitBook:
    """Revisit states and the due heap (module docstring). ``budget_per_s`` is the revisit
    rate each lane's μ is fitted to (visits per second over all its URLs); ``None``: each
    lane's :attr:`LaneSchedule.budget_per_url_s` times its URLs (for the ordinary lane,
    every URL once per its default interval: the uniform policy's budget, spent where it
    buys the most freshness)."""

    def __init__(
        self,
        lane: LaneSchedule,
        budget_per_s: float | None,
        rng: random.Random,
        *,
        news: LaneSchedule | None = None,
        news_patterns: Sequence[re.Pattern[str]] = (),
    ) -> None:
        self.lane = lane
        self.lanes = {ORDINARY: lane, NEWS: news if news is not None else lane}
        self._patterns = tuple(news_patterns)
        self.budget_per_s = budget_per_s
        self._rng = rng
        self.states: dict[str, RevisitState] = {}
        self._depths: dict[str, int] = {}
        self._heap: list[tuple[float, str]] = []
        self.out: set[str] = set()
        self.mu = {ORDINARY: 1.0, NEWS: 1.0}
        self._since_fit = REFIT_EVERY

    def __len__(self) -> int:
        return len(self.states)

    def headers_for(self, url: str) -> dict[str, str]:
        """The conditional-GET headers of the next fetch of ``url`` (none if unknown)."""
        state = self.states.get(url)
        if state is None:
            return {}
        return conditional_headers(state.validators, state.visits + 1)

    def state(self, url: str) -> RevisitState | None:
        return self.states.get(url)

    def note(
        self,
        url: str,
        depth: int,
        now: float,
        *,
        status: int | None,
        headers: tuple[tuple[str, str], ...] = (),
        body_digest: str | None = None,
        text_digest: int | None = None,
        simhash: int | None = None,
        content_bytes: int | None = None,
    ) -> Visit:
        """Fold a visit of ``url`` at ``now`` in and schedule the next."""
        old = self.states.get(url) or RevisitState(url)
        visit = observe(
            old,
            status=status,
            headers=headers,
            at=now,
            body_digest=body_digest,
            text_digest=text_digest,
            simhash=simhash,
            content_bytes=content_bytes,
        )
        self._since_fit += 1
        if self._since_fit >= REFIT_EVERY:
            self._refit()
        state = visit.state
        lane_id = lane_of(url, state.lane, state.floor_streak, self._patterns)
        if lane_id != state.lane:
            state = dataclasses.replace(state, lane=lane_id, floor_streak=0)
        lane = self.lanes[lane_id]
        new = schedule(state, now=now, mu=self.mu[lane_id], lane=lane, jitter=self._jitter())
        self.states[url] = new
        self._depths.setdefault(url, depth)
        self.out.discard(url)
        assert new.next_due_at is not None
        heapq.heappush(self._heap, (new.next_due_at, url))
        return dataclasses.replace(visit, state=new)

    def mark(self, url: str, *, duplicate_of: str | None, near_duplicate_of: str | None) -> None:
        """Record what other URL ``url`` duplicates (exactly / nearly), if any."""
        state = self.states.get(url)
        if state is not None:
            self.states[url] = dataclasses.replace(
                state, duplicate_of=duplicate_of, near_duplicate_of=near_duplicate_of
            )

    def archived(self, url: str, record_id: str, date: str) -> None:
        """A full response of ``url`` was archived as ``record_id`` at WARC-Date ``date``:
        what its later revisit records refer to."""
        state = self.states.get(url)
        if state is not None:
            self.states[url] = dataclasses.replace(state, warc_record_id=record_id, warc_date=date)

    def ensure(
        self,
        url: str,
        depth: int,
        now: float,
        *,
        status: int | None = None,
        fetched_at: float | None = None,
        validators: Validators | None = None,
    ) -> bool:
        """Add a fetched ``url`` the book does not know, due at ``now``; ``True`` if added.

        ``status``, ``fetched_at`` and ``validators`` (from its catalogue row) make its
        first revisit conditional; with no digest kept, a 200 then is no change yet."""
        if url in self.states:
            return False
        self.states[url] = RevisitState(
            url,
            visits=1 if status is not None else 0,
            status=status,
            last_fetch_at=fetched_at,
            validators=validators or Validators(),
            next_due_at=now,
        )
        self._depths[url] = depth
        heapq.heappush(self._heap, (now, url))
        return True

    def next_due_at(self) -> float | None:
        """The earliest due time of a URL not out, or ``None``."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def take_due(self, now: float, limit: int) -> list[DueUrl]:
        """Up to ``limit`` URLs due by ``now``, earliest first; they are out from here on."""
        taken: list[DueUrl] = []
        while len(taken) < limit:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now:
                break
            due_at, url = heapq.heappop(self._heap)
            self.out.add(url)
            taken.append(DueUrl(url, self._depths.get(url, 0), due_at, self.states[url].lane))
        return taken

    def give_back(self, url: str, due_at: float) -> None:
        """A taken URL the frontier refused (budget, retired host): due again at ``due_at``."""
        if url in self.out:
            self.out.discard(url)
            state = self.states[url]
            self.states[url] = dataclasses.replace(state, next_due_at=due_at)
            heapq.heappush(self._heap, (due_at, url))

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            due_at, url = heap[0]
            state = self.states.get(url)
            if url in self.out or state is None or state.next_due_at != due_at:
                heapq.heappop(heap)
                continue
            return

    def _jitter(self) -> float:
        return self._rng.uniform(0.95, 1.05)

    def _refit(self) -> None:
        """Re-fit each lane's μ to its budget (by default: its URLs once per its default)."""
        self._since_fit = 0
        for lane_id, lane in self.lanes.items():
            states = [s for s in self.states.values() if s.lane == lane_id]
            pages = [(estimate_rate(s, lane), lane.weight) for s in states if s.comparisons]
            budget = self.budget_per_s
            if budget is None:
                budget = len(states) * lane.budget_per_url_s
            if pages and budget > 0:
                self.mu[lane_id] = fit_mu(pages, budget, lane)

    # -- persistence --------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        rows = []
        for url, state in self.states.items():
            row = dataclasses.asdict(state)
            row["depth"] = self._depths.get(url, 0)
            row["out"] = url in self.out
            rows.append(row)
        return json.dumps({"format": _FORMAT, "mu": self.mu, "states": rows}).encode()

    def load(self, data: bytes) -> None:
        """Replace the book's states by those saved in ``data`` (from :meth:`to_bytes`)."""
        document = json.loads(data)
        if document.get("format") != _FORMAT:
            raise ValueError(f"unknown revisit book format {document.get('format')!r}")
        self.mu = {int(k): float(v) for k, v in document["mu"].items()}
        self.states.clear()
        self._heap.clear()
        self.out.clear()
        for row in document["states"]:
            self._restore(row)
        heapq.heapify(self._heap)

    def _restore(self, row: dict[str, Any]) -> None:
        depth = int(row.pop("depth"))
        out = bool(row.pop("out"))
        validators = Validators(**row.pop("validators"))
        ring = tuple(float(t) for t in row.pop("changed_ring"))
        state = RevisitState(validators=validators, changed_ring=ring, **row)
        self.states[state.url] = state
        self._depths[state.url] = depth
        if out and state.next_due_at is not None:
            # It was in the frontier when saved: its visit is noted when it is fetched; if
            # the store lost it, it is due again once the longest interval has passed.
            later = state.next_due_at + self.lanes[state.lane].max_s
            state = dataclasses.replace(state, next_due_at=later)
            self.states[state.url] = state
        if state.next_due_at is not None:
            self._heap.append((state.next_due_at, state.url))

    def urls(self) -> Iterable[str]:
        return self.states.keys()

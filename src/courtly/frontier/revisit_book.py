"""The revisit book: the schedule's memory of one crawl process (``courtly crawl --recrawl``).

The per-URL states live in the store's recrawl rows (:mod:`courtly.store.revisit_rows`);
the book keeps only what the schedule needs across URLs, bounded whatever their number:

* each lane's size (URLs, and URLs with a comparison) and a bounded sample of their
  estimated change rates, from which each lane's μ is re-fitted to the revisit budget
  every :data:`REFIT_EVERY` visits (the sample's sum scaled up to the lane);
* :meth:`RevisitBook.note` — fold a visit into a URL's state
  (:func:`~courtly.frontier.revisit.observe`), choose its lane and schedule the next
  visit (:func:`~courtly.frontier.revisit.schedule`);
* :meth:`RevisitBook.headers_for` — the validators a fetch sends.

Time is the caller's (an injected clock); jitter comes from the ``rng`` given.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Sequence
from typing import Final

from courtly.fetch.validators import conditional_headers
from courtly.frontier.news_lane import NEWS, ORDINARY, lane_of
from courtly.frontier.recrawl import LaneSchedule, fit_mu
from courtly.frontier.revisit import RevisitState, Visit, estimate_rate, observe, schedule

__all__ = ["REFIT_EVERY", "SAMPLE", "RevisitBook"]

REFIT_EVERY: Final = 64
SAMPLE: Final = 4_096
"""Change rates kept per lane for fitting μ (a bounded sample of the lane's URLs)."""


class RevisitBook:
    """Lanes, their μ and sizes (module docstring). ``budget_per_s`` is the revisit rate
    each lane's μ is fitted to (visits per second over all its URLs); ``None``: each
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
        sample: int = SAMPLE,
    ) -> None:
        self.lane = lane
        self.lanes = {ORDINARY: lane, NEWS: news if news is not None else lane}
        self._patterns = tuple(news_patterns)
        self.budget_per_s = budget_per_s
        self._rng = rng
        self.mu = {ORDINARY: 1.0, NEWS: 1.0}
        self.sizes = {ORDINARY: 0, NEWS: 0}
        self._compared = {ORDINARY: 0, NEWS: 0}
        self._rates: dict[int, dict[str, float]] = {ORDINARY: {}, NEWS: {}}
        self._sample = max(1, sample)
        self._since_fit = REFIT_EVERY

    def headers_for(self, state: RevisitState | None) -> dict[str, str]:
        """The conditional-GET headers of the next fetch of a URL in ``state`` (none if
        it has no state)."""
        if state is None:
            return {}
        return conditional_headers(state.validators, state.visits + 1)

    def count(self, state: RevisitState) -> None:
        """Count a stored state in (the crawl's start)."""
        self.sizes[state.lane] += 1
        if state.comparisons:
            self._compared[state.lane] += 1
            self._keep_rate(state)

    def note(
        self,
        old: RevisitState | None,
        url: str,
        now: float,
        *,
        status: int | None,
        headers: tuple[tuple[str, str], ...] = (),
        body_digest: str | None = None,
        text_digest: int | None = None,
        simhash: int | None = None,
        content_bytes: int | None = None,
    ) -> Visit:
        """Fold a visit of ``url`` at ``now`` into ``old`` (``None``: never seen) and
        schedule the next."""
        before = old or RevisitState(url)
        visit = observe(
            before,
            status=status,
            headers=headers,
            at=now,
            body_digest=body_digest,
            text_digest=text_digest,
            simhash=simhash,
            content_bytes=content_bytes,
        )
        state = visit.state
        lane_id = lane_of(url, state.lane, state.floor_streak, self._patterns)
        if lane_id != state.lane:
            state = dataclasses.replace(state, lane=lane_id, floor_streak=0)
        lane = self.lanes[lane_id]
        self._since_fit += 1
        if self._since_fit >= REFIT_EVERY:
            self._refit()
        new = schedule(state, now=now, mu=self.mu[lane_id], lane=lane, jitter=self._jitter())
        self._move(old, new)
        return dataclasses.replace(visit, state=new)

    def _move(self, old: RevisitState | None, new: RevisitState) -> None:
        """Keep the lane sizes and the rate sample in step with one state's change."""
        if old is not None:
            self.sizes[old.lane] -= 1
            if old.comparisons:
                self._compared[old.lane] -= 1
            if old.lane != new.lane:
                self._rates[old.lane].pop(old.url, None)
        self.sizes[new.lane] += 1
        if new.comparisons:
            self._compared[new.lane] += 1
            self._keep_rate(new)

    def _keep_rate(self, state: RevisitState) -> None:
        rates = self._rates[state.lane]
        rate = estimate_rate(state, self.lanes[state.lane])
        if state.url in rates or len(rates) < self._sample:
            rates[state.url] = rate
            return
        # full: a new URL replaces the oldest kept with the chance a uniform sample gives it
        if self._rng.random() * self._compared[state.lane] < self._sample:
            del rates[next(iter(rates))]
            rates[state.url] = rate

    def _jitter(self) -> float:
        return self._rng.uniform(0.95, 1.05)

    def _refit(self) -> None:
        """Re-fit each lane's μ to its budget (by default: its URLs once per its default),
        on the sample of rates, its sum scaled up to the lane's URLs with a comparison."""
        self._since_fit = 0
        for lane_id, lane in self.lanes.items():
            rates = self._rates[lane_id]
            budget = self.budget_per_s
            if budget is None:
                budget = self.sizes[lane_id] * lane.budget_per_url_s
            if not rates or budget <= 0:
                continue
            scale = len(rates) / max(len(rates), self._compared[lane_id])
            pages = [(rate, lane.weight) for rate in rates.values()]
            self.mu[lane_id] = fit_mu(pages, budget * scale, lane)

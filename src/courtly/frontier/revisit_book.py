"""The revisit book: the schedule's memory of one crawl process (``courtly crawl --recrawl``).

The per-URL states live in the store's recrawl rows (:mod:`courtly.store.revisit_rows`);
the book keeps only what the schedule needs across URLs, bounded whatever their number:

* each lane's size (URLs, and URLs with a history: 3 comparisons) and a bounded sample of their
  estimated change rates, from which each lane's μ is re-fitted every
  :data:`REFIT_EVERY` visits, and at once when the lane's sample has grown to twice
  its size at the last fit (its first rate included: a lane is never scheduled on a
  placeholder μ while it has a rate to fit). The fit gives the sampled URLs their share
  of the lane's budget, the budget per URL times their number: the URLs still on their
  first interval keep theirs;
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
from courtly.frontier.revisit import (
    HISTORY,
    RevisitState,
    Visit,
    estimate_rate,
    observe,
    schedule,
)

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
        self._since_fit = 0
        self._fitted_on = {ORDINARY: 0, NEWS: 0}  # sample size at each lane's last fit

    def headers_for(self, state: RevisitState | None) -> dict[str, str]:
        """The conditional-GET headers of the next fetch of a URL in ``state`` (none if
        it has no state)."""
        if state is None:
            return {}
        return conditional_headers(state.validators, state.visits + 1)

    def count(self, state: RevisitState) -> None:
        """Count a stored state in (the crawl's start)."""
        self.sizes[state.lane] += 1
        if state.comparisons >= HISTORY:
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
        lane_id = state.lane
        if lane_id != NEWS and state.comparisons >= HISTORY:
            ordinary = self.lanes[ORDINARY]
            rate = estimate_rate(state, ordinary)
            lane_id = lane_of(
                url, lane_id, self._patterns, change_rate_per_s=rate, floor_s=ordinary.min_s
            )
        else:
            lane_id = lane_of(url, lane_id, self._patterns)
        if lane_id != state.lane:
            state = dataclasses.replace(state, lane=lane_id, floor_streak=0)
        lane = self.lanes[lane_id]
        self._move(old, state)  # the lane's sizes and sample, this URL's rate included
        self._since_fit += 1
        grown = len(self._rates[lane_id]) > 2 * self._fitted_on[lane_id]
        if self._since_fit >= REFIT_EVERY or grown:
            self._refit()
        new = schedule(state, now=now, mu=self.mu[lane_id], lane=lane, jitter=self._jitter())
        return dataclasses.replace(visit, state=new)

    def _move(self, old: RevisitState | None, new: RevisitState) -> None:
        """Keep the lane sizes and the rate sample in step with one state's change."""
        if old is not None:
            self.sizes[old.lane] -= 1
            if old.comparisons >= HISTORY:
                self._compared[old.lane] -= 1
            if old.lane != new.lane:
                self._rates[old.lane].pop(old.url, None)
        self.sizes[new.lane] += 1
        if new.comparisons >= HISTORY:
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
        """Re-fit each lane's μ on its sample of rates: the sampled URLs get the lane's
        budget per URL times their number (by default each URL once per the lane's
        default interval), so the URLs without a history yet, on their first interval,
        keep their share and the few with one are not all put at the floor."""
        self._since_fit = 0
        for lane_id, lane in self.lanes.items():
            rates = self._rates[lane_id]
            size = self.sizes[lane_id]
            if not rates or size <= 0:
                continue
            self._fitted_on[lane_id] = len(rates)
            if self.budget_per_s is None:
                budget = len(rates) * lane.budget_per_url_s
            else:
                budget = self.budget_per_s * len(rates) / max(size, len(rates))
            if budget <= 0:
                continue
            pages = [(rate, lane.weight) for rate in rates.values()]
            self.mu[lane_id] = fit_mu(pages, budget, lane)

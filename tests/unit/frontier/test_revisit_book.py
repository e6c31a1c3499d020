"""The revisit book: each lane's μ fitted as soon as the lane has a rate, on the share of
the budget of the URLs with a history, and the news lane joined by a page's rate."""

from __future__ import annotations

import random

from courtly.frontier.news_lane import NEWS, ORDINARY, news_schedule
from courtly.frontier.recrawl import LaneSchedule
from courtly.frontier.revisit import RevisitState
from courtly.frontier.revisit_book import RevisitBook

LANE = LaneSchedule(min_s=60.0, max_s=86_400.0, default_s=3_600.0)
T0 = 1_800_000_000.0


def book() -> RevisitBook:
    return RevisitBook(LANE, None, random.Random(3), news=news_schedule(15.0, LANE.max_s))


def visit(
    b: RevisitBook, state: RevisitState | None, url: str, at: float, text: int
) -> RevisitState:
    return b.note(
        state, url, at, status=200, body_digest=f"sha1:{text}", text_digest=text, simhash=text
    ).state


def test_a_lane_is_fitted_as_soon_as_it_has_a_rate() -> None:
    b = book()
    state: RevisitState | None = None
    for hour in range(4):  # a page unchanged in 3 hourly comparisons: a history at the 3rd
        state = visit(b, state, "http://a.test/p", T0 + hour * 3_600.0, 1)
    assert state is not None and state.comparisons == 3 and state.interval_s is not None
    # the lane's first rate is fitted at once (not a placeholder μ): the one URL with a
    # history is the whole lane, its budget one visit per default interval
    assert state.change_rate_per_s > 0
    assert abs(state.interval_s - LANE.default_s) < 1e-6 * LANE.default_s


def test_urls_on_their_first_interval_keep_their_share_of_the_budget() -> None:
    # 200 URLs fetched once (on their first interval) and 2 slow ones with a history:
    # the fit gives the two their share (one visit per default interval each), not the
    # lane's whole budget, which would put them at the floor.
    b = book()
    for n in range(200):
        visit(b, None, f"http://a.test/new{n}", T0, n)
    states: dict[str, RevisitState | None] = {"http://a.test/x": None, "http://a.test/y": None}
    for hour in range(6):
        for url in states:
            states[url] = visit(b, states[url], url, T0 + hour * 3_600.0, 7)
    for state in states.values():
        assert state is not None and state.interval_s is not None
        assert state.interval_s > 10 * LANE.min_s, state.interval_s


def test_a_page_changing_faster_than_the_ordinary_floor_moves_to_the_news_lane() -> None:
    b = book()
    busy: RevisitState | None = None
    calm: RevisitState | None = None
    for k in range(12):  # every minute (the floor): busy changed each time, calm never
        at = T0 + k * 60.0
        busy = visit(b, busy, "http://a.test/busy", at, k)
        calm = visit(b, calm, "http://a.test/calm", at, 0)
    assert busy is not None and calm is not None
    assert busy.lane == NEWS and calm.lane == ORDINARY
    assert b.sizes == {NEWS: 1, ORDINARY: 1}

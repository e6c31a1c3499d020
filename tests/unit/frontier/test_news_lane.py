"""The news lane: by pattern or by history, never left by itself."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from courtly.frontier.news_lane import NEWS, ORDINARY, lane_of, news_schedule

PATTERNS = [re.compile(r"/news/")]
FLOOR_S = 40.0


@given(
    st.text(max_size=30),
    st.floats(0.0, 1.0, allow_nan=False),
    st.sampled_from([NEWS, ORDINARY]),
)
def test_lane_rules(path: str, rate: float, current: int) -> None:
    url = f"http://a.test/{path}"
    lane = lane_of(url, current, PATTERNS, change_rate_per_s=rate, floor_s=FLOOR_S)
    expected_news = current == NEWS or rate * FLOOR_S >= 1 or "/news/" in url
    assert lane == (NEWS if expected_news else ORDINARY)


def test_a_page_changing_faster_than_the_ordinary_floor_joins_the_news_lane() -> None:
    url = "http://a.test/busy"
    # one change every 5 s against a 40 s floor: news; every 60 s: ordinary
    assert lane_of(url, ORDINARY, PATTERNS, change_rate_per_s=1 / 5, floor_s=FLOOR_S) == NEWS
    assert lane_of(url, ORDINARY, PATTERNS, change_rate_per_s=1 / 60, floor_s=FLOOR_S) == ORDINARY
    assert lane_of(url, ORDINARY, PATTERNS) == ORDINARY  # no history: no rate


def test_the_news_schedule_has_a_higher_weight_and_clamped_default() -> None:
    lane = news_schedule(60.0, 3600.0)
    assert lane.weight > 1 and lane.default_s == 900.0
    assert news_schedule(10.0, 100.0).default_s == 100.0

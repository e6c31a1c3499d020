"""The news lane: by pattern or by history, never left by itself."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from courtly.frontier.news_lane import FLOOR_STREAK, NEWS, ORDINARY, lane_of, news_schedule

PATTERNS = [re.compile(r"/news/")]


@given(st.text(max_size=30), st.integers(0, 10), st.sampled_from([NEWS, ORDINARY]))
def test_lane_rules(path: str, streak: int, current: int) -> None:
    url = f"http://a.test/{path}"
    lane = lane_of(url, current, streak, PATTERNS)
    expected_news = current == NEWS or streak >= FLOOR_STREAK or "/news/" in url
    assert lane == (NEWS if expected_news else ORDINARY)


def test_the_news_schedule_has_a_higher_weight_and_clamped_default() -> None:
    lane = news_schedule(60.0, 3600.0)
    assert lane.weight > 1 and lane.default_s == 900.0
    assert news_schedule(10.0, 100.0).default_s == 100.0

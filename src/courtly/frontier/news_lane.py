"""Which revisit lane a URL is in: news (0) or ordinary (1). Pure.

A URL is in the news lane when it matches one of the ``--news`` patterns, or when its
history says so: its estimated change rate λ̂ (from its 3rd comparison) is at least one
change per ordinary floor, λ̂ · floor ≥ 1 (it changes faster than the ordinary floor lets
us look). The news lane has its own, lower floor, a higher weight w in the schedule, and
its revisits go to front-queue level 0; ordinary revisits go to level 1. Politeness is
the same for both: a news URL still waits for its host's turn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from courtly.frontier.recrawl import LaneSchedule

__all__ = ["NEWS", "NEWS_WEIGHT", "ORDINARY", "lane_of", "news_schedule"]

NEWS = 0
ORDINARY = 1
NEWS_WEIGHT = 4.0
_NEWS_DEFAULT_S = 900.0


def lane_of(
    url: str,
    current: int,
    patterns: Sequence[re.Pattern[str]],
    *,
    change_rate_per_s: float = 0.0,
    floor_s: float = float("inf"),
) -> int:
    """The lane of ``url``: news once it matches a pattern or its estimated change rate
    ``change_rate_per_s`` (0 while it has no history) is at least one change per
    ``floor_s`` (the ordinary lane's shortest interval, seconds); a URL never leaves the
    news lane by itself."""
    if current == NEWS or change_rate_per_s * floor_s >= 1.0:
        return NEWS
    if any(pattern.search(url) for pattern in patterns):
        return NEWS
    return ORDINARY


def news_schedule(min_s: float, max_s: float) -> LaneSchedule:
    """The news lane: floor ``min_s``, cap ``max_s``, 15 minutes before a history (clamped),
    weight :data:`NEWS_WEIGHT`, and a budget of half the floor's rate per URL (news URLs
    are few; ``--recrawl-share`` bounds all revisits together)."""
    default = min(max_s, max(min_s, _NEWS_DEFAULT_S))
    return LaneSchedule(
        min_s=min_s,
        max_s=max_s,
        default_s=default,
        weight=NEWS_WEIGHT,
        visits_per_url_s=1.0 / (2.0 * min_s),
    )

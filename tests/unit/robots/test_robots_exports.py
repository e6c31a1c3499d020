"""The public surface of courtly.robots."""

from __future__ import annotations

import courtly.robots

CONTRACT_NAMES = {
    "RobotsCache",
    "RobotsFetchOutcome",
    "RobotsRules",
    "authority_of",
    "fetch_robots",
    "parse",
    "product_token",
    "robots_url_for",
}


def test_all_is_sorted_and_complete() -> None:
    names = courtly.robots.__all__

    # isort-style order (as ruff's RUF022 keeps it): CONSTANTS, then Classes, then functions.
    def style(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert list(names) == sorted(names, key=style)
    assert set(names) >= CONTRACT_NAMES
    for name in names:
        assert getattr(courtly.robots, name) is not None

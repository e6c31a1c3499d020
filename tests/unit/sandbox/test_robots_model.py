from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.sandbox import RobotsGroup, RobotsModel, RobotsRule
from courtly.sandbox.robots_model import pattern_matches


def _reference(pattern: str, path: str) -> bool:
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(piece) for piece in body.split("*"))
    return re.match(regex + ("$" if anchored else ""), path, re.DOTALL) is not None


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("/p/", "/p/1.html", True),
        ("/p/*3.html$", "/p/13.html", True),
        ("/p/*3.html$", "/p/13.html?x", False),
        ("/*?sid=", "/s/1.html?sid=ab", True),
        ("/private/open/*.html$", "/private/open/0.html", True),
        ("/a$", "/ab", False),
        ("/a*b*b$", "/abb", True),
        ("/a*bb$", "/ab", False),
    ],
)
def test_pattern_matches_examples(pattern: str, path: str, expected: bool) -> None:
    assert pattern_matches(pattern, path) is expected


_ALPHABET = st.sampled_from("ab/.")


@settings(max_examples=300, deadline=None)
@given(
    st.text(_ALPHABET, max_size=6).map(lambda s: "/" + s),
    st.lists(st.text(_ALPHABET, max_size=3), min_size=1, max_size=4),
    st.booleans(),
)
def test_pattern_matches_agrees_with_a_regex(path: str, pieces: list[str], anchored: bool) -> None:
    pattern = "/" + "*".join(pieces) + ("$" if anchored else "")
    assert pattern_matches(pattern, path) == _reference(pattern, path)


def test_longest_match_wins_and_allow_wins_ties() -> None:
    model = RobotsModel(
        groups=(
            RobotsGroup(
                ("courtly",),
                (
                    RobotsRule(False, "/a/"),
                    RobotsRule(True, "/a/b/"),
                    RobotsRule(False, "/c"),
                    RobotsRule(True, "/c"),
                ),
            ),
        )
    )
    assert not model.allowed("/a/x", "courtly")
    assert model.allowed("/a/b/x", "courtly")
    assert model.allowed("/c", "courtly")
    assert model.allowed("/robots.txt", "courtly")
    assert model.allowed("/a/x", "otherbot")  # no group for it, no * group


def test_groups_for_a_token_merge_and_star_is_the_fallback() -> None:
    model = RobotsModel(
        groups=(
            RobotsGroup(("courtly",), (RobotsRule(False, "/x/"),), crawl_delay_s=2.0),
            RobotsGroup(("*",), (RobotsRule(False, "/"),)),
            RobotsGroup(("COURTLY",), (RobotsRule(False, "/y/"),)),
        )
    )
    assert not model.allowed("/x/1", "courtly") and not model.allowed("/y/1", "Courtly")
    assert model.allowed("/z", "courtly")
    assert not model.allowed("/z", "otherbot")
    assert model.crawl_delay_s("courtly") == 2.0 and model.crawl_delay_s("otherbot") == 0.0
    text = model.render()
    assert "Crawl-delay: 2\n" in text and "User-agent: COURTLY" in text


def test_a_group_without_rules_cannot_be_rendered() -> None:
    with pytest.raises(ValueError):
        RobotsModel(groups=(RobotsGroup(("courtly",)),)).render()

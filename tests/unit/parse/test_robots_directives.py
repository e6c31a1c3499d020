from __future__ import annotations

from courtly.parse import RobotsDirectives, parse_robots_content, parse_x_robots_tag


def test_meta_content_tokens() -> None:
    assert parse_robots_content(None) == RobotsDirectives()
    assert parse_robots_content("") == RobotsDirectives()
    assert parse_robots_content("NOINDEX") == RobotsDirectives(noindex=True)
    assert parse_robots_content(" nofollow ,noarchive") == RobotsDirectives(nofollow=True)
    assert parse_robots_content("None") == RobotsDirectives(noindex=True, nofollow=True)
    assert parse_robots_content("noindex nofollow") == RobotsDirectives(True, True)
    assert parse_robots_content("index, follow, max-snippet:-1") == RobotsDirectives()
    assert parse_robots_content("nofollowing, noindexed") == RobotsDirectives()


def test_x_robots_tag_scopes() -> None:
    token = "courtly"
    assert parse_x_robots_tag(None, token) == RobotsDirectives()
    assert parse_x_robots_tag("noindex, nofollow", token) == RobotsDirectives(True, True)
    assert parse_x_robots_tag("googlebot: noindex", token) == RobotsDirectives()
    assert parse_x_robots_tag("Courtly: noindex", token) == RobotsDirectives(noindex=True)
    # the scope runs to the end of the header value
    assert parse_x_robots_tag("googlebot: noindex, nofollow", token) == RobotsDirectives()
    assert parse_x_robots_tag("nofollow, googlebot: noindex", token) == RobotsDirectives(
        nofollow=True
    )
    assert parse_x_robots_tag("otherbot: none, courtly: nofollow", token) == RobotsDirectives(
        nofollow=True
    )
    # several header lines are independent
    assert parse_x_robots_tag(["googlebot: noindex", "nofollow"], token) == RobotsDirectives(
        nofollow=True
    )


def test_valued_directives_are_not_mistaken_for_scopes() -> None:
    value = "unavailable_after: 25 Jun 2010 15:00:00 PST, noindex, max-snippet: 20"
    assert parse_x_robots_tag(value, "courtly") == RobotsDirectives(noindex=True)


def test_merge_keeps_the_stricter() -> None:
    assert RobotsDirectives(noindex=True).merge(RobotsDirectives(nofollow=True)) == (
        RobotsDirectives(True, True)
    )

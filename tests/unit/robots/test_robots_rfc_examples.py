"""Every example of RFC 9309 (sections 2.2.1-2.2.3 and 5), as written in the RFC."""

from __future__ import annotations

import pytest

from courtly.robots import parse, product_token

SIMPLE_EXAMPLE = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
"""


@pytest.mark.parametrize(
    ("agent", "path", "expected"),
    [
        # "*": every crawler not named elsewhere
        ("otherbot", "/example/", False),
        ("otherbot", "/example/page.html", False),
        ("otherbot", "/images/cat.gif", False),
        ("otherbot", "/publications/", True),
        ("otherbot", "/publications/paper.gif", True),  # the longer allow wins
        ("otherbot", "/", True),
        # foobot: only the two allowed pages
        ("foobot", "/example/page.html", True),
        ("foobot", "/example/allowed.gif", True),
        ("foobot", "/example/other.html", False),
        ("foobot", "/", False),
        ("foobot", "/publications/", False),
        # barbot and bazbot share a group
        ("barbot", "/example/page.html", False),
        ("bazbot", "/example/page.html", False),
        ("barbot", "/example/", True),
        ("bazbot", "/images/cat.gif", True),
        # quxbot has an empty group: everything allowed, no fallback to "*"
        ("quxbot", "/example/", True),
        ("quxbot", "/images/cat.gif", True),
    ],
)
def test_rfc_5_1_simple_example(agent: str, path: str, expected: bool) -> None:
    assert parse(SIMPLE_EXAMPLE).allowed(path, agent) is expected


def test_rfc_5_2_longest_match() -> None:
    rules = parse(
        "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n"
    )
    assert rules.allowed("/example/page/", "foobot")
    assert rules.allowed("/example/page/other.gif", "foobot")
    assert not rules.allowed("/example/page/disallowed.gif", "foobot")


def test_rfc_2_2_1_product_token_from_user_agent_header() -> None:
    header = "ExampleBot/0.1 (compatible; +https://www.example.com/bot.html)"
    assert product_token(header) == "examplebot"
    rules = parse("user-agent: ExampleBot\ndisallow: /foo\n")
    assert not rules.allowed("https://www.example.com/foo", header)
    assert rules.allowed("https://www.example.com/bar", header)


def test_rfc_2_2_1_groups_for_the_same_agent_are_combined() -> None:
    rules = parse(
        "user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\n"
        "user-agent: ExampleBot\ndisallow: /baz\n"
    )
    for path in ("/foo", "/bar", "/baz"):
        assert not rules.allowed(path, "ExampleBot")
    assert rules.allowed("/qux", "ExampleBot")


def test_rfc_2_2_1_no_matching_group_obeys_star() -> None:
    rules = parse("user-agent: ExampleBot\ndisallow: /foo\n\nuser-agent: *\ndisallow: /bar\n")
    assert rules.allowed("/foo", "OtherBot")
    assert not rules.allowed("/bar", "OtherBot")


def test_rfc_2_2_1_no_star_group_means_no_restriction() -> None:
    rules = parse("user-agent: ExampleBot\ndisallow: /\n")
    assert rules.allowed("/anything", "OtherBot")


@pytest.mark.parametrize(
    ("rule_path", "url"),
    [
        ("/foo/bar?baz=quz", "https://example.com/foo/bar?baz=quz"),
        ("/foo/bar/\u30c4", "https://example.com/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "https://example.com/foo/bar/\u30c4"),
        ("/foo/bar/%E3%83%84", "https://example.com/foo/bar/%e3%83%84"),
        ("/foo/bar/%62%61%7A", "https://example.com/foo/bar/baz"),
        ("/foo/bar/baz", "https://example.com/foo/bar/%62%61%7A"),
    ],
)
def test_rfc_2_2_2_percent_encoding_table(rule_path: str, url: str) -> None:
    rules = parse(f"user-agent: *\ndisallow: {rule_path}\n")
    assert not rules.allowed(url, "examplebot")


def test_rfc_2_2_2_allow_wins_equivalent_rules() -> None:
    rules = parse("user-agent: *\nallow: /page\ndisallow: /page\n")
    assert rules.allowed("/page", "examplebot")


def test_rfc_2_2_3_comment_at_end_of_line_and_on_its_own() -> None:
    rules = parse("user-agent: *\n# comment on its own line\ndisallow: / # comment in line\n")
    assert not rules.allowed("/x", "examplebot")


def test_rfc_2_2_3_dollar_ends_the_pattern() -> None:
    rules = parse("user-agent: *\ndisallow: /\nallow: /this/path/exactly$\n")
    assert rules.allowed("/this/path/exactly", "examplebot")
    assert not rules.allowed("/this/path/exactly/more", "examplebot")
    assert not rules.allowed("/this/path/exactlyx", "examplebot")


def test_rfc_2_2_3_star_is_any_run_of_characters() -> None:
    rules = parse("user-agent: *\ndisallow: /\nallow: /this/*/exactly\n")
    assert rules.allowed("/this/a/b/c/exactly", "examplebot")
    assert rules.allowed("/this//exactly", "examplebot")
    assert not rules.allowed("/this/exactly", "examplebot")


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("/path/file-with-a-%2A.html", "https://www.example.com/path/file-with-a-*.html"),
        ("/path/foo-%24", "https://www.example.com/path/foo-$"),
    ],
)
def test_rfc_2_2_3_encoded_special_characters_match_literally(pattern: str, url: str) -> None:
    rules = parse(f"user-agent: *\ndisallow: {pattern}\n")
    assert not rules.allowed(url, "examplebot")


def test_rfc_2_2_3_encoded_star_is_not_a_wildcard() -> None:
    rules = parse("user-agent: *\ndisallow: /path/file-with-a-%2A.html\n")
    assert rules.allowed("https://www.example.com/path/file-with-a-x.html", "examplebot")

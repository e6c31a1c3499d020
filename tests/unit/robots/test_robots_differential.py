"""Differential test against protego on generated robots.txt files and URLs.

Both parsers must agree on ``allowed`` except where courtly deliberately
differs. Each intended difference has a name, a predicate that recognises the
inputs it affects (those inputs are filtered out of the random comparison),
and a concrete example below proving the difference is real and goes the
documented way (docs/robots.md, "Differences from protego").
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from protego import Protego

from courtly.robots import parse

AGENT = "courtly"
BASE = "https://example.org"

# Pieces that both parsers must treat alike.
PATTERN_PIECES = ["/", "a", "b", ".", "=", "*", "%61", "\u00e9", "%2F", "-", "$", "?"]
PATH_PIECES = ["/", "a", "b", ".", "=", "%61", "\u00e9", "%2F", "-", "?", "%C3%A9"]
AGENT_VALUES = ["*", AGENT, AGENT.upper(), "other", f"{AGENT}*"]


def _reserved_char_in_a_pattern(lines: list[str]) -> bool:
    """protego compares reserved characters escaped (``?`` -> ``%3F``), so a pattern's ``?``
    weighs three octets there and one here (RFC 9309 counts the octets of the pattern)."""
    return any(line.split(":", 1)[0] in ("Allow", "Disallow") and "?" in line for line in lines)


def _non_rule_record_before_user_agent(lines: list[str]) -> bool:
    """protego closes a group at a ``User-agent`` line that follows a ``Crawl-delay`` or an
    unknown ``field: value`` line; RFC 9309 closes groups only after a rule."""
    previous = ""
    for line in lines:
        field = line.split(":", 1)[0].strip().lower() if ":" in line else ""
        if not field or field == "sitemap":
            continue
        if field == "user-agent" and previous not in ("", "user-agent", "allow", "disallow"):
            return True
        previous = field
    return False


INTENDED_DIFFERENCES: dict[str, Callable[[list[str]], bool]] = {
    "reserved_char_octets": _reserved_char_in_a_pattern,
    "non_rule_record_splits_group": _non_rule_record_before_user_agent,
}


def _pattern() -> st.SearchStrategy[str]:
    body = st.lists(st.sampled_from(PATTERN_PIECES), min_size=0, max_size=6).map("".join)
    return st.tuples(st.sampled_from(["/", "*", "/"]), body, st.booleans()).map(
        lambda parts: parts[0] + parts[1] + ("$" if parts[2] else "")
    )


def _line() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(AGENT_VALUES).map(lambda agent: f"User-agent: {agent}"),
        _pattern().map(lambda pattern: f"Disallow: {pattern}"),
        _pattern().map(lambda pattern: f"Allow: {pattern}"),
        st.just("Disallow:"),
        st.just(""),
        st.just("# comment"),
        st.just("Sitemap: https://example.org/s.xml"),
        st.just("Crawl-delay: 2"),
        st.just("X-Extra: 1"),
    )


def _path() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(PATH_PIECES), min_size=0, max_size=8).map(
        lambda pieces: "/" + "".join(pieces)
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    lines=st.lists(_line(), min_size=1, max_size=14),
    paths=st.lists(_path(), min_size=1, max_size=8),
)
def test_agrees_with_protego_apart_from_intended_differences(
    lines: list[str], paths: list[str]
) -> None:
    for _name, affected in INTENDED_DIFFERENCES.items():
        assume(not affected(lines))
    text = "\n".join(lines) + "\n"
    ours = parse(text)
    theirs = Protego.parse(text)
    for path in paths:
        url = BASE + path
        assert ours.allowed(url, AGENT) == theirs.can_fetch(url, AGENT), (text, url)


def _both(text: str, path: str) -> tuple[bool, bool]:
    url = BASE + path
    return parse(text).allowed(url, AGENT), Protego.parse(text).can_fetch(url, AGENT)


def test_difference_reserved_char_octets() -> None:
    text = "User-agent: *\nAllow: /*ab\nDisallow: /?a\n"
    assert _reserved_char_in_a_pattern(text.splitlines())
    # "/*ab" (4 octets) beats "/?a" (3) here; protego weighs "/%3Fa" as 5.
    assert _both(text, "/?ab") == (True, False)


def test_difference_non_rule_record_splits_group() -> None:
    text = "User-agent: courtly\nCrawl-delay: 2\nUser-agent: other\nDisallow: /x\n"
    assert _non_rule_record_before_user_agent(text.splitlines())
    # One group for both agents (RFC 9309 §2.1); protego gives courtly an empty group.
    assert _both(text, "/x") == (False, True)


@pytest.mark.parametrize(
    ("name", "text", "path", "expected"),
    [
        # A "Foo" group binds "Foo" only; protego also lets it bind "FooBot".
        ("agent_prefix", "User-agent: court\nDisallow: /x\n", "/x", (True, False)),
        # "courtly/1.0" in the file names the token "courtly"; protego looks for the whole
        # string inside the crawler's user agent.
        ("agent_version", "User-agent: courtly/1.0\nDisallow: /x\n", "/x", (False, True)),
        # protego also allows "/dir/" when "/dir/index.html" is allowed.
        (
            "index_html",
            "User-agent: *\nDisallow: /d/\nAllow: /d/index.html\n",
            "/d/",
            (False, True),
        ),
        # A leading byte-order mark is skipped; protego reads "\ufeffuser-agent" as unknown.
        ("bom", "\ufeffUser-agent: *\nDisallow: /x\n", "/x", (False, True)),
        # Reserved escapes stay distinct from the character (RFC 9309 §2.2.2).
        ("reserved_escape", "User-agent: *\nDisallow: /a%3Fb\n", "/a?b", (True, False)),
        # A lone, invalid UTF-8 escape is kept as written; protego decodes it to U+FFFD.
        ("invalid_utf8_escape", "User-agent: *\nDisallow: /%EF%BF%BD\n", "/%C3", (True, False)),
    ],
)
def test_documented_difference(
    name: str, text: str, path: str, expected: tuple[bool, bool]
) -> None:
    assert _both(text, path) == expected, name


def test_parse_limit_difference() -> None:
    filler = "# " + "x" * 1000 + "\n"
    text = "User-agent: *\n" + filler * 600 + "Disallow: /late\n"
    # Past 500 KiB: ignored here, obeyed by protego (which has no limit).
    assert _both(text, "/late") == (True, False)

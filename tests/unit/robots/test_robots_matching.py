"""Path matching: precedence, wildcards, normalisation, speed."""

from __future__ import annotations

import time

import pytest

from courtly.robots import parse
from courtly.robots.normalize import normalize_path, normalize_pattern, path_of

UA = "courtly"


def one_group(*lines: str) -> str:
    return "User-agent: *\n" + "\n".join(lines) + "\n"


def test_longest_match_wins() -> None:
    rules = parse(one_group("Allow: /a", "Disallow: /a/b", "Allow: /a/b/c"))
    assert rules.allowed("/a/x", UA)
    assert not rules.allowed("/a/b/x", UA)
    assert rules.allowed("/a/b/c/x", UA)


def test_longest_match_wins_regardless_of_order() -> None:
    first = parse(one_group("Disallow: /a/b", "Allow: /a"))
    second = parse(one_group("Allow: /a", "Disallow: /a/b"))
    for rules in (first, second):
        assert not rules.allowed("/a/b", UA)
        assert rules.allowed("/a/c", UA)


def test_allow_wins_a_tie() -> None:
    rules = parse(one_group("Disallow: /page", "Allow: /page"))
    assert rules.allowed("/page", UA)
    wildcard_tie = parse(one_group("Disallow: /*.php", "Allow: /a*.ph"))
    assert wildcard_tie.allowed("/a.php", UA)


def test_wildcard_octets_count_for_precedence() -> None:
    rules = parse(one_group("Disallow: /fish", "Allow: /fish*"))
    assert rules.allowed("/fish", UA)


def test_no_matching_rule_means_allowed() -> None:
    assert parse(one_group("Disallow: /private")).allowed("/public", UA)


def test_matching_is_case_sensitive() -> None:
    rules = parse(one_group("Disallow: /Private"))
    assert not rules.allowed("/Private", UA)
    assert rules.allowed("/private", UA)


def test_rules_match_as_prefixes() -> None:
    rules = parse(one_group("Disallow: /fish"))
    for path in ("/fish", "/fish.html", "/fish/salmon", "/fishheads"):
        assert not rules.allowed(path, UA)
    for path in ("/Fish", "/catfish", "/"):
        assert rules.allowed(path, UA)


def test_star_matches_any_run_including_slashes() -> None:
    rules = parse(one_group("Disallow: /*.php"))
    for path in ("/index.php", "/a/b/c.php", "/x.php?y=1", "/.php"):
        assert not rules.allowed(path, UA)
    assert rules.allowed("/index.html", UA)


def test_dollar_anchors_the_end() -> None:
    rules = parse(one_group("Disallow: /*.php$"))
    assert not rules.allowed("/a/b.php", UA)
    assert rules.allowed("/a/b.php?x", UA)
    assert rules.allowed("/a/b.phps", UA)


def test_dollar_after_pieces_must_not_overlap_them() -> None:
    rules = parse(one_group("Disallow: /*ab*ba$"))
    assert rules.allowed("/aba", UA)
    assert not rules.allowed("/abba", UA)
    assert not rules.allowed("/ab-ba", UA)


def test_plain_dollar_pattern_is_exact() -> None:
    rules = parse(one_group("Disallow: /$"))
    assert not rules.allowed("/", UA)
    assert not rules.allowed("https://example.org", UA)
    assert rules.allowed("/page", UA)


def test_dollar_inside_a_pattern_is_literal() -> None:
    rules = parse(one_group("Disallow: /a$b"))
    assert not rules.allowed("/a$b", UA)
    assert not rules.allowed("/a%24b/c", UA)
    assert rules.allowed("/a", UA)


def test_star_slash_equals_slash() -> None:
    for pattern in ("/*", "/", "/**"):
        rules = parse(one_group(f"Disallow: {pattern}"))
        assert not rules.allowed("/", UA)
        assert not rules.allowed("/anything/at/all?q", UA)


def test_trailing_star_is_the_same_as_a_prefix() -> None:
    star, plain = parse(one_group("Disallow: /fish*")), parse(one_group("Disallow: /fish"))
    for path in ("/fish", "/fishes", "/fis", "/f"):
        assert star.allowed(path, UA) == plain.allowed(path, UA)


def test_star_before_dollar_drops_the_anchor() -> None:
    rules = parse(one_group("Disallow: /a*$"))
    assert not rules.allowed("/abc", UA)


def test_leading_star_pattern() -> None:
    rules = parse(one_group("Disallow: *private"))
    assert not rules.allowed("/a/private/b", UA)
    assert rules.allowed("/a/public", UA)


def test_empty_disallow_means_nothing() -> None:
    rules = parse("User-agent: *\nDisallow:\n")
    assert rules.allowed("/", UA)
    assert rules.allowed("/anything", UA)


def test_empty_allow_means_nothing() -> None:
    rules = parse(one_group("Disallow: /", "Allow:"))
    assert not rules.allowed("/x", UA)


def test_pattern_not_starting_with_slash_or_star_is_ignored() -> None:
    rules = parse(one_group("Disallow: private", "Disallow: http://example.org/x"))
    assert rules.allowed("/private", UA)
    assert rules.allowed("/x", UA)


def test_robots_txt_is_always_allowed() -> None:
    rules = parse(one_group("Disallow: /", "Disallow: /robots.txt"))
    assert rules.allowed("/robots.txt", UA)
    assert rules.allowed("https://example.org/robots.txt", UA)
    assert rules.allowed("/robots.txt?x=1", UA)
    assert not rules.allowed("/robots.txt.bak", UA)


def test_fragment_is_ignored() -> None:
    rules = parse(one_group("Disallow: /a$"))
    assert not rules.allowed("/a#section", UA)
    assert not rules.allowed("https://example.org/a#frag?x", UA)


def test_query_is_part_of_the_match() -> None:
    rules = parse(one_group("Disallow: /*?session=", "Disallow: /search?"))
    assert not rules.allowed("/page?session=1", UA)
    assert not rules.allowed("/search?q=x", UA)
    assert rules.allowed("/search", UA)


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("https://example.org/a/b?c=d#e", "/a/b?c=d"),
        ("https://example.org", "/"),
        ("https://example.org?q", "/?q"),
        ("HTTP://user:pw@example.org:8080/x", "/x"),
        ("/a?b", "/a?b"),
        ("//a/b", "//a/b"),
        ("", "/"),
        ("?q", "/?q"),
    ],
)
def test_path_of_full_urls_and_paths(url: str, path: str) -> None:
    assert path_of(url) == path


def test_unreserved_escapes_are_decoded_on_both_sides() -> None:
    assert normalize_path("/%7Euser/%41b") == "/~user/Ab"
    assert normalize_pattern("/%7euser") == "/~user"
    rules = parse(one_group("Disallow: /%7Euser"))
    assert not rules.allowed("/~user/page", UA)
    rules = parse(one_group("Disallow: /~user"))
    assert not rules.allowed("/%7euser/page", UA)


def test_encoded_slash_and_other_reserved_escapes_are_kept() -> None:
    assert normalize_path("/a%2fb") == "/a%2Fb"
    rules = parse(one_group("Disallow: /a%2Fb"))
    assert not rules.allowed("/a%2fb", UA)
    assert rules.allowed("/a/b", UA)
    slash = parse(one_group("Disallow: /a/b"))
    assert slash.allowed("/a%2Fb", UA)


def test_non_ascii_is_encoded_as_utf8_on_both_sides() -> None:
    assert normalize_path("/caf\u00e9") == "/caf%C3%A9"
    assert normalize_pattern("/caf\u00e9$") == "/caf%C3%A9$"
    rules = parse(one_group("Disallow: /caf\u00e9"))
    assert not rules.allowed("/caf%c3%a9/menu", UA)
    assert not rules.allowed("https://example.org/caf\u00e9", UA)
    assert parse(b"User-agent: *\nDisallow: /caf\xc3\xa9\n").allowed("/caf%C3%A9", UA) is False


def test_hex_case_is_ignored() -> None:
    rules = parse(one_group("Disallow: /a%3ab"))
    assert not rules.allowed("/a%3Ab", UA)


def test_literal_star_and_dollar_in_a_path_only_match_escapes() -> None:
    rules = parse(one_group("Disallow: /a%2A"))
    assert not rules.allowed("/a*", UA)
    assert rules.allowed("/ab", UA)
    assert normalize_path("/a*$") == "/a%2A%24"


def test_spaces_and_controls_are_encoded() -> None:
    assert normalize_path("/a b\x01") == "/a%20b%01"
    rules = parse(one_group("Disallow: /a%20b"))
    assert not rules.allowed("/a b", UA)


def test_lone_percent_is_kept() -> None:
    assert normalize_path("/100%") == "/100%"
    assert normalize_path("/%zz%4") == "/%zz%4"
    rules = parse(one_group("Disallow: /100%"))
    assert not rules.allowed("/100%/x", UA)


def test_hostile_pattern_stays_fast() -> None:
    rules = parse(one_group("Disallow: /*a*a*a*a*a*a*a*b", "Disallow: /*a*a*a*a*a*a*a*b$"))
    path = "/" + "a" * 10_000
    started = time.perf_counter()
    for _ in range(10):
        assert rules.allowed(path, UA)
    elapsed_s = (time.perf_counter() - started) / 10
    assert elapsed_s < 0.005
    assert not rules.allowed(path + "b", UA)


def test_many_wildcard_rules_against_a_long_path_stay_fast() -> None:
    lines = [f"Disallow: /*{'x' * (i % 7 + 1)}*y*z{i}" for i in range(300)]
    rules = parse(one_group(*lines))
    path = "/" + "xy" * 5_000
    started = time.perf_counter()
    assert rules.allowed(path, UA)
    assert time.perf_counter() - started < 0.1

"""Lexical leniency, the parse limit, crawl delays and sitemaps."""

from __future__ import annotations

import pytest

from courtly.robots import PARSE_LIMIT_BYTES, parse

UA = "courtly/0.1 (+https://example.org/bot)"


def test_utf8_bom_is_ignored() -> None:
    assert not parse(b"\xef\xbb\xbfUser-agent: *\nDisallow: /x\n").allowed("/x", UA)
    assert not parse("\ufeffUser-agent: *\nDisallow: /x\n").allowed("/x", UA)


@pytest.mark.parametrize("newline", ["\n", "\r", "\r\n"])
def test_lf_cr_and_crlf_line_endings(newline: str) -> None:
    text = newline.join(["User-agent: *", "Disallow: /x", "Allow: /x/y", ""])
    rules = parse(text)
    assert not rules.allowed("/x", UA)
    assert rules.allowed("/x/y", UA)


def test_mixed_line_endings() -> None:
    rules = parse("User-agent: a\r\nDisallow: /a\rUser-agent: b\nDisallow: /b\r\n")
    assert not rules.allowed("/a", "a")
    assert rules.allowed("/b", "a")


def test_field_names_are_case_insensitive_and_colon_spacing_optional() -> None:
    rules = parse("USER-AGENT :*\nDISALLOW:/x\ndisallow  :   /y  \n")
    assert not rules.allowed("/x", UA)
    assert not rules.allowed("/y", UA)


def test_missing_colon_is_tolerated_for_known_fields() -> None:
    rules = parse("User-agent *\nDisallow /x\nAllow /x/ok\nSitemap https://e.org/s.xml\n")
    assert not rules.allowed("/x", UA)
    assert rules.allowed("/x/ok", UA)
    assert rules.sitemaps == ["https://e.org/s.xml"]


def test_missing_colon_with_a_colon_in_the_value() -> None:
    rules = parse("User-agent *\nDisallow /a:b\n")
    assert not rules.allowed("/a:b", UA)


def test_unknown_field_without_colon_is_ignored() -> None:
    rules = parse("User-agent *\nDisallows /x\nNoindex /y\n")
    assert rules.allowed("/x", UA)
    assert rules.allowed("/y", UA)


@pytest.mark.parametrize(
    "text",
    [
        "useragent: *\ndisallow: /x\n",
        "user agent: *\ndisallow: /x\n",
        "User agent *\nDisallow /x\n",
        "User-agent: *\ndissallow: /x\n",
        "User-agent: *\ndisalow: /x\n",
    ],
)
def test_known_misspellings_are_accepted(text: str) -> None:
    assert not parse(text).allowed("/x", UA)


def test_comment_only_and_whitespace_lines_are_ignored() -> None:
    rules = parse("   \n\t\n# c\nUser-agent: *   # c\n  Disallow: /x#y\n")
    assert not rules.allowed("/x", UA)
    assert rules.allowed("/y", UA)


def test_invalid_utf8_is_tolerated() -> None:
    rules = parse(b"User-agent: *\n\xff\xfe garbage \x80\nDisallow: /x\xff\nDisallow: /y\n")
    assert not rules.allowed("/y", UA)


def test_only_the_first_500_kib_are_parsed() -> None:
    head = "User-agent: *\nDisallow: /early\n"
    filler = "# " + "f" * 98 + "\n"
    body = head + filler * (PARSE_LIMIT_BYTES // len(filler) + 10) + "Disallow: /late\n"
    assert len(body.encode()) > PARSE_LIMIT_BYTES
    rules = parse(body)
    assert not rules.allowed("/early", UA)
    assert rules.allowed("/late", UA)
    assert not parse(body, limit_bytes=len(body) + 1).allowed("/late", UA)


def test_a_line_cut_at_the_limit_never_becomes_a_rule() -> None:
    head = b"User-agent: *\nDisallow: /a\n"
    limit = len(head) + len(b"Disallow: /b")
    body = head + b"Disallow: /bc\n"
    rules = parse(body, limit_bytes=limit)
    assert not rules.allowed("/a", UA)
    assert rules.allowed("/b", UA)
    assert rules.allowed("/bc", UA)


def test_a_line_ending_exactly_at_the_limit_is_kept() -> None:
    body = b"User-agent: *\nDisallow: /a\nDisallow: /b"
    rules = parse(body + b"\nDisallow: /c\n", limit_bytes=len(body))
    assert not rules.allowed("/b", UA)
    assert rules.allowed("/c", UA)


def test_limit_applies_to_text_input_too() -> None:
    body = "User-agent: *\nDisallow: /a\nDisallow: /b\n"
    rules = parse(body, limit_bytes=len("User-agent: *\nDisallow: /a\nDisa"))
    assert not rules.allowed("/a", UA)
    assert rules.allowed("/b", UA)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("5", 5.0), ("0.5", 0.5), (".25", 0.25), ("2.", 2.0), ("0", 0.0), ("10.5", 10.5)],
)
def test_crawl_delay_accepts_decimals(value: str, expected: float) -> None:
    assert parse(f"User-agent: *\nCrawl-delay: {value}\n").crawl_delay_s(UA) == expected


@pytest.mark.parametrize(
    "value", ["", "abc", "-1", "inf", "nan", "Infinity", "1e3", "5 seconds", "1_0", "0x10"]
)
def test_crawl_delay_ignores_garbage(value: str) -> None:
    assert parse(f"User-agent: *\nCrawl-delay: {value}\n").crawl_delay_s(UA) is None


def test_crawl_delay_of_own_group_comes_before_star() -> None:
    rules = parse(
        "User-agent: *\nCrawl-delay: 10\nDisallow: /a\n\nUser-agent: courtly\nCrawl-delay: 2\n"
    )
    assert rules.crawl_delay_s(UA) == 2.0
    assert rules.crawl_delay_s("otherbot") == 10.0


def test_crawl_delay_lines_alone_do_not_split_groups() -> None:
    # No rule between them, so this is one group for "*" and "courtly" (RFC 9309 §2.1):
    # both get the larger delay.
    rules = parse("User-agent: *\nCrawl-delay: 10\n\nUser-agent: courtly\nCrawl-delay: 2\n")
    assert rules.crawl_delay_s(UA) == 10.0
    assert rules.crawl_delay_s("otherbot") == 10.0


def test_crawl_delay_falls_back_to_star_when_own_group_has_none() -> None:
    rules = parse("User-agent: *\nCrawl-delay: 10\n\nUser-agent: courtly\nDisallow: /x\n")
    assert rules.crawl_delay_s(UA) == 10.0


def test_crawl_delay_absent_is_none() -> None:
    assert parse("User-agent: *\nDisallow: /\n").crawl_delay_s(UA) is None


def test_crawl_delay_before_any_user_agent_is_ignored() -> None:
    assert parse("Crawl-delay: 3\nUser-agent: *\nDisallow: /\n").crawl_delay_s(UA) is None


def test_crawl_delay_in_merged_groups_keeps_the_largest() -> None:
    rules = parse("User-agent: courtly\nCrawl-delay: 1\n\nUser-agent: courtly\nCrawl-delay: 4\n")
    assert rules.crawl_delay_s(UA) == 4.0


def test_crawl_delay_shared_by_a_multi_agent_group() -> None:
    rules = parse("User-agent: a\nCrawl-delay: 3\nUser-agent: b\nDisallow: /x\n")
    assert rules.crawl_delay_s("a") == 3.0
    assert rules.crawl_delay_s("b") == 3.0


def test_sitemaps_are_collected_wherever_they_stand() -> None:
    rules = parse(
        "Sitemap: https://e.org/first.xml\n"
        "User-agent: a\nSitemap: https://e.org/second.xml\nDisallow: /x\n"
        "User-agent: b\nDisallow: /y\nsitemap:https://other.org/third.xml\n"
        "Sitemap: https://e.org/first.xml\nSitemap:\n"
    )
    assert rules.sitemaps == [
        "https://e.org/first.xml",
        "https://e.org/second.xml",
        "https://other.org/third.xml",
    ]


def test_sitemaps_list_is_a_copy() -> None:
    rules = parse("Sitemap: https://e.org/s.xml\n")
    rules.sitemaps.append("x")
    assert rules.sitemaps == ["https://e.org/s.xml"]


def test_str_and_bytes_give_the_same_rules() -> None:
    text = "User-agent: *\nDisallow: /caf\u00e9\nAllow: /caf\u00e9/ok\n"
    from_text, from_bytes = parse(text), parse(text.encode())
    for path in ("/caf%C3%A9", "/caf\u00e9/ok", "/cafe"):
        assert from_text.allowed(path, UA) == from_bytes.allowed(path, UA)

"""Group structure and user-agent selection."""

from __future__ import annotations

import pytest

from courtly.robots import RobotsRules, parse, product_token

UA = "courtly/0.1 (+https://example.org/bot)"


def test_user_agent_after_a_rule_starts_a_new_group() -> None:
    rules = parse("User-agent: a\nDisallow: /a\nUser-agent: b\nDisallow: /b\n")
    assert not rules.allowed("/a", "a")
    assert rules.allowed("/b", "a")
    assert not rules.allowed("/b", "b")
    assert rules.allowed("/a", "b")


def test_consecutive_user_agents_share_one_group() -> None:
    rules = parse("User-agent: a\nUser-agent: b\nDisallow: /x\n")
    assert not rules.allowed("/x", "a")
    assert not rules.allowed("/x", "b")


def test_blank_lines_do_not_split_a_group() -> None:
    rules = parse("User-agent: a\n\n\nUser-agent: b\n\nDisallow: /x\n\n\nDisallow: /y\n")
    for agent in ("a", "b"):
        assert not rules.allowed("/x", agent)
        assert not rules.allowed("/y", agent)


def test_comments_do_not_split_a_group() -> None:
    rules = parse("User-agent: a\n# note\nUser-agent: b\n# note\nDisallow: /x\n")
    assert not rules.allowed("/x", "a")


@pytest.mark.parametrize(
    "record",
    [
        "Sitemap: https://example.org/s.xml",
        "Crawl-delay: 5",
        "Host: example.org",
        "Request-rate: 1/5",
        "X-Unknown-Field: whatever",
        "this line means nothing",
    ],
)
def test_other_records_do_not_split_a_group(record: str) -> None:
    rules = parse(f"User-agent: a\n{record}\nUser-agent: b\nDisallow: /x\n{record}\nAllow: /x/y\n")
    for agent in ("a", "b"):
        assert not rules.allowed("/x", agent)
        assert rules.allowed("/x/y", agent)


def test_groups_for_the_same_agent_are_merged() -> None:
    rules = parse(
        "User-agent: a\nDisallow: /one\n\nUser-agent: *\nDisallow: /star\n\n"
        "User-agent: A\nDisallow: /two\nAllow: /one/ok\n"
    )
    assert not rules.allowed("/one", "a")
    assert not rules.allowed("/two", "a")
    assert rules.allowed("/one/ok", "a")
    assert rules.allowed("/star", "a")


def test_star_groups_are_merged_too() -> None:
    rules = parse(
        "User-agent: *\nDisallow: /one\nUser-agent: x\nAllow: /\nUser-agent: *\nDisallow: /two\n"
    )
    assert not rules.allowed("/one", "other")
    assert not rules.allowed("/two", "other")


def test_agent_matching_is_case_insensitive() -> None:
    rules = parse("User-agent: CourTLY\nDisallow: /x\n")
    assert not rules.allowed("/x", "courtly")
    assert not rules.allowed("/x", "COURTLY/2.0")


def test_agent_matching_is_exact_not_prefix() -> None:
    rules = parse("User-agent: Foo\nDisallow: /foo\n\nUser-agent: FooBotExtra\nDisallow: /extra\n")
    assert rules.allowed("/foo", "FooBot")
    assert rules.allowed("/extra", "FooBot")
    assert not rules.allowed("/foo", "Foo")


@pytest.mark.parametrize("value", ["FooBot/1.0", "FooBot*", "foobot", "FOOBOT/2 (compatible)"])
def test_agent_value_with_version_or_star_names_the_token(value: str) -> None:
    rules = parse(f"User-agent: {value}\nDisallow: /x\n")
    assert not rules.allowed("/x", "FooBot")
    assert rules.allowed("/x", "Foo")


def test_full_user_agent_string_is_reduced_to_its_product_token() -> None:
    assert product_token(UA) == "courtly"
    assert product_token("  Courtly_Bot-2/1.0") == "courtly_bot-"
    assert product_token("") == ""
    assert product_token("/1.0") == ""
    rules = parse("User-agent: courtly\nDisallow: /private\n")
    assert not rules.allowed("https://example.org/private", UA)


def test_no_matching_group_falls_back_to_star() -> None:
    rules = parse("User-agent: other\nDisallow: /\n\nUser-agent: *\nDisallow: /star\n")
    assert not rules.allowed("/star", UA)
    assert rules.allowed("/other", UA)


def test_own_group_replaces_the_star_group() -> None:
    rules = parse("User-agent: *\nDisallow: /star\n\nUser-agent: courtly\nDisallow: /own\n")
    assert rules.allowed("/star", UA)
    assert not rules.allowed("/own", UA)


def test_matching_group_without_rules_allows_everything() -> None:
    rules = parse("User-agent: *\nDisallow: /\n\nUser-agent: courtly\n")
    assert rules.allowed("/anything", UA)


def test_no_groups_at_all_allows_everything() -> None:
    assert parse("").allowed("/x", UA)
    assert parse("# only a comment\nSitemap: https://e.org/s.xml\n").allowed("/x", UA)


def test_rules_before_the_first_user_agent_are_ignored() -> None:
    rules = parse("Disallow: /early\nAllow: /x\nUser-agent: *\nDisallow: /late\n")
    assert rules.allowed("/early", UA)
    assert not rules.allowed("/late", UA)


def test_empty_agent_string_uses_the_star_group() -> None:
    rules = parse("User-agent: *\nDisallow: /x\n")
    assert not rules.allowed("/x", "")


def test_agent_values_without_a_token_bind_nobody() -> None:
    rules = parse("User-agent: 360Spider\nDisallow: /\n\nUser-agent: *\nDisallow: /star\n")
    assert rules.allowed("/page", UA)
    assert not rules.allowed("/star", UA)
    assert rules.agents == ["*"]


def test_star_followed_by_text_is_the_catch_all() -> None:
    rules = parse("User-agent: * # everyone\nDisallow: /x\n")
    assert not rules.allowed("/x", UA)


def test_rules_for_lists_the_merged_rules_in_file_order() -> None:
    rules = parse(
        "User-agent: courtly\nDisallow: /a\nUser-agent: x\nAllow: /\n"
        "User-agent: courtly\nAllow: /b\n"
    )
    assert [(rule.pattern, rule.allow) for rule in rules.rules_for(UA)] == [
        ("/a", False),
        ("/b", True),
    ]
    assert rules.rules_for("nobody") == ()


def test_allow_all_and_disallow_all() -> None:
    assert RobotsRules.allow_all().allowed("/x", UA)
    blocked = RobotsRules.disallow_all()
    assert not blocked.allowed("/x", UA)
    assert not blocked.allowed("/", UA)
    assert blocked.allowed("/robots.txt", UA)

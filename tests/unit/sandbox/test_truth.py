from __future__ import annotations

from courtly.sandbox import SandboxTruth
from tests.unit.sandbox.conftest import host_with_robots


def test_expected_pages_for_courtly(truth: SandboxTruth) -> None:
    world = truth.world
    expected = truth.expected_pages("courtly")
    assert 100 <= len(expected) <= 200
    hosts = {url.split("/")[2].split(":")[0] for url in expected}
    for name in hosts:
        profile = world.profile(name)
        assert profile is not None and not profile.dead
        assert profile.robots_variant not in ("server_error", "hang", "token_blocked")
    for url in expected:
        assert not truth.disallowed(url, "courtly")
        assert not truth.nofollow_only(url)
        assert not truth.is_trap(url)
        assert "/big.html" not in url and "/bomb.html" not in url and "/r/long-target" not in url
    rules = host_with_robots(truth, "rules")
    assert world.url(rules, "/private/open/0.html") in expected
    assert world.url(rules, "/nobots/0.html") in expected
    assert world.url(rules, "/private/0.html") not in expected
    assert world.url(rules, "/r/target.html") in expected
    assert world.url(rules, "/meta-nf.html") in expected
    assert world.url(rules, "/meta-nf/0.html") not in expected
    assert world.url(rules, "/sm/1.html") not in expected
    assert world.url(rules, "/sm/1.html") in truth.expected_pages("courtly", follow_sitemaps=True)


def test_expected_pages_depend_on_the_token_and_the_scope(truth: SandboxTruth) -> None:
    world = truth.world
    mine, theirs = truth.expected_pages("courtly"), truth.expected_pages("somebot")
    assert mine != theirs
    assert world.url(host_with_robots(truth, "token_open"), "/") in mine
    assert world.url(host_with_robots(truth, "token_open"), "/") not in theirs
    assert world.url(host_with_robots(truth, "token_blocked"), "/") in theirs
    seed = world.url(host_with_robots(truth, "missing"))
    one_host = truth.expected_pages("courtly", scope="host", seeds=[seed])
    one_site = truth.expected_pages("courtly", scope="domain", seeds=[seed])
    assert one_host < one_site <= truth.expected_pages("courtly", scope="any", seeds=[seed])
    assert {u.split("/")[2] for u in one_host} == {seed.split("/")[2]}


def test_disallowed_and_crawl_delay(truth: SandboxTruth) -> None:
    world = truth.world
    rules = host_with_robots(truth, "rules")
    assert truth.disallowed(world.url(rules, "/private/0.html"), "courtly")
    assert not truth.disallowed(world.url(rules, "/private/open/0.html"), "courtly")
    assert truth.disallowed(world.url(rules, "/private/open/0.html"), "somebot")
    assert truth.disallowed(world.url(rules, "/no-courtly/0.html"), "courtly")
    assert not truth.disallowed(world.url(rules, "/no-courtly/0.html"), "somebot")
    failing = host_with_robots(truth, "server_error")
    assert truth.robots_unavailable(failing)
    assert truth.disallowed(world.url(failing, "/"), "courtly")
    assert not truth.disallowed(world.url(failing, "/robots.txt"), "courtly")
    assert truth.robots_unavailable(host_with_robots(truth, "hang"))
    assert not truth.robots_unavailable(host_with_robots(truth, "missing"))
    assert not truth.disallowed("http://elsewhere.invalid/x", "courtly")
    assert truth.crawl_delay_s(host_with_robots(truth, "crawl_delay"), "courtly") == 0.1
    assert truth.crawl_delay_s(host_with_robots(truth, "crawl_delay"), "somebot") == 0.2
    assert truth.crawl_delay_s(rules, "courtly") == 0.0
    moved = host_with_robots(truth, "redirect")
    assert truth.is_robots_path(moved, "/robots-moved.txt")
    assert not truth.is_robots_path(rules, "/robots-moved.txt")

"""Traps by shape: template walks are bounded per chain and per template per host."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from courtly.frontier.traps import WalkConfig, WalkGuard, is_walk_step, url_template, walk_key


def test_templates_replace_digit_runs() -> None:
    assert url_template("http://a.test/calendar/2026/01/") == "/calendar/{n}/{n}/"
    assert url_template("http://a.test/list?page=12&x=a") == "/list?page={n}&x=a"
    assert url_template("http://a.test") == "/"


def test_walk_steps() -> None:
    assert walk_key("http://a.test/calendar/2026/1/", "http://a.test/calendar/2026/2/") == (
        "/calendar/{n}/{n}/"
    )
    assert walk_key("http://a.test/l?page=3", "http://a.test/l?page=4") == "/l?page={n}"
    assert walk_key("http://a.test/deep/x/", "http://a.test/deep/x/y/") == "deeper:/deep/"
    assert not is_walk_step("http://a.test/", "http://a.test/calendar/2026/1/")  # an entry
    assert not is_walk_step("http://a.test/p/1.html", "http://b.test/p/2.html")  # another host
    assert not is_walk_step("http://a.test/p/1.html", "http://a.test/p/1.html")
    assert not is_walk_step("http://a.test/p/1.html", "http://a.test/q/2.html")
    assert not is_walk_step("http://a.test/d/a.html", "http://a.test/d/b.html")  # a sibling
    assert walk_key("http://a.test/d/a.html", "http://a.test/d/e/b.html") == "deeper:/d/"
    assert not is_walk_step("http://a.test:81/p/1.html", "http://a.test:8/p/2.html")


def _walk(guard: WalkGuard, start: str, step: str, n: int) -> list[str]:
    """Follow ``n`` links ``start`` -> ``start+step`` -> ..., fetching what is admitted."""
    admitted: list[str] = []
    page, chain = start, guard.read(start)
    for i in range(1, n + 1):
        url = f"{step}{i}/"
        reason, new_chain = guard.check(page, chain, url)
        if reason is not None:
            break
        guard.settle(page, url, new_chain, queued=True)
        admitted.append(url)
        page, chain = url, guard.read(url)
    return admitted


def test_a_chain_stops_at_max_chain() -> None:
    guard = WalkGuard(WalkConfig(max_chain=5, walk_from=10, max_walking=100))
    got = _walk(guard, "http://a.test/cal/0/", "http://a.test/cal/", 50)
    assert len(got) == 5
    assert len(guard) == 0  # every admitted URL was read: nothing left remembered


def test_walking_urls_share_one_budget_per_template_per_host() -> None:
    guard = WalkGuard(WalkConfig(max_chain=100, walk_from=2, max_walking=7))
    first = _walk(guard, "http://a.test/cal/0/", "http://a.test/cal/", 50)
    second = _walk(guard, "http://a.test/cal/100/", "http://a.test/cal/1", 50)
    other_host = _walk(guard, "http://b.test/cal/0/", "http://b.test/cal/", 50)
    assert len(first) == 2 + 7 and len(second) == 2  # the budget is spent after hop 2
    assert len(other_host) == 9
    assert guard.walking("http://a.test", "/cal/{n}/") == 7


def test_a_place_not_used_is_given_back() -> None:
    guard = WalkGuard(WalkConfig(max_chain=10, walk_from=0, max_walking=1))
    reason, chain = guard.check("http://a.test/c/1/", 0, "http://a.test/c/2/")
    assert reason is None and chain == 1
    assert guard.check("http://a.test/c/1/", 0, "http://a.test/c/3/")[0] == "template_budget"
    guard.settle("http://a.test/c/1/", "http://a.test/c/2/", chain, queued=False)  # was seen
    assert guard.walking("http://a.test", "/c/{n}/") == 0
    assert guard.check("http://a.test/c/1/", 0, "http://a.test/c/3/")[0] is None


_links = st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 30), st.booleans()), min_size=1, max_size=300
)


@settings(max_examples=200, deadline=None)
@given(_links, st.integers(1, 6), st.integers(0, 4), st.integers(0, 10))
def test_a_calendar_costs_at_most_its_bounds_however_it_is_linked(
    links: list[tuple[int, int, bool]], max_chain: int, walk_from: int, max_walking: int
) -> None:
    """Pages fetched in any order; every admitted URL's chain is within max_chain and the
    walking ones (chain > walk_from) never exceed max_walking for the one template."""
    config = WalkConfig(max_chain=max_chain, walk_from=walk_from, max_walking=max_walking)
    guard = WalkGuard(config)
    queued: dict[str, int] = {"http://a.test/": 0}
    fetched: dict[str, int] = {}
    for source, target, take_new in links:
        pages = sorted(queued)
        page = pages[source % len(pages)]
        chain = guard.read(page)
        fetched[page] = chain
        del queued[page]
        url = f"http://a.test/cal/{target}/"
        reason, new_chain = guard.check(page, chain, url)
        known = url in queued or url in fetched
        if reason is None:
            guard.settle(page, url, new_chain, queued=not known and take_new)
            if not known and take_new:
                queued[url] = new_chain
        if not queued:
            queued["http://a.test/"] = 0
    chains = [*fetched.values(), *queued.values()]
    assert all(c <= max_chain for c in chains)
    assert sum(1 for c in chains if c > walk_from) <= max_walking
    assert guard.walking("http://a.test", "/cal/{n}/") == sum(1 for c in chains if c > walk_from)


def test_a_link_back_to_an_admitted_walking_url_is_not_refused() -> None:
    """A calendar's last month links back to the one before: no skip entry for a page
    that was fetched (it would replace its catalogue entry)."""
    guard = WalkGuard(WalkConfig(max_chain=3, walk_from=1, max_walking=10))
    got = _walk(guard, "http://a.test/cal/0/", "http://a.test/cal/", 50)
    assert len(got) == 3
    last, before = got[-1], got[-2]
    assert guard.check(last, 3, "http://a.test/cal/9/")[0] == "template_chain"  # onward
    assert guard.check(last, 3, before) == (None, 0)  # back: the store will say seen

"""Importance learnt while crawling: cash flows along links, levels follow it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from courtly.frontier.importance import Importance, ImportanceConfig
from courtly.frontier.prioritiser import PrioritySignals, prioritise


def test_cash_is_split_among_the_links_and_spent() -> None:
    imp = Importance(ImportanceConfig(seed_cash=1.0, base_cash=0.0))
    imp.seed("http://a/")
    imp.read("http://a/", "a", [("http://a/x", "a"), ("http://b/", "b")])
    assert imp.cash("http://a/") == 0.0
    assert imp.cash("http://a/x") == imp.cash("http://b/") == 0.5
    imp.read("http://a/x", "a", [("http://b/", "b")])
    assert imp.cash("http://b/") == 1.0  # linked twice: all the cash so far
    signals = imp.signals("http://b/", "b")
    assert signals.inlinks == 2 and signals.host_quality > 0  # linked from another host


@given(st.lists(st.tuples(st.integers(0, 9), st.lists(st.integers(0, 9), max_size=5))))
def test_cash_is_conserved_with_no_base(reads: list[tuple[int, list[int]]]) -> None:
    """Without base cash no cash is made or lost: the seeds' cash is only passed on
    (a page with no links keeps nothing: its cash is spent on nobody)."""
    imp = Importance(ImportanceConfig(seed_cash=1.0, base_cash=0.0))
    imp.seed("u0")
    total = 1.0
    for page, links in reads:
        url = f"u{page}"
        held = imp.cash(url)
        targets = [(f"u{i}", "h") for i in dict.fromkeys(links)]
        imp.read(url, "h", targets)
        if not targets:
            total -= held
    assert abs(sum(imp.cash(f"u{i}") for i in range(10)) - total) < 1e-9


def test_richer_urls_get_lower_levels() -> None:
    rich = prioritise(PrioritySignals(depth=0, cash_ratio=3.0), 4)
    plain = prioritise(PrioritySignals(depth=0, cash_ratio=1.0), 4)
    poor = prioritise(PrioritySignals(depth=0, cash_ratio=0.2), 4)
    assert rich < plain < poor
    assert prioritise(PrioritySignals(is_seed=True, cash_ratio=0.0), 4) == 0


def test_the_tables_are_bounded() -> None:
    imp = Importance(ImportanceConfig(max_urls=10))
    for i in range(100):
        imp.read(f"p{i}", "h", [(f"u{i}-{j}", "h") for j in range(3)])
        assert len(imp) <= 10


def test_a_link_read_elsewhere_is_split_there_and_credited_by_its_owner() -> None:
    here, owner, whole = Importance(), Importance(), Importance()
    links = [("http://a.test/x", "a.test"), ("http://b.test/y", "b.test")]
    for table in (here, whole):
        table.seed("http://a.test/")
    share = here.read("http://a.test/", "a.test", links, [False, True])
    whole.read("http://a.test/", "a.test", links)
    assert share == whole.cash("http://b.test/y") == here.cash("http://a.test/x")
    assert here.cash("http://b.test/y") == 0.0
    owner.credit("http://b.test/y", "b.test", share, cross_host=True)
    assert owner.peek("http://b.test/y", "b.test") == whole.peek("http://b.test/y", "b.test")
    assert owner.cash("http://b.test/y") == whole.cash("http://b.test/y")

"""Why a crawl stopped when its frontier ran out."""

from __future__ import annotations

from courtly.stop import ending


def test_a_crawl_that_fetched_pages_is_done_whatever_was_retired() -> None:
    assert ending(5, {"blocked": 3, "dead": 1}) == ("done", None)


def test_a_crawl_with_no_page_and_no_unfetchable_host_is_done() -> None:
    assert ending(0, {}) == ("done", None)
    assert ending(0, {"budget": 2}) == ("done", None)


def test_every_host_blocked_names_the_flag_that_allows_them() -> None:
    reason, detail = ending(0, {"blocked": 2})
    assert reason == "nothing_fetchable"
    assert detail is not None
    assert "every host was refused by the address guard" in detail
    assert "--allow-private-networks" in detail


def test_every_host_dead_says_so() -> None:
    reason, detail = ending(0, {"dead": 1})
    assert reason == "nothing_fetchable"
    assert detail is not None and "every host was unreachable" in detail


def test_mixed_reasons_are_each_counted_with_their_flag() -> None:
    reason, detail = ending(0, {"blocked": 1, "dead": 2, "failing": 1})
    assert reason == "nothing_fetchable"
    assert detail is not None
    assert "1 host was refused by the address guard" in detail
    assert "2 hosts were unreachable" in detail
    assert "1 host was parked for good" in detail
    assert "--allow-private-networks" in detail

from __future__ import annotations

from courtly.frontier.prioritiser import INLINKS_STEP, PrioritySignals, is_lifted, prioritise


def test_seeds_and_recrawls_go_first() -> None:
    assert prioritise(PrioritySignals(depth=9, is_seed=True), 4) == 0
    assert prioritise(PrioritySignals(depth=9, is_recrawl=True), 4) == 0


def test_deeper_pages_sink() -> None:
    levels = [prioritise(PrioritySignals(depth=d), 5) for d in range(0, 12, 2)]
    assert levels == sorted(levels)
    assert levels[0] == 2 and levels[-1] == 4


def test_inlinks_and_host_quality_lift() -> None:
    base = prioritise(PrioritySignals(depth=2), 5)
    assert base == 3
    assert prioritise(PrioritySignals(depth=2, inlinks=2 * INLINKS_STEP), 5) == base - 2
    assert prioritise(PrioritySignals(depth=2, host_quality=1.0), 5) == base - 1
    assert prioritise(PrioritySignals(depth=2, host_quality=-1.0), 5) == base + 1


def test_level_is_clamped() -> None:
    assert prioritise(PrioritySignals(depth=1000), 3) == 2
    assert prioritise(PrioritySignals(depth=0, inlinks=1000), 3) == 0


def test_in_links_still_order_a_good_hosts_pages() -> None:
    """A host others link to lifts all its pages; in-links must still tell them apart
    (the level orders the host's back queue), with the default four levels."""
    few = prioritise(PrioritySignals(depth=1, inlinks=1, host_quality=1.0), 4)
    many = prioritise(PrioritySignals(depth=1, inlinks=4, host_quality=1.0), 4)
    assert many < few


def test_lifted_when_the_last_in_link_crossed_a_step() -> None:
    assert is_lifted(PrioritySignals(depth=1, inlinks=4), 4)
    assert not is_lifted(PrioritySignals(depth=1, inlinks=5), 4)
    assert not is_lifted(PrioritySignals(depth=1, inlinks=0), 4)
    assert not is_lifted(PrioritySignals(is_seed=True, inlinks=4), 4)
    # already at the top level: nothing left to gain
    assert not is_lifted(PrioritySignals(depth=0, inlinks=12, host_quality=1.0), 4)

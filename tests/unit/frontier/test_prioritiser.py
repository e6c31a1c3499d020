from __future__ import annotations

from courtly.frontier.prioritiser import PrioritySignals, prioritise


def test_seeds_and_recrawls_go_first() -> None:
    assert prioritise(PrioritySignals(depth=9, is_seed=True), 4) == 0
    assert prioritise(PrioritySignals(depth=9, is_recrawl=True), 4) == 0


def test_deeper_pages_sink() -> None:
    levels = [prioritise(PrioritySignals(depth=d), 5) for d in range(0, 12, 2)]
    assert levels == sorted(levels)
    assert levels[0] == 1 and levels[-1] == 4


def test_inlinks_and_host_quality_lift() -> None:
    base = prioritise(PrioritySignals(depth=4), 5)
    assert prioritise(PrioritySignals(depth=4, inlinks=8), 5) == base - 2
    assert prioritise(PrioritySignals(depth=4, host_quality=1.0), 5) == base - 1
    assert prioritise(PrioritySignals(depth=4, host_quality=-1.0), 5) == base + 1


def test_level_is_clamped() -> None:
    assert prioritise(PrioritySignals(depth=1000), 3) == 2
    assert prioritise(PrioritySignals(depth=0, inlinks=1000), 3) == 0

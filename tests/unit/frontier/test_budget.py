from __future__ import annotations

import pytest

from courtly.frontier.budget import BudgetConfig, is_host_over_request_budget, is_over_queue_budget


def test_queue_budget() -> None:
    cfg = BudgetConfig(max_queued_per_host=2, max_queued=5)
    assert is_over_queue_budget(1, 4, cfg) == 0
    assert is_over_queue_budget(2, 0, cfg) == 1
    assert is_over_queue_budget(0, 5, cfg) == 2
    assert is_over_queue_budget(10**9, 10**9, BudgetConfig(None, None, None, None)) == 0


def test_request_budget() -> None:
    cfg = BudgetConfig(max_requests_per_host=3)
    assert not is_host_over_request_budget(2, cfg)
    assert is_host_over_request_budget(3, cfg)
    assert not is_host_over_request_budget(10**6, BudgetConfig())


def test_negative_caps_are_refused() -> None:
    with pytest.raises(ValueError):
        BudgetConfig(max_queued=-1)

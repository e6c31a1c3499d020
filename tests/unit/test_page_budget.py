"""The page budget: claims never exceed it, settlements give unused units back."""

from __future__ import annotations

import multiprocessing

import pytest
from hypothesis import given
from hypothesis import strategies as st

from courtly.page_budget import LocalPageBudget, PageBudget, SharedPageBudget


def _budgets(max_pages: int) -> list[PageBudget]:
    context = multiprocessing.get_context("spawn")
    return [LocalPageBudget(max_pages), SharedPageBudget.create(context, max_pages)]


@given(
    max_pages=st.integers(1, 20),
    steps=st.lists(st.tuples(st.integers(0, 6), st.booleans()), max_size=60),
)
def test_pages_plus_claims_never_exceed_the_budget(
    max_pages: int, steps: list[tuple[int, bool]]
) -> None:
    for budget in _budgets(max_pages):
        held = pages = 0
        for wanted, makes_page in steps:
            granted = budget.claim(wanted)
            assert 0 <= granted <= wanted
            assert granted == min(wanted, max_pages - pages - held)
            held += granted
            if held:  # one claimed fetch ends, with or without a page
                budget.settle(1, 1 if makes_page else 0)
                held -= 1
                pages += makes_page
            assert pages + held <= max_pages
            assert budget.spent() == (pages >= max_pages)
        budget.settle(held, 0)
        assert budget.claim(max_pages) == max_pages - pages


def test_settling_more_than_was_claimed_is_refused() -> None:
    for budget in _budgets(3):
        assert budget.claim(2) == 2
        with pytest.raises(ValueError, match="settling"):
            budget.settle(3, 0)
        with pytest.raises(ValueError, match="settling"):
            budget.settle(1, 2)

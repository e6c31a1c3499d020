"""A recrawl row flattened for SQLite and Redis: fields added since the first layout go
last, so a row written before them (a Redis payload) still reads, the new fields None."""

from __future__ import annotations

from courtly.fetch.validators import Validators
from courtly.frontier.revisit import RevisitState
from courtly.store.revisit_rows import STATE_COLUMNS, state_from_values, state_values

STATE = RevisitState(
    "http://a.test/p",
    visits=4,
    comparisons=3,
    changes=1,
    changed_ring=(30.0,),
    validators=Validators('"e"', None, False, True, 0, 2),
    status=200,
    last_fetch_at=1_000.0,
    judged_at=900.0,
)


def test_a_state_round_trips_in_column_order() -> None:
    values = state_values(STATE)
    assert len(values) == len(STATE_COLUMNS) and STATE_COLUMNS[-1] == "judged_at"
    assert state_from_values(values) == STATE


def test_a_row_written_before_judged_at_reads_it_as_none() -> None:
    older = state_values(STATE)[:-1]  # the version 6 layout: judged_at was not kept
    state = state_from_values(older)
    assert state.judged_at is None and state.compared_at == STATE.last_fetch_at
    assert state.validators == STATE.validators and state.changed_ring == (30.0,)

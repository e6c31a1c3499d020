"""What the scheduler pokes in Scrapy's engine is still there (fails if Scrapy renames it)."""

from __future__ import annotations

import inspect

from scrapy.core import engine as scrapy_engine
from scrapy.utils.reactor import CallLaterOnce

from courtly.integrations.scrapy.engine import wake_engine


class _NextCall:
    def __init__(self) -> None:
        self.scheduled = 0
        self.called = 0

    def schedule(self) -> None:
        self.scheduled += 1

    def __call__(self) -> None:
        self.called += 1


class _Slot:
    def __init__(self) -> None:
        self.nextcall = _NextCall()


class _Engine:
    def __init__(self) -> None:
        self._slot = _Slot()


def test_wake_engine_schedules_the_slots_nextcall() -> None:
    engine = _Engine()
    assert wake_engine(engine)
    assert (engine._slot.nextcall.scheduled, engine._slot.nextcall.called) == (1, 0)


def test_wake_engine_at_once_runs_the_poll_now() -> None:
    engine = _Engine()
    assert wake_engine(engine, at_once=True)
    assert (engine._slot.nextcall.scheduled, engine._slot.nextcall.called) == (0, 1)


def test_wake_engine_says_so_when_there_is_nothing_to_poke() -> None:
    assert not wake_engine(object())


def test_scrapys_engine_still_has_slot_nextcall() -> None:
    source = inspect.getsource(scrapy_engine.ExecutionEngine)
    assert "self._slot = _Slot(" in source
    assert "self._slot.nextcall.schedule()" in source
    slot_init = inspect.signature(scrapy_engine._Slot.__init__)
    assert "nextcall" in slot_init.parameters
    assert "self.nextcall" in inspect.getsource(scrapy_engine._Slot.__init__)
    # The loop runs a CallLaterOnce by calling it; so does wake_engine(at_once=True).
    assert "__call__" in vars(CallLaterOnce)
    assert "CallLaterOnce(self._start_scheduled_requests)" in source

"""What the scheduler pokes in Scrapy's engine is still there (fails if Scrapy renames it),
on the newest Scrapy and on the oldest supported one."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest
import scrapy
from scrapy.core import engine as scrapy_engine
from scrapy.utils.reactor import CallLaterOnce

from courtly.integrations.scrapy.engine import wake_engine

OLDEST = Path(sys.prefix) / "scrapy-oldest"
"""Scrapy 2.13 and a Twisted it works with, installed there by ``make`` (the Makefile)."""


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


def check_scrapys_engine_has_slot_nextcall() -> str:
    """Fail if the engine no longer has what :func:`wake_engine` pokes; the version checked."""
    source = inspect.getsource(scrapy_engine.ExecutionEngine)
    assert "self._slot = _Slot(" in source
    assert "self._slot.nextcall.schedule()" in source
    slot_init = inspect.signature(scrapy_engine._Slot.__init__)
    assert "nextcall" in slot_init.parameters
    assert "self.nextcall" in inspect.getsource(scrapy_engine._Slot.__init__)
    # The loop runs a CallLaterOnce by calling it; so does wake_engine(at_once=True).
    assert "__call__" in vars(CallLaterOnce)
    assert "CallLaterOnce(self._start_scheduled_requests)" in source
    return str(scrapy.__version__)


def test_scrapys_engine_still_has_slot_nextcall() -> None:
    assert check_scrapys_engine_has_slot_nextcall() == scrapy.__version__


def test_the_oldest_supported_scrapys_engine_has_slot_nextcall_too() -> None:
    """The same check in a child process on Scrapy 2.13 (``make`` installs it beside the
    newest; CI fails instead of skipping when it is missing)."""
    if not (OLDEST / "scrapy").is_dir():
        message = f"the oldest supported Scrapy is not installed in {OLDEST} (run make)"
        if os.environ.get("COURTLY_REQUIRE_SCRAPY_OLDEST") == "1":
            pytest.fail(message)
        pytest.skip(message)
    root = Path(__file__).resolve().parents[3]
    path = os.pathsep.join([str(OLDEST), str(root / "src"), str(root)])
    code = (
        "from tests.unit.integrations.test_scrapy_engine import "
        "check_scrapys_engine_has_slot_nextcall as check; print(check())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().startswith("2.13."), done.stdout

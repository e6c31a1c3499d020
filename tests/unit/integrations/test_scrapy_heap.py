"""The add-on freezes the heap at spider open and thaws it at close, once each."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from scrapy.settings import Settings

from courtly.heap import FrozenHeap
from courtly.integrations.scrapy import CourtlySettings


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_freeze_moves_the_live_objects_out_of_reach_and_thaw_gives_them_back() -> None:
    """The count of frozen objects only falls between two reads when nothing freezes: a
    frozen object that dies leaves it (a thread of another test in this process, a
    finalizer). So the second freeze is shown to do nothing by objects made alive in
    between staying out of it, not by an equal count (which failed by chance: 205,685
    against 205,687)."""
    heap = FrozenHeap(enabled=True)
    heap.freeze()
    frozen = gc.get_freeze_count()
    assert heap.frozen and frozen > 0
    fresh: list[list[int]] = [[] for _ in range(10_000)]  # alive across the second freeze
    heap.freeze()  # once: a second gc.freeze() would take them in
    assert gc.get_freeze_count() < frozen + len(fresh)
    heap.thaw()
    assert not heap.frozen and gc.get_freeze_count() == 0
    heap.thaw()  # once
    assert gc.get_freeze_count() == 0


def test_a_disabled_heap_leaves_the_collector_alone() -> None:
    heap = FrozenHeap(enabled=False)
    heap.freeze()
    assert not heap.frozen and gc.get_freeze_count() == 0


def test_the_setting_is_on_by_default_and_can_be_turned_off() -> None:
    assert CourtlySettings.from_settings(Settings()).gc_freeze
    off = CourtlySettings.from_settings(Settings({"COURTLY_GC_FREEZE": "false"}))
    assert not off.gc_freeze


def test_thresholds_hold_while_frozen_and_the_old_ones_come_back() -> None:
    before = gc.get_threshold()
    heap = FrozenHeap(enabled=True, thresholds=(10_000, 10, 10))
    heap.freeze()
    assert gc.get_threshold() == (10_000, 10, 10)
    heap.thaw()
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0

"""A store that fails for good (a full disk under the SQLite store: ``CrawlFailed``)
closes the spider once, with the store's message, instead of a traceback at every step
while the spider runs on with nothing to crawl."""

from __future__ import annotations

import asyncio
import logging

import pytest

from courtly.clock import FakeClock
from courtly.errors import CrawlFailed, StateError
from courtly.frontier import QueueConfig, QueuedUrl
from courtly.integrations.scrapy import CourtlySettings
from courtly.store.base import LeaseBatch
from courtly.store.memory import MemoryStore
from tests.unit.integrations.refills import make_refill

MESSAGE = "frontier.sqlite3: the state file failed (the disk is full: database or disk is full)"


class FullDiskStore(MemoryStore):
    """A store whose writes fail, as the SQLite store's do once its disk is full."""

    def __init__(self, error: Exception) -> None:
        super().__init__(QueueConfig())
        self.error = error

    async def lease(
        self, now_at: float, ttl_s: float, max_leases: int, *, ahead_s: float = 0.0
    ) -> LeaseBatch:
        raise self.error


@pytest.mark.parametrize("error", [CrawlFailed(MESSAGE), StateError(MESSAGE)])
async def test_a_store_that_fails_for_good_closes_the_spider_once(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    closed: list[bool] = []
    config = CourtlySettings(state_dir=None, store="memory", min_delay_s=0.5)
    refill, frontier, _pipe = make_refill(
        FullDiskStore(error), FakeClock(), config, on_store_error=lambda: closed.append(True)
    )
    await frontier.add_queued([QueuedUrl("http://a.test/1", "a.test", 0, 0)])
    with caplog.at_level(logging.ERROR):
        await asyncio.wait_for(refill.run(), timeout=5.0)
    assert closed == [True]
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(failures) == 1 and MESSAGE in failures[0].getMessage(), caplog.text

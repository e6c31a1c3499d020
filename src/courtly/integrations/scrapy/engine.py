"""The two places the scheduler touches Scrapy's engine beyond its public calls.

* :func:`wake_engine`: Scrapy has no public way to tell the engine "a request is
  due now"; between downloads it polls the scheduler only on a 5 s heartbeat. The
  engine's slot holds ``nextcall`` (a ``CallLaterOnce`` of
  ``_start_scheduled_requests``); scheduling it makes the engine poll at once.
  ``engine._slot`` since Scrapy 2.13. The integration tests fail if it goes.
  With ``at_once`` the poll runs now, in the caller's turn of the loop, instead of
  on the next one (``CallLaterOnce`` is callable: that is how the loop runs it):
  only from a loop callback of the scheduler's own, never from inside the
  engine's or the downloader's code (a signal handler), which it would re-enter.
* :func:`download`: a request sent down the downloader (its middlewares included),
  past the scheduler: ``engine.download_async`` (2.14+) or ``engine.download``.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future

__all__ = ["download", "wake_engine"]


def wake_engine(engine: Any, *, at_once: bool = False) -> bool:
    """Make ``engine`` ask the scheduler for requests (on the next turn of the loop, or
    now with ``at_once``); ``False`` if it cannot be poked."""
    slot = getattr(engine, "_slot", None)
    nextcall = getattr(slot, "nextcall", None)
    schedule = getattr(nextcall, "schedule", None)
    if schedule is None:
        return False
    if at_once and callable(nextcall):
        nextcall()
    else:
        schedule()
    return True


async def download(engine: Any, request: Request) -> Response:
    """Download ``request`` through the downloader middlewares, not the spider."""
    download_async = getattr(engine, "download_async", None)
    if download_async is not None:
        response: Response = await download_async(request)
        return response
    return await maybe_deferred_to_future(engine.download(request))

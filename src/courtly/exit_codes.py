"""How a ``courtly crawl`` ended, as an exit code and in words.

=====  ===================  =====================================================
code   name                 meaning
=====  ===================  =====================================================
0      ``DONE``             the crawl ended by itself: nothing left to fetch
1      ``FAILED``           the crawl broke off (a partition failed, a disk error)
2      ``REFUSED``          refused input: a bad flag, setting, seed or state
                            directory; nothing was written (click's usage code)
3      ``LIMIT``            stopped by ``--max-time`` or ``--max-pages``
4      ``SIGNAL``           stopped by SIGINT, SIGTERM or SIGHUP (Ctrl-C, a hangup)
5      ``NOTHING_FETCHED``  the run tried and fetched no page (every seed blocked,
                            dead, disallowed by robots.txt, or unreachable)
=====  ===================  =====================================================

A signal wins over the others (the operator chose to stop); a run that fetched
nothing says so (5) even when a limit stopped it, unless it is one process of a shared
(Redis) crawl whose other processes fetched pages. Resuming a crawl that is already
complete tries nothing and exits 0.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # annotations only: the exit codes load without the crawl (courtly.start)
    from courtly.crawl import CrawlSnapshot

__all__ = ["STOP_REASONS", "ExitCode", "exit_code_for", "stop_reason_words"]


class ExitCode(enum.IntEnum):
    """The exit status of ``courtly crawl`` (see the module doc)."""

    DONE = 0
    FAILED = 1
    REFUSED = 2
    LIMIT = 3
    SIGNAL = 4
    NOTHING_FETCHED = 5


STOP_REASONS: Final = {
    "done": "done: nothing left to fetch",
    "max_time": "stopped by --max-time",
    "max_pages": "stopped by --max-pages",
    "signal": "stopped by a signal (Ctrl-C, SIGTERM or a hangup)",
    "aborted": "stopped at once by a second signal",
    "nothing_fetchable": "nothing left that can be fetched",
    "error": "failed",
}
"""``CrawlSnapshot.stop_reason`` in words."""


def stop_reason_words(reason: str | None) -> str:
    """``reason`` in words (``None``: the crawl has not stopped)."""
    if reason is None:
        return "not stopped"
    return STOP_REASONS.get(reason, reason)


def exit_code_for(snapshot: CrawlSnapshot) -> ExitCode:
    """The exit code of a crawl that ran and returned ``snapshot`` (see the module doc)."""
    reason = snapshot.stop_reason
    if reason in ("signal", "aborted"):
        return ExitCode.SIGNAL
    if reason == "error":
        return ExitCode.FAILED
    tried = bool(
        snapshot.robots_fetches or snapshot.errors or snapshot.skipped or snapshot.statuses
    )
    nothing = snapshot.pages == 0 and not snapshot.others_fetched
    if nothing and (tried or reason == "nothing_fetchable"):
        return ExitCode.NOTHING_FETCHED
    if reason in ("max_time", "max_pages"):
        return ExitCode.LIMIT
    return ExitCode.DONE

"""Why a crawl stopped: the stop reasons, and the words for a crawl that could fetch nothing.

``CrawlSnapshot.stop_reason`` is one of:

==================== ============================================================
``done``             the frontier ran out of URLs (some pages were fetched, or
                     none could be for a reason other than the hosts', e.g. robots.txt)
``nothing_fetchable`` the frontier ran out because every host was retired as
                     unfetchable (blocked by the address guard, dead, failing) and
                     not one page was fetched; ``stop_detail`` says why and which
                     flag changes it
``max_time``         ``--max-time`` was reached
``max_pages``        ``--max-pages`` was reached
``requested``        :meth:`~courtly.crawl.Crawler.request_stop` was called
``signal``           SIGINT/SIGTERM
``aborted``          a second signal, or :meth:`~courtly.crawl.Crawler.abort`
==================== ============================================================
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["UNFETCHABLE", "ending"]

UNFETCHABLE = ("blocked", "dead", "failing")
"""Retirement reasons that mean no request to the host can succeed (``budget`` is not one:
that host was fetched)."""

_WHY = {
    "blocked": (
        "refused by the address guard (private/loopback address): "
        "pass --allow-private-networks to crawl them"
    ),
    "dead": (
        "unreachable (connection refused, DNS failure or timeout on every attempt): "
        "check the seeds' addresses and --hosts-file, or raise --connect-timeout"
    ),
    "failing": (
        "parked for good after failing again and again (5xx or 429): "
        "try again later, or with a larger --min-delay"
    ),
}


def ending(pages: int, retired: Mapping[str, int]) -> tuple[str, str | None]:
    """Pure: ``(stop_reason, stop_detail)`` of a crawl whose frontier ran out.

    ``pages`` is the number of pages fetched in the crawl; ``retired`` counts the
    hosts retired by reason. With no page fetched and at least one host retired
    as unfetchable, the reason is ``nothing_fetchable`` and the detail names each
    unfetchable reason with the flag that changes it; otherwise ``done``, no detail.
    """
    counts = [(reason, retired.get(reason, 0)) for reason in UNFETCHABLE]
    counts = [(reason, count) for reason, count in counts if count > 0]
    if pages > 0 or not counts:
        return "done", None
    if len(counts) == 1 and counts[0][1] == sum(retired.values()):
        return "nothing_fetchable", f"no page could be fetched: every host was {_WHY[counts[0][0]]}"
    parts = [
        f"{count} host{' was' if count == 1 else 's were'} {_WHY[reason]}"
        for reason, count in counts
    ]
    return "nothing_fetchable", "no page could be fetched: " + "; ".join(parts)

"""Why the crawl goes at the speed it does: a pure verdict from frontier sizes.

* **capacity-bound**: hosts are ready (due) and the crawl cannot take them faster:
  every fetcher slot is busy, or the loop is. More fetchers (``--concurrency``) help;
  politeness settings do not.
* **politeness-bound**: URLs are queued but no host is due: every host with work waits
  out its delay. The ``delay_source`` counts say whose rule it is (min delay, k x fetch
  time, Crawl-delay, Retry-After, back-off, parking, robots.txt unreachable).
* **starved**: nothing is queued; the crawl waits for in-flight pages to bring links,
  or is done.
"""

from __future__ import annotations

import enum

__all__ = ["Verdict", "verdict"]


class Verdict(enum.StrEnum):
    CAPACITY_BOUND = "capacity-bound"
    POLITENESS_BOUND = "politeness-bound"
    STARVED = "starved"


def verdict(*, queued: int, hosts_ready: int) -> Verdict:
    """The verdict for ``queued`` URLs waiting (leased ones excluded) and ``hosts_ready``
    hosts due now (with a slot or waiting for one)."""
    if queued <= 0:
        return Verdict.STARVED
    if hosts_ready > 0:
        return Verdict.CAPACITY_BOUND
    return Verdict.POLITENESS_BOUND

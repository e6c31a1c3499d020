"""The prioritiser: URL signals -> front-queue level (0 is the most urgent).

A pure function of plain values. The default policy, for ``levels`` = L:

* seeds go to level 0, and so do recrawls of known pages (a recrawl lane must
  not wait behind bulk discovery);
* discovered URLs start at level ``2 + depth // depth_step`` (shallow pages first:
  breadth-first is the classic way to find good pages early); the start leaves room
  above it, so that the lifts below still tell a host's URLs apart when its host
  quality lifts them all (the level also orders a host's back queue);
* every ``inlinks_step`` in-links seen so far lift a URL one level;
* ``host_quality`` in [-1, 1] shifts it by up to one level either way;
* ``cash_ratio`` (the URL's OPIC cash over the mean of the URLs admitted so far, see
  :mod:`courtly.frontier.importance`) of 2 or more lifts it one level, 1/2 or less
  drops it one;
* the result is clamped to ``[0, L-1]``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = ["INLINKS_STEP", "PrioritySignals", "is_lifted", "level_of", "prioritise"]

INLINKS_STEP = 2
"""In-links that lift a discovered URL one level (the default of ``inlinks_step``).

Two: within a host, whose pages all start at one level, the level is what orders the
back queue, and early in a host's crawl a page has seen only a few of its in-links
(with four, most pages of a host were never told apart before they were fetched)."""


@dataclass(frozen=True, slots=True)
class PrioritySignals:
    """What is known about a URL when it is discovered."""

    depth: int = 0
    is_seed: bool = False
    inlinks: int = 0
    host_quality: float = 0.0
    is_recrawl: bool = False
    cash_ratio: float = 1.0


def prioritise(
    signals: PrioritySignals,
    levels: int,
    *,
    depth_step: int = 2,
    inlinks_step: int = INLINKS_STEP,
) -> int:
    """The front-queue level for a URL with these signals (see the module doc)."""
    if signals.is_seed or signals.is_recrawl:
        return 0
    return level_of(
        signals.depth,
        signals.inlinks,
        signals.host_quality,
        signals.cash_ratio,
        levels,
        depth_step,
        inlinks_step,
    )


def level_of(
    depth: int,
    inlinks: int,
    host_quality: float,
    cash_ratio: float,
    levels: int,
    depth_step: int = 2,
    inlinks_step: int = INLINKS_STEP,
) -> int:
    """:func:`prioritise` for a discovered URL (neither seed nor recrawl), from plain values
    (the link path calls it once per link, without building the signals)."""
    level = 2 + depth // depth_step
    level -= inlinks // inlinks_step
    if host_quality >= 0.5:
        level -= 1
    elif host_quality <= -0.5:
        level += 1
    if cash_ratio >= 2.0:
        level -= 1
    elif cash_ratio <= 0.5:
        level += 1
    if level < 0:
        return 0
    return level if level < levels else levels - 1


def is_lifted(signals: PrioritySignals, levels: int) -> bool:
    """Whether the last in-link counted in ``signals`` improved the URL's level: a URL
    queued before it arrived may now be promoted. Only in-links are compared (the cash
    and host terms move slowly and are read again when the URL is next offered)."""
    if signals.inlinks < 1 or signals.is_seed or signals.is_recrawl:
        return False
    before = dataclasses.replace(signals, inlinks=signals.inlinks - 1)
    return prioritise(signals, levels) < prioritise(before, levels)

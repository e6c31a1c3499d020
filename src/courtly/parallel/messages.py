"""What the parent and a partition's process say to each other (over queues)."""

from __future__ import annotations

from dataclasses import dataclass

from courtly.crawl import CrawlSnapshot

__all__ = ["Abort", "Command", "PartitionStatus", "Probe", "Stop"]


@dataclass(frozen=True, slots=True)
class Probe:
    """Parent -> partition: answer with a :class:`PartitionStatus` for ``round``."""

    round: int


@dataclass(frozen=True, slots=True)
class Stop:
    """Parent -> partition: stop leasing, finish the requests in flight; ``detail``: why,
    in words (another partition's failure), kept in the run's record."""

    reason: str
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Abort:
    """Parent -> partition: stop now (requests in flight are abandoned; nothing is lost)."""


Command = Probe | Stop | Abort


@dataclass(frozen=True, slots=True)
class PartitionStatus:
    """One partition's answer to a probe.

    ``idle``: nothing queued, leased or in flight. ``written[j]``: bytes this
    partition has appended to partition ``j``'s inbox; ``consumed[i]``: bytes it
    has read (and queued) of partition ``i``'s appends to its own inbox.
    """

    index: int
    round: int
    idle: bool
    written: tuple[int, ...]
    consumed: tuple[int, ...]
    snapshot: CrawlSnapshot

"""Frontier configuration: frozen dataclasses, units in the names."""

from __future__ import annotations

from dataclasses import dataclass, field

from courtly.frontier.budget import BudgetConfig
from courtly.frontier.front import default_level_weights
from courtly.frontier.politeness import PolitenessConfig
from courtly.url.params import DEFAULT_PARAMS, ParamPolicy

__all__ = ["FrontierConfig", "QueueConfig", "default_inactive_after_s"]


def default_inactive_after_s(min_delay_s: float) -> float:
    """The default :attr:`QueueConfig.inactive_after_s` for a crawl's minimum delay:
    ``max(5 s, 4 × min_delay_s)``, a few ordinary gaps."""
    return max(5.0, 4.0 * min_delay_s)


@dataclass(frozen=True, slots=True)
class QueueConfig:
    """Shape of the two tiers.

    ``levels`` front queues (0 = most urgent) drawn with ``level_weights``
    (default: each level twice as likely as the next) and ageing after
    ``max_skips`` passes.

    How many hosts are *active* (hold a back-queue slot and sit in the ready
    heap) follows demand: a lease that finds fewer ready hosts than it was asked
    for takes more in (see :mod:`courtly.store.scheduler`). The fields bound it:
    """

    levels: int = 4
    level_weights: tuple[float, ...] | None = None
    max_skips: int = 32
    max_back_queues: int = 10_000
    """Hard cap on active hosts (memory: the ready heap and, in SQLite, pinned host rows)."""
    inactive_after_s: float = 5.0
    """A host whose next allowed time is more than this many seconds away when its lease
    ends gives up its slot (it turns inactive, keeping its URLs and state) until it is
    due. :func:`default_inactive_after_s` gives ``max(5 s, 4 × min delay)``."""
    activation_scan: int = 256
    """Front-tier URLs one lease may pop to take in hosts (at least 4 per lease asked
    for), so that no lease scans the whole front tier."""
    max_due_wait_s: float = 10.0
    """Ageing among due hosts: a lease serves the due host with the best head rank, but
    a host due for longer than this goes first, oldest first
    (:func:`courtly.store.scheduler.is_aged`), so no rank waits indefinitely behind
    better ones in a crawl bound by its fetchers. ``inf`` turns ageing off."""

    def __post_init__(self) -> None:
        if self.levels < 1:
            raise ValueError("levels must be >= 1")
        if self.level_weights is not None and len(self.level_weights) != self.levels:
            raise ValueError("level_weights needs one weight per level")
        if self.max_back_queues < 1:
            raise ValueError("max_back_queues must be >= 1")
        if self.max_skips < 1:
            raise ValueError("max_skips must be >= 1")
        if not self.inactive_after_s >= 0:
            raise ValueError("inactive_after_s must be >= 0")
        if self.activation_scan < 1:
            raise ValueError("activation_scan must be >= 1")
        if not self.max_due_wait_s >= 0:
            raise ValueError("max_due_wait_s must be >= 0")

    @property
    def weights(self) -> tuple[float, ...]:
        return self.level_weights or default_level_weights(self.levels)

    @classmethod
    def for_fetchers(cls, fetchers: int, *, per_fetcher: int = 3, levels: int = 4) -> QueueConfig:
        """A cap of ``per_fetcher`` × fetchers active hosts (a small, fixed frontier)."""
        return cls(levels=levels, max_back_queues=max(1, per_fetcher * fetchers))


@dataclass(frozen=True, slots=True)
class FrontierConfig:
    """Everything the :class:`~courtly.frontier.Frontier` facade decides by."""

    queues: QueueConfig = field(default_factory=QueueConfig)
    politeness: PolitenessConfig = field(default_factory=PolitenessConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    lease_ttl_s: float = 120.0
    """A lease not completed within this many seconds is void; keep it above the fetch timeout."""
    params: ParamPolicy = DEFAULT_PARAMS
    """Query parameters the canonical form drops (tracking tags; ``courtly.url.params``)."""

    def __post_init__(self) -> None:
        if self.lease_ttl_s <= 0:
            raise ValueError("lease_ttl_s must be > 0")

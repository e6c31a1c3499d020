"""Frontier configuration: frozen dataclasses, units in the names."""

from __future__ import annotations

from dataclasses import dataclass, field

from courtly.frontier.budget import BudgetConfig
from courtly.frontier.front import default_level_weights
from courtly.frontier.politeness import PolitenessConfig

__all__ = ["FrontierConfig", "QueueConfig"]


@dataclass(frozen=True, slots=True)
class QueueConfig:
    """Shape of the two tiers.

    ``levels`` front queues (0 = most urgent) drawn with ``level_weights``
    (default: each level twice as likely as the next) and ageing after
    ``max_skips`` passes; at most ``max_back_queues`` hosts hold a back queue at
    a time (Mercator's rule of thumb: about three per fetcher).
    """

    levels: int = 4
    level_weights: tuple[float, ...] | None = None
    max_skips: int = 32
    max_back_queues: int = 48

    def __post_init__(self) -> None:
        if self.levels < 1:
            raise ValueError("levels must be >= 1")
        if self.level_weights is not None and len(self.level_weights) != self.levels:
            raise ValueError("level_weights needs one weight per level")
        if self.max_back_queues < 1:
            raise ValueError("max_back_queues must be >= 1")
        if self.max_skips < 1:
            raise ValueError("max_skips must be >= 1")

    @property
    def weights(self) -> tuple[float, ...]:
        return self.level_weights or default_level_weights(self.levels)

    @classmethod
    def for_fetchers(cls, fetchers: int, *, per_fetcher: int = 3, levels: int = 4) -> QueueConfig:
        """Back queues sized at ``per_fetcher`` × fetchers, so some host is nearly always ready."""
        return cls(levels=levels, max_back_queues=max(1, per_fetcher * fetchers))


@dataclass(frozen=True, slots=True)
class FrontierConfig:
    """Everything the :class:`~courtly.frontier.Frontier` facade decides by."""

    queues: QueueConfig = field(default_factory=QueueConfig)
    politeness: PolitenessConfig = field(default_factory=PolitenessConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    lease_ttl_s: float = 120.0
    """A lease not completed within this many seconds is void; keep it above the fetch timeout."""

    def __post_init__(self) -> None:
        if self.lease_ttl_s <= 0:
            raise ValueError("lease_ttl_s must be > 0")

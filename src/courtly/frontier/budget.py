"""Budgets: per-host and per-crawl caps, as pure checks.

A *budget* caps what one host, or the whole crawl, may cost. ``None`` means no
cap. Queue caps bound memory and keep a giant host from crowding the rest out
(URLs over the cap are dropped *without* being marked seen, so they can be
rediscovered once the host's queue drains). Request caps bound the load we put
on one host: a host that has spent its request budget is retired.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BudgetConfig", "is_host_over_request_budget", "is_over_queue_budget"]


@dataclass(frozen=True, slots=True)
class BudgetConfig:
    """Caps; ``None`` disables one."""

    max_queued_per_host: int | None = 100_000
    """URLs waiting for one host key."""
    max_requests_per_host: int | None = None
    """Requests ever made to one host key (robots.txt included)."""
    max_queued: int | None = None
    """URLs waiting in the whole frontier."""
    max_requests: int | None = None
    """Requests in the whole crawl (the crawl stops leasing when it is spent)."""

    def __post_init__(self) -> None:
        for name in ("max_queued_per_host", "max_requests_per_host", "max_queued", "max_requests"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0 or None")


def is_over_queue_budget(queued_for_host: int, queued_total: int, cfg: BudgetConfig) -> int:
    """0 if one more URL fits; 1 if the host's queue cap is reached; 2 if the crawl's is."""
    if cfg.max_queued_per_host is not None and queued_for_host >= cfg.max_queued_per_host:
        return 1
    if cfg.max_queued is not None and queued_total >= cfg.max_queued:
        return 2
    return 0


def is_host_over_request_budget(requests_made: int, cfg: BudgetConfig) -> bool:
    """True once a host has made its budget of requests."""
    return cfg.max_requests_per_host is not None and requests_made >= cfg.max_requests_per_host

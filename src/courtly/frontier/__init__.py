"""The URL frontier: two Mercator tiers with host-exclusive, fenced, expiring leases."""

from __future__ import annotations

from courtly.frontier.budget import BudgetConfig, is_host_over_request_budget, is_over_queue_budget
from courtly.frontier.config import FrontierConfig, QueueConfig
from courtly.frontier.front import FrontQueues, LevelSelector, default_level_weights
from courtly.frontier.frontier import Candidate, Frontier
from courtly.frontier.politeness import (
    PolitenessConfig,
    apply_outcome,
    is_parked,
    parse_retry_after,
    politeness_delay_s,
)
from courtly.frontier.prioritiser import PrioritySignals, prioritise
from courtly.frontier.records import (
    AddStatus,
    FrontierCounts,
    HostState,
    Lease,
    Outcome,
    OutcomeKind,
    QueuedUrl,
)
from courtly.frontier.seen import BloomSeenSet, ExactSeenSet, SeenSet

__all__ = [
    "AddStatus",
    "BloomSeenSet",
    "BudgetConfig",
    "Candidate",
    "ExactSeenSet",
    "FrontQueues",
    "Frontier",
    "FrontierConfig",
    "FrontierCounts",
    "HostState",
    "Lease",
    "LevelSelector",
    "Outcome",
    "OutcomeKind",
    "PolitenessConfig",
    "PrioritySignals",
    "QueueConfig",
    "QueuedUrl",
    "SeenSet",
    "apply_outcome",
    "default_level_weights",
    "is_host_over_request_budget",
    "is_over_queue_budget",
    "is_parked",
    "parse_retry_after",
    "politeness_delay_s",
    "prioritise",
]

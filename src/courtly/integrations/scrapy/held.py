"""A request from its lease to the end of its response, and the records around it.

:class:`Held` is the scheduler's one mutable record per leased request: where its
payload lives, its robots.txt decision and address, and the times the start-lag
statistics are made of. :class:`Add` is an enqueued request on its way into the
frontier; :data:`Step` says what the refill task does with a finished lease.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from scrapy import Request

from courtly.frontier import Lease, Outcome, QueuedUrl
from courtly.robots import Authority, RobotsDecision

__all__ = ["KEY_META", "PARENT_META", "SLOT_META", "Add", "Held", "Step"]

KEY_META: Final = "courtly_key"
"""Request meta key naming the lease a request was handed out under."""
PARENT_META: Final = "courtly_parent"
"""Request meta key naming the lease of the response whose callback yielded the request."""
SLOT_META: Final = "download_slot"
"""Scrapy's downloader slot: courtly's host key, so one slot is one host."""


@dataclass(slots=True)
class Held:
    """A leased request, from its lease to the end of its response (mutable state).

    Times are on the scheduler's clock, in seconds.
    """

    lease: Lease
    request: Request
    payload_id: str
    stored: bool
    """Its payload is a blob in the store (cleared when the request completes)."""
    authority: Authority
    decision: RobotsDecision | None = None
    ip: str | None = None
    owed_at: float | None = None
    """When the host came due while the scheduler was waiting for it (start-lag statistic)."""
    leased_at: float | None = None
    """When the refill task got its lease (after ``owed_at`` if the lease came late)."""
    address_at: float | None = None
    """When it was counted at its address (:class:`~courtly.fetch.address_holds.AddressHolds`),
    until its place there is freed."""
    gate_wait_s: float = 0.0
    """How long it waited for a place at its address (the per-IP cap)."""
    gated_at: float | None = None
    buffered_at: float | None = None
    """When it entered the due buffer."""
    handed_at: float | None = None
    """When the scheduler's ``next_request`` handed it to the engine."""
    started_at: float | None = None
    status: int | None = None
    retry_after_s: float | None = None
    outcome: Outcome | None = None
    """Set at the end of the response; the lease completes once the spider is done with it."""
    children: int = 0
    """Requests the callback yielded that have not reached ``enqueue_request`` yet."""
    output_done: bool = False
    delivered: bool = False
    """Its response left the downloader middlewares for the spider (not dropped there)."""


Step = Literal["release", "complete"]
"""What the refill task does with a lease: give it back, or complete it (the payload
is cleared)."""


@dataclass(frozen=True, slots=True)
class Add:
    """An enqueued request on its way into the frontier: its entry, its payload id, and
    its serialised form (``None``: it is kept in memory)."""

    entry: QueuedUrl
    payload_id: str
    payload: bytes | None

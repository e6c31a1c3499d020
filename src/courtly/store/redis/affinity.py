"""Which fetcher serves a shard first: shard affinity over the crawl's live fetchers.

Without it, a host's next lease goes to whichever fetcher asks first, so on a crawl of
two fetchers about every other request to a host comes from the other process: each
process's keep-alive connection to the host idles through the other's turns and often
outlives its keep-alive timeout, and the host gets a new connection (a connect on both
sides) where a single process would have reused one. Measured on the wide web of 2,000
hosts (docs/distributed-measured.md, *Shard affinity, kept*).

Every fetcher that leases, with affinity or without, registers in the crawl's member set
(the ``members`` script: the server's ``TIME`` stamps each heartbeat; a member silent for
``lifetime`` is dropped). With affinity each shard has one owner among the live members, by
rendezvous hashing (the member with the highest ``xxh3(member, shard)``): members
that come and go move only their own share of shards. A fetcher leases its own shards
as soon as they are due and another's only once that shard's best host has been due
for ``grace`` (the owner is behind, or gone): work is stolen, never stranded. Politeness
does not depend on any of this; the shard scripts keep it whoever leases.

The functions here are pure: the store keeps the member list and the clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from xxhash import xxh3_64_intdigest

__all__ = ["MEMBER_LIFETIME_S", "MEMBER_REFRESH_S", "held_back_until", "owned_shards"]

MEMBER_REFRESH_S: Final = 1.0
"""How often a leasing fetcher renews its heartbeat in the member set, seconds."""

MEMBER_LIFETIME_S: Final = 5.0
"""A member whose last heartbeat is older than this is gone (its shards move), seconds."""


def owned_shards(me: str, members: Iterable[str], shards: int) -> frozenset[int]:
    """The shards ``me`` owns among ``members`` (``me`` counts whether listed or not):
    each shard goes to the member with the highest xxh3-64 of ``"<member>/<shard>"``,
    ties to the larger member id. Every fetcher computes the same split from the same
    member set."""
    everyone = sorted({me, *members})
    if len(everyone) == 1:
        return frozenset(range(shards))
    mine: set[int] = set()
    for shard in range(shards):
        best = max(everyone, key=lambda m: (xxh3_64_intdigest(f"{m}/{shard}".encode()), m))
        if best == me:
            mine.add(shard)
    return frozenset(mine)


def held_back_until(
    mine: bool, aged: bool, due_at_ms: float | None, grace_ms: float
) -> float | None:
    """``None`` if a due shard may be leased now; else the server time (ms) from which it
    may be, or ``inf`` when only its owner may lease it for now.

    ``mine``: this fetcher owns the shard; ``aged``: its best host has waited past the
    scheduler's ageing bound (then anyone serves it at once, as the order rule asks);
    ``due_at_ms``: when that host came (or comes) due, ``None`` if the shard made no
    offer (its owner finds out what it holds; a dead owner's shards move when its
    membership lapses)."""
    if mine or aged:
        return None
    if due_at_ms is None:
        return float("inf")
    return due_at_ms + grace_ms

"""The Redis store: one crawl's frontier in standalone Redis or Redis Cluster.

Any number of fetcher processes, on any machines, that open the same server and
crawl name share one frontier. The store keeps nothing between calls but a
version-stamped hint of which shards are due; every step is one Lua script on
one shard (see ``docs/distributed.md`` for the key layout and each script's
contract).

**Shards.** A crawl has ``shards`` logical shards, fixed when it is created (the
crawl's meta hash). ``shard = xxh3-64(host key) mod shards``; every key of shard
``s`` carries the hash tag ``{<crawl>.<s>}``, so a shard is one slot and each
script touches one slot. Each shard runs the frontier's state machine (front
tier, back queues, slots, ready and wake heaps, leases, Bloom seen-set) over its
own hosts; the back-queue cap is split evenly between the shards.

**Clocks.** The server's ``TIME`` is the only clock of a crawl: every script
reads it, so fetchers with skewed clocks still agree on every lease expiry and
next allowed time. A caller's ``now_at`` is used only to translate times: an
absolute time the caller passes (``HostState.next_allowed_at``) is sent as an
offset from ``now_at``, and a time that comes back (a lease's expiry, a host's
next allowed time, ``next_ready_at``) is mapped onto the caller's clock by the
same offset. ``server_clock=False`` makes the scripts take ``now_at`` itself as
the time (the contract suite's fake clock); a real crawl never sets it.

**Steps.** ``add`` groups URLs by shard, one ADD per shard. ``lease`` reads the
due index (one call on the crawl's slot, which also applies the pending index
updates) and calls LEASE on the due shards with the best offers (every shard's reply
carries what its next LEASE would serve first: :func:`offer_key` orders them by the
scheduler's rule), the request split between them; the
due shards of one read serve the leases of the next ``index_interval_s`` without
another read (a lease is then one round trip), and up to ``index_overlap_s`` after a
read the next read goes out with the LEASE calls, in the same round trip. It also
probes one more shard,
round robin, every ``probe_interval_s``, which bounds how stale a lost index
update can make a shard. A lease taken ahead (``ahead_s``) runs INDEX and LEASE as
of the server's now plus that; see :meth:`RedisStore.lease` for how its hosts'
times come back. ``complete`` of a lease
whose discoveries all fall in its own shard is one COMPLETE; otherwise a FENCE
first checks (and extends) the lease, the discoveries go to their shards, then
COMPLETE runs, fenced again: a crash in between leaves discoveries whose page
is fetched again (dedup absorbs them), never a page whose links are lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import math
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from courtly.archive.catalogue import CatalogueEntry
from courtly.errors import CrawlFailed, StateError
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.config import QueueConfig
from courtly.frontier.records import AddStatus, FrontierCounts, HostState, Lease, QueuedUrl
from courtly.store.base import LeaseBatch
from courtly.store.redis.address import check_crawl_name
from courtly.store.redis.affinity import (
    MEMBER_LIFETIME_S,
    MEMBER_REFRESH_S,
    held_back_until,
    owned_shards,
)
from courtly.store.redis.batcher import CallBatcher
from courtly.store.redis.coalescer import Coalescer
from courtly.store.redis.codec import (
    bloom_hashes,
    decode_attempts,
    decode_catalogue,
    decode_entry,
    decode_state,
    encode_catalogue,
    encode_entry,
    encode_state,
    shard_of,
    url_authority,
)
from courtly.store.redis.ip_gate import RedisIpGate
from courtly.store.redis.outage import OutageLog
from courtly.store.redis.revisits import RevisitSeam
from courtly.store.redis.scripts import CRAWL_SCRIPTS, SHARD_SCRIPTS, run_script, script_text
from courtly.store.scheduler import DUE_FOR_BREADTH, MAX_HINTS, is_aged

__all__ = ["RedisLayout", "RedisStore"]

log = logging.getLogger(__name__)


@cache
def _transient() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """The errors of a server that is down, restarting or failing over (retried), and
    the ones among them that are not (a refused login). Imported on first use."""
    from redis import exceptions

    return (
        (
            exceptions.ConnectionError,
            exceptions.TimeoutError,
            exceptions.ClusterError,  # a cluster down, or redirections past the client's TTL
            exceptions.TryAgainError,
            exceptions.SlotNotCoveredError,
            SlotMoving,
        ),
        (exceptions.AuthenticationError, exceptions.AuthorizationError),
    )


class SlotMoving(Exception):
    """A shard script found its slot migrating between cluster nodes and did nothing
    (the shard prelude's probe); the store calls again until the move is over."""


_FENCED: Final = b"fenced"
_UNREPLICATED_S: Final = 30.0
"""How long the store stops waiting on a master whose WAIT came back short."""
_WRITES: Final = frozenset(
    ("add", "complete", "due", "fence", "lease", "note", "promote", "record", "release", "revisit")
)
"""The shard scripts that write (``replica_acks`` waits after each)."""
_MOVING: Final = [b"moving"]
_NO_STATE: Final = ("", "", "", "", "0")
_CATALOGUE_CHUNK: Final = 1000
_SEED_CHUNK: Final = 1000
"""Seeds a call of :meth:`RedisStore.add_seeds` and :meth:`RedisStore.seeds` carries."""
_LEASES_PER_VISIT: Final = 4
"""A lease of ``n`` visits ``ceil(n / 4)`` due shards: fewer calls per lease; a shard with
fewer ready hosts gives fewer, and the caller asks again."""
_DUE_READ: Final = 256
"""INDEX returns at most this many due shards (with their offers) for the store to order."""
_RETRY_MAX_S: Final = 0.25
"""The longest pause between two tries of a call while the server is unreachable: a
failover is seen within this of its end (a call to a dead node fails at once)."""
_HELD_MAX: Final = 4096
"""Leases remembered by :meth:`RedisStore._note_leases` before the expired are forgotten."""
_YOUNG_MARGIN_S: Final = 2.0
"""A lease with more than this (and half its TTL) left skips FENCE before cross-shard ADDs."""
_KEEP_SLACK_S: Final = 60.0
"""A shard keeps the reply of a call that wrote for the store's ``retry_s`` plus this (its
last try may be sent just before ``retry_s`` is over, and wait for its socket timeout and
the cluster client's own tries) unless the store's next call there drops it first."""
_CALLS_IN_FLIGHT: Final = 32
"""Calls one store (its per-IP gate included) has in flight at once: the client's pool holds
100 connections and refuses a call beyond them (``MaxConnectionsError``) instead of waiting."""
_BATCHED_CALLS_IN_FLIGHT: Final = 4096
"""The same bound on standalone Redis without replica acks, where every call goes in the
batcher's rounds (a connection a round, at most three at once), not a connection each:
with 32 there, the fetchers' calls waited for a permit while the rounds had room
(docs/distributed.md)."""


@dataclass(frozen=True, slots=True)
class RedisLayout:
    """What a crawl fixes when it is created (kept in its meta hash; a later fetcher
    reads it back, whatever it asked for).

    ``shards`` logical shards (choose it large: it caps how many nodes the crawl can
    spread over, and cannot change without rehashing every host); the seen-set of
    each shard starts with a Bloom layer for ``bloom_capacity`` URLs and adds layers
    of twice the capacity as it fills, with a false-positive rate below
    ``bloom_error`` over all of them.
    """

    shards: int = 64
    bloom_capacity: int = 4096
    bloom_error: float = 1e-3

    def __post_init__(self) -> None:
        if self.shards < 1:
            raise ValueError("shards must be >= 1")
        if self.bloom_capacity < 1:
            raise ValueError("bloom_capacity must be >= 1")
        if not 0.0 < self.bloom_error < 1.0:
            raise ValueError("bloom_error must be in (0, 1)")


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


Offer = tuple[int, float, float]
"""A shard's offer (``offer`` in ``shard.lua``): the head rank its next LEASE would serve
first, that host's time and the time its host due longest became due (server ms)."""


def parse_offer(raw: bytes | str) -> Offer | None:
    """A shard's offer as a script returns it (``"<rank> <at> <since>"``); ``None`` for
    ``''`` (nothing to serve)."""
    text = _s(raw)
    if not text:
        return None
    rank, at, since = text.split()
    return int(rank), float(at), float(since)


def offer_key(offer: Offer | None, now_ms: float, max_due_wait_s: float) -> tuple[float, ...]:
    """Where a due shard goes in a lease's order of visits, smallest first: the scheduler's
    rule (:meth:`courtly.store.scheduler.Scheduler.lease`) across shards. A shard whose
    host due longest is aged (:func:`~courtly.store.scheduler.is_aged`) first, oldest
    first; then by the best head rank it offers, then that host's time; a shard that
    offered nothing (due for an expiring lease, or not heard from yet) last. ``now_ms``:
    the server's now, ms."""
    if offer is None:
        return (2.0, 0.0, 0.0)
    rank, at, since = offer
    if is_aged(since / 1000.0, now_ms / 1000.0, max_due_wait_s):
        return (0.0, since, 0.0)
    return (1.0, float(rank), at)


class _Reply:
    """The head every shard script returns: version, server now, next and due times, and
    the shard's offer (``None`` from a script that does not read it)."""

    __slots__ = ("due_ms", "next_ms", "now_ms", "offer", "offer_text", "rest", "version")

    def __init__(self, raw: list[Any]) -> None:
        self.version = int(raw[0])
        self.now_ms = float(raw[1])
        self.next_ms = float(raw[2]) if raw[2] else None
        self.due_ms = float(raw[3]) if raw[3] else None
        self.offer_text = _s(raw[4])
        self.offer = parse_offer(self.offer_text)
        self.rest: list[Any] = raw[5:]

    @property
    def fenced(self) -> bool:
        return self.rest == [_FENCED]


class RedisStore(RevisitSeam):
    """A :class:`~courtly.store.base.FrontierStore` in Redis (see the module doc).

    ``client`` is a ``redis.asyncio.Redis`` or ``redis.asyncio.cluster.RedisCluster``
    made with ``decode_responses=False``; the store closes it in :meth:`aclose`.
    ``crawl`` names the crawl: it prefixes every key. ``replica_acks`` > 0: after every
    shard script that writes, wait (up to ``replica_wait_s``) until that many replicas
    of the shard's master hold the write, so that a failover loses no acknowledged
    step (one more round trip per call; see docs/distributed.md, failure modes).
    ``index_interval_s`` > 0 lets the due shards of one index read serve the leases of
    that long without another INDEX call (a lease is then one round trip, the LEASE
    calls); a shard that comes due meanwhile waits at most that long to be seen, or
    the probe's turn (``probe_interval_s``). 0 reads the index on every lease.
    ``index_overlap_s`` > 0: a lease within that long of the last index read sends a
    fresh INDEX in the same round trip as LEASE on that read's due shards (the fresh
    read serves the next lease), so a lease is one round trip, not two, while the
    fetcher leases continuously; a shard that came due since the last read waits one
    lease more. 0 (as with ``index_interval_s`` 0) reads the index first on every
    lease that the cache does not serve.
    ``affinity_grace_s`` (:mod:`~courtly.store.redis.affinity`): a shard owned by another
    live fetcher is leased only once its best host has been due for that long, so a
    host's requests keep to one process (and its connection) while its owner keeps up;
    0 turns shard affinity off (every due shard goes to whoever asks first).
    """

    def __init__(
        self,
        client: Any,
        crawl: str,
        queues: QueueConfig | None = None,
        *,
        layout: RedisLayout | None = None,
        rng: random.Random | None = None,
        server_clock: bool = True,
        probe_interval_s: float = 0.05,
        index_interval_s: float = 0.025,
        index_overlap_s: float = 0.5,
        retry_s: float = 60.0,
        replica_acks: int = 0,
        replica_wait_s: float = 0.05,
        affinity_grace_s: float = 3.0,
    ) -> None:
        check_crawl_name(crawl)  # a ConfigError (a ValueError) for a name no key can carry
        self._client = client
        self._crawl = crawl
        self._queues = queues or QueueConfig()
        self._wanted = layout or RedisLayout()
        self._layout = self._wanted
        self._rng = rng or random.Random()
        self._server_clock = server_clock
        self._probe_interval_s = probe_interval_s
        self._retry_s = retry_s
        self._retry_until = math.inf  # time.monotonic(): a stopping crawl's (give_up_after)
        self._outage = OutageLog(log)
        self._replica_acks = replica_acks
        self._replica_wait_ms = max(1, round(replica_wait_s * 1000.0))
        self._unreplicated: dict[str, float] = {}  # master -> monotonic time to wait again
        self._scripts: dict[str, Any] = {}
        self._batcher = None if hasattr(client, "get_node_from_key") else CallBatcher(client)
        """Standalone: the calls of concurrent callers go in one pipeline per round trip."""
        self._opened = False
        self._open_lock = asyncio.Lock()
        batched = self._batcher is not None and not replica_acks
        self._calls = asyncio.Semaphore(_BATCHED_CALLS_IN_FLIGHT if batched else _CALLS_IN_FLIGHT)
        self._offset_ms = 0.0
        self._pending: dict[int, tuple[int, str, str, str]] = {}
        self._offers: dict[int, Offer | None] = {}  # shard -> its last offer heard of
        self._probe_next = 0
        self._probe_at = 0.0
        self._index_interval_s = index_interval_s
        self._index_overlap_s = index_overlap_s
        self._due_cache: list[int] = []  # the due shards of the last index read, less drained
        self._due_read_at = -math.inf  # monotonic time of that read
        self._drained: set[int] = set()  # shards found drained since the read began
        self._held: dict[int, float] = {}  # token of a lease of this store -> monotonic expiry
        self._caller = uuid.uuid4().hex[:16]  # this store's calls: "<caller>.<count>"
        self._affinity_grace_ms = max(0.0, affinity_grace_s) * 1000.0
        self._mine: frozenset[int] | None = None  # the shards this store owns (affinity)
        self._members_at = -math.inf  # monotonic time of the last heartbeat
        self._call_count = 0
        self._replied: dict[int, list[str]] = {}  # shard -> calls answered, reply kept there
        self._keep_ms = round((retry_s + _KEEP_SLACK_S) * 1000.0)
        self._found: Coalescer[tuple[int, int, int], tuple[QueuedUrl, str], AddStatus]
        self._found = Coalescer(self._send_found)
        self._config_tail = ""
        self._slots = 1
        self._crawl_key = f"{crawl}:{{{crawl}}}:"
        self._front_levels: tuple[int, ...] = ()
        """Each front level's URLs at the last :meth:`counts` (see :meth:`front_by_level`)."""

    # -- opening ------------------------------------------------------------

    @property
    def layout(self) -> RedisLayout:
        """The crawl's layout (as stored, once the store has been used)."""
        return self._layout

    async def open(self) -> None:
        """Load the scripts and read (or create) the crawl's layout; idempotent."""
        if self._opened:  # every call comes here first: no lock once open
            return
        async with self._open_lock:
            if self._opened:
                return
            initialize = getattr(self._client, "initialize", None)
            if initialize is not None:  # a cluster client: learn the slots first
                await initialize()
            for name in (*SHARD_SCRIPTS, *CRAWL_SCRIPTS):
                self._scripts[name] = self._client.register_script(script_text(name))
            wanted = self._wanted
            raw = await self._scripts["meta"](
                keys=[self._crawl_key + "meta"],
                args=[
                    "shards",
                    wanted.shards,
                    "bloom_capacity",
                    wanted.bloom_capacity,
                    "bloom_error",
                    repr(wanted.bloom_error),
                    "format",
                    1,
                ],
            )
            stored = {_s(raw[i]): _s(raw[i + 1]) for i in range(0, len(raw), 2)}
            try:
                if stored.get("format") != "1":
                    raise ValueError(f"format {stored.get('format')!r}")
                self._layout = RedisLayout(
                    int(stored["shards"]),
                    int(stored["bloom_capacity"]),
                    float(stored["bloom_error"]),
                )
            except (KeyError, ValueError) as exc:
                raise StateError(
                    f"crawl {self._crawl!r}: unusable layout in Redis ({exc})"
                ) from exc
            queues = self._queues
            shards = self._layout.shards
            self._slots = max(1, math.ceil(queues.max_back_queues / shards))
            inactive_s = queues.inactive_after_s
            scan = queues.activation_scan
            weights = " ".join(repr(w) for w in queues.weights)
            max_wait = queues.max_due_wait_s
            max_wait_ms = -1.0 if math.isinf(max_wait) else max_wait * 1000.0  # -1: no ageing
            hint_cap = max(1, math.ceil(MAX_HINTS / shards))
            breadth = DUE_FOR_BREADTH * _LEASES_PER_VISIT
            self._config_tail = (
                f"{self._slots} {inactive_s * 1000.0!r} {scan} {queues.max_skips} "
                f"{self._layout.bloom_capacity} {self._layout.bloom_error!r} "
                f"{max_wait_ms!r} {hint_cap} {breadth} {weights}"
            )
            self._probe_next = self._rng.randrange(shards)
            if self._server_clock:
                seconds, micros = await self._client.time()
                self._offset_ms = seconds * 1000.0 + micros / 1000.0 - time.time() * 1000.0
            self._opened = True

    # -- the seam -------------------------------------------------------------

    async def add(
        self, entries: Sequence[QueuedUrl], now_at: float, budget: BudgetConfig
    ) -> list[AddStatus]:
        await self.open()
        statuses = await self._add(entries, now_at, budget, None)
        await self._flush_index()
        return statuses

    async def revisit(
        self, entries: Sequence[QueuedUrl], now_at: float, budget: BudgetConfig
    ) -> list[AddStatus]:
        """REVISIT per shard: ADD without asking the seen-set (the scheduler's
        ``add(known=True)``)."""
        await self.open()
        statuses = await self._add(entries, now_at, budget, None, script="revisit")
        await self._flush_index()
        return statuses

    async def promote(self, entries: Sequence[QueuedUrl], now_at: float) -> list[bool]:
        """PROMOTE per shard, concurrently: the scheduler's rule (``promote_url`` in the
        prelude), except that a URL whose host has URLs in the front tier gets no hint
        (``False``, nothing kept: the take-in from the front tier is LEASE's). A URL is
        found by its queue entry, so ``entry.depth`` must be the depth it was queued with
        (the crawl's known-URL table keeps it), else it is not moved."""
        await self.open()
        shards = self._layout.shards
        groups: dict[int, list[int]] = {}
        for i, entry in enumerate(entries):
            groups.setdefault(shard_of(entry.host_key, shards), []).append(i)
        moved = [False] * len(entries)

        async def one(shard: int, indexes: list[int]) -> None:
            args: list[Any] = []
            for i in indexes:
                entry = entries[i]
                entry_text = encode_entry(entry.host_key, entry.depth, entry.url)
                args.extend((entry.host_key, entry_text, entry.level))
            reply = await self._shard_call("promote", shard, now_at, args)
            for i, raw in zip(indexes, reply.rest, strict=True):
                moved[i] = int(raw) == 1

        await asyncio.gather(*(one(shard, indexes) for shard, indexes in groups.items()))
        await self._flush_index()
        return moved

    async def lease(
        self, now_at: float, ttl_s: float, max_leases: int, *, ahead_s: float = 0.0
    ) -> LeaseBatch:
        """The contract's lease; with ``ahead_s`` every script runs as of the server's now
        plus that (INDEX counts the shards due by then, LEASE leases as of then), and a
        lease's ``host.next_allowed_at`` ahead of the server's now is mapped onto the
        caller's clock from the moment the reply came back (:meth:`_leases`), so a request
        started at it starts no earlier on the server's clock."""
        await self.open()
        started = time.monotonic()
        if started - self._members_at >= MEMBER_REFRESH_S:
            await self._heartbeat(leaving=False)
        ahead_s = max(0.0, ahead_s)
        cached = self._due_within(self._index_interval_s, started)
        if cached:
            # the due shards of an index read younger than index_interval_s: no INDEX call
            batch = await self._lease_from(
                cached, len(cached), [], now_at, ttl_s, max_leases, ahead_s, started
            )
            if batch.leases:
                self._note_leases(batch.leases, started, ttl_s)
                return batch
        k = max(8, 2 * max_leases + 2)
        recent = [] if cached else self._due_within(self._index_overlap_s, started)
        beside_next: float | None = None
        if recent:
            # one round trip: a fresh read goes out with LEASE on the last read's due shards
            batch, (due_count, candidates, nexts) = await self._lease_beside_index(
                recent, k, now_at, ttl_s, max_leases, ahead_s, started
            )
            if batch.leases:
                self._note_leases(batch.leases, started, ttl_s)
                return batch
            beside_next = batch.next_ready_at
        else:
            self._drained = set()
            due_count, candidates, nexts = await self._index(k, now_at, ahead_s)
            self._remember_due(candidates, started)
        batch = await self._lease_from(
            candidates, due_count, nexts, now_at, ttl_s, max_leases, ahead_s, started
        )
        if beside_next is not None:  # the shards LEASE visited beside the read
            batch = LeaseBatch(batch.leases, _least(batch.next_ready_at, beside_next))
        self._note_leases(batch.leases, started, ttl_s)
        return batch

    async def _lease_beside_index(
        self,
        recent: list[int],
        k: int,
        now_at: float,
        ttl_s: float,
        max_leases: int,
        ahead_s: float,
        started: float,
    ) -> tuple[LeaseBatch, tuple[int, list[int], list[tuple[int, float]]]]:
        """LEASE on ``recent`` (the due shards of the last read) and a fresh INDEX,
        issued together (the batcher sends them in one pipeline); the fresh read, less
        the shards that LEASE found drained (the read does not carry the updates of the
        calls beside it), is kept for the next lease."""
        self._drained = set()
        visited = set(recent)  # ``recent`` is the due cache itself, which LEASE empties
        batch, index = await asyncio.gather(
            self._lease_from(recent, len(recent), [], now_at, ttl_s, max_leases, ahead_s, started),
            self._index_a_turn_later(k, now_at, ahead_s),
        )
        due_count, candidates, nexts = index
        self._remember_due(candidates, started)
        # The read may not carry LEASE's updates yet: a shard LEASE found drained is not
        # counted due, and the next times of the shards it visited are its reply's (in
        # ``batch``), not the read's (which could be "now" for a shard that has nothing
        # to lease before a later time, and make the lease say "ask again now").
        drained = len(candidates) - len(self._due_cache)
        fresh = [(shard, at) for shard, at in nexts if shard not in visited]
        return batch, (due_count - drained, self._due_cache, fresh)

    async def _index_a_turn_later(
        self, k: int, now_at: float, ahead_s: float
    ) -> tuple[int, list[int], list[tuple[int, float]]]:
        """:meth:`_index`, one turn of the event loop later: the LEASE calls beside it
        start in their own tasks on the next turn, and the batcher sends what has
        reached it when its round starts, so the INDEX joins their round."""
        await asyncio.sleep(0)
        return await self._index(k, now_at, ahead_s)

    async def _lease_from(
        self,
        candidates: list[int],
        due_count: int,
        nexts: list[tuple[int, float]],
        now_at: float,
        ttl_s: float,
        max_leases: int,
        ahead_s: float,
        started: float,
    ) -> LeaseBatch:
        """LEASE on up to ``ceil(max_leases / 4)`` of the due ``candidates``, best offer
        first (:func:`offer_key`; at random among equal offers), and on the probe's shard
        when its turn has come; ``started``: the monotonic time the lease began."""
        shards = self._layout.shards
        candidates = list(candidates)
        self._rng.shuffle(candidates)
        now_ms = now_at * 1000.0 + self._offset_ms
        max_wait_s = self._queues.max_due_wait_s
        offers = self._offers
        candidates.sort(key=lambda shard: offer_key(offers.get(shard), now_ms, max_wait_s))
        held_until = self._held_back(candidates, now_ms)
        open_ = [shard for shard in candidates if shard not in held_until]
        if self._mine is not None:  # its own due shards first, then others' waiting too long
            mine = self._mine
            open_.sort(key=lambda shard: shard not in mine)  # stable: each part by offer
        visits = open_[: max(1, math.ceil(max_leases / _LEASES_PER_VISIT))] if open_ else []
        asks = _split(max_leases, len(visits))
        probe = self._probe(shards)
        if probe is not None and probe not in visits:
            visits.append(probe)
            asks.append(0 if candidates or not self._owns(probe) else max_leases)
        ahead_ms = ahead_s * 1000.0
        replies = await asyncio.gather(
            *(
                self._shard_call("lease", shard, now_at, [ask, ttl_s * 1000.0, ahead_ms])
                for shard, ask in zip(visits, asks, strict=True)
            )
        )
        back_at = now_at + max(0.0, time.monotonic() - started)
        leases: list[Lease] = []
        next_at: float | None = None
        for shard, ask, reply in zip(visits, asks, replies, strict=True):
            got = self._leases(reply, now_at, ttl_s, ahead_s, back_at)
            leases.extend(got)
            if reply.next_ms is not None:
                next_at = _least(next_at, self._to_caller(reply.next_ms))
            if len(got) < ask or reply.due_ms is None or reply.due_ms > reply.now_ms + ahead_ms:
                self._drop_due(shard)  # drained (by this lease or another fetcher's)
        visited = set(visits)
        if due_count - len(held_until) > len(visited & set(open_)):
            next_at = _least(next_at, now_at + ahead_s)
        for at in held_until.values():  # another's shard: leased here once it waited long
            if at < math.inf:
                next_at = _least(next_at, self._to_caller(at))
        for shard, at in nexts:
            if shard not in visited:
                next_at = _least(next_at, self._to_caller(at))
                break
        if next_at is not None:  # the step ran as of now + ahead: nothing comes before it
            next_at = max(next_at, now_at + ahead_s)
        return LeaseBatch(tuple(leases), next_at)

    def _due_within(self, age_s: float, now: float) -> list[int]:
        """The due shards of the last index read if it began less than ``age_s`` ago
        (monotonic ``now``), less those found drained since; else none."""
        return self._due_cache if now - self._due_read_at < age_s else []

    def _remember_due(self, shards: list[int], read_at: float) -> None:
        """Keep the due shards of a read begun at ``read_at``, less any found drained
        while it was out."""
        drained = self._drained
        self._due_cache = [shard for shard in shards if shard not in drained]
        self._due_read_at = read_at

    def _drop_due(self, shard: int) -> None:
        self._drained.add(shard)
        if shard in self._due_cache:
            self._due_cache.remove(shard)

    def _note_leases(self, leases: Sequence[Lease], started: float, ttl_s: float) -> None:
        """Remember when this store's leases expire at the earliest (monotonic): the
        server set each expiry after ``started``, so before ``started + ttl`` none of them
        can have been reclaimed."""
        held = self._held
        if len(held) > _HELD_MAX:
            now = time.monotonic()
            for token in [t for t, until in held.items() if until <= now]:
                del held[token]
        for lease in leases:
            held[lease.token] = started + ttl_s

    def _young(self, lease: Lease) -> bool:
        """Is ``lease`` one of this store's, surely current for a while yet (no FENCE
        needed before its discoveries go to other shards)? Only an expiry reclaims a
        lease the crawl has not ended, and this store ends each of its leases once."""
        until = self._held.pop(lease.token, None)
        if until is None:
            return False
        ttl_s = max(0.0, lease.expires_at - lease.leased_at)
        return until - time.monotonic() > max(_YOUNG_MARGIN_S, ttl_s / 2)

    async def complete(
        self,
        lease: Lease,
        host: HostState,
        discovered: Sequence[QueuedUrl],
        now_at: float,
        budget: BudgetConfig,
        records: Sequence[CatalogueEntry] = (),
    ) -> list[AddStatus] | None:
        await self.open()
        shards = self._layout.shards
        shard = shard_of(lease.host_key, shards)
        own: list[QueuedUrl] = []
        own_at: list[int] = []
        others: list[QueuedUrl] = []
        others_at: list[int] = []
        for i, entry in enumerate(discovered):
            if shard_of(entry.host_key, shards) == shard:
                own.append(entry)
                own_at.append(i)
            else:
                others.append(entry)
                others_at.append(i)
        statuses: list[AddStatus] = [AddStatus.INVALID] * len(discovered)
        if others:
            if not self._young(lease):
                ttl_ms = max(0.0, lease.expires_at - lease.leased_at) * 1000.0
                fence = await self._shard_call(
                    "fence", shard, now_at, [lease.host_key, lease.token, ttl_ms]
                )
                if fence.fenced:
                    return None
            for i, status in zip(
                others_at, await self._add_found(others, budget, lease.url), strict=True
            ):
                statuses[i] = status
        else:
            self._held.pop(lease.token, None)
        mine = [r for r in records if shard_of(url_authority(r.url), shards) == shard]
        rest = [r for r in records if shard_of(url_authority(r.url), shards) != shard]
        args: list[Any] = [lease.host_key, lease.token, *self._state_args(lease, host, now_at)]
        args.append(len(mine))
        for record in mine:
            args.extend((record.url, *encode_catalogue(record)))
        found_elsewhere = self._add_args(args, own, budget, lease.url, shard)
        reply = await self._shard_call("complete", shard, now_at, args)
        if reply.fenced:
            return None
        for i, raw in zip(own_at, reply.rest, strict=True):
            statuses[i] = AddStatus(int(raw))
        later = [
            CatalogueEntry(entry.url, depth=entry.depth, referrer=lease.url)
            for entry, status in zip(own, (statuses[i] for i in own_at), strict=True)
            if status is AddStatus.QUEUED and entry in found_elsewhere
        ]
        await self._record(rest, found=later)
        return statuses

    async def release(
        self, lease: Lease, host: HostState | None, now_at: float, *, failed: bool = False
    ) -> bool:
        await self.open()
        self._held.pop(lease.token, None)
        shard = shard_of(lease.host_key, self._layout.shards)
        state = _NO_STATE if host is None else self._state_args(lease, host, now_at)
        args = [lease.host_key, lease.token, *state, "1" if failed else "0"]
        reply = await self._shard_call("release", shard, now_at, args)
        return not reply.fenced

    async def record(self, records: Sequence[CatalogueEntry]) -> None:
        await self.open()
        await self._record(records, found=())

    async def catalogue(self) -> AsyncIterator[CatalogueEntry]:
        """Every entry, in the order first written: exactly within a shard; across
        shards by the server time of the first write (ms)."""
        await self.open()
        shards = range(self._layout.shards)
        firsts = await asyncio.gather(*(self._catalogue_chunk(shard, 0) for shard in shards))
        cursors: dict[int, tuple[list[tuple[float, CatalogueEntry]], int, int]] = {}
        heads: list[tuple[float, int]] = []
        for shard, chunk in zip(shards, firsts, strict=True):
            if chunk:
                cursors[shard] = (chunk, 0, 0)
                heads.append((chunk[0][0], shard))
        heapq.heapify(heads)
        while heads:
            _, shard = heapq.heappop(heads)
            chunk, index, start = cursors[shard]
            yield chunk[index][1]
            index += 1
            if index == len(chunk):
                start += len(chunk)
                chunk, index = await self._catalogue_chunk(shard, start), 0
            cursors[shard] = (chunk, index, start)
            if index < len(chunk):
                heapq.heappush(heads, (chunk[index][0], shard))

    async def get_blob(self, namespace: str, key: str) -> bytes | None:
        await self.open()
        blob_key = self._blob_key(namespace, key)
        async with self._calls:
            value = await self._retrying(lambda: self._command("GET", blob_key))
        return None if value is None else bytes(value)

    async def put_blob(self, namespace: str, key: str, value: bytes) -> None:
        await self.open()
        blob_key, data = self._blob_key(namespace, key), bytes(value)
        async with self._calls:
            await self._retrying(lambda: self._command("SET", blob_key, data))

    async def get_blobs(self, namespace: str, keys: Sequence[str]) -> list[bytes | None]:
        """One MGET-like round trip (a pipeline of GETs: the keys span slots)."""
        if not keys:
            return []
        await self.open()
        names = [self._blob_key(namespace, key) for key in keys]

        async def run() -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            for name in names:
                pipe.get(name)
            return list(await pipe.execute())

        values = await self._retrying(run)
        return [None if value is None else bytes(value) for value in values]

    async def put_blobs(self, namespace: str, items: Sequence[tuple[str, bytes]]) -> None:
        """One round trip (a pipeline of SETs, in order; run again whole if it fails)."""
        if not items:
            return
        await self.open()
        pairs = [(self._blob_key(namespace, key), bytes(value)) for key, value in items]

        async def run() -> None:
            pipe = self._client.pipeline(transaction=False)
            for name, data in pairs:
                pipe.set(name, data)
            await pipe.execute()

        await self._retrying(run)

    async def add_seeds(self, seeds: Sequence[str]) -> None:
        """HSETs of :data:`_SEED_CHUNK` seeds into one hash (each a union, so run again
        whole if it fails, and no process's seeds can be lost to another's)."""
        if not seeds:
            return
        await self.open()
        key = self._seeds_key()
        chunks = [seeds[i : i + _SEED_CHUNK] for i in range(0, len(seeds), _SEED_CHUNK)]

        async def run() -> None:
            pipe = self._client.pipeline(transaction=False)
            for chunk in chunks:
                pipe.hset(key, mapping=dict.fromkeys(chunk, b""))
            await pipe.execute()

        await self._retrying(run)

    async def seeds(self) -> list[str]:
        """HSCAN, :data:`_SEED_CHUNK` fields a call (no one call blocks the server for
        long, however many seeds), from the start again if a call fails."""
        await self.open()
        key = self._seeds_key()

        async def run() -> list[str]:
            out: list[str] = []
            cursor = 0
            while True:
                cursor, page = await self._client.hscan(key, cursor, count=_SEED_CHUNK)
                out.extend(_s(field) for field in page)
                if not int(cursor):
                    return list(dict.fromkeys(out))  # HSCAN may return a field twice

        return list(await self._retrying(run))

    async def seed_count(self) -> int:
        await self.open()
        key = self._seeds_key()
        async with self._calls:
            return int(await self._retrying(lambda: self._command("HLEN", key)))

    async def host_state(self, host_key: str) -> HostState:
        await self.open()
        shard = shard_of(host_key, self._layout.shards)
        reply = await self._shard_call("host", shard, None, [host_key])
        next_ms, payload = _s(reply.rest[0]), _s(reply.rest[1])
        if not next_ms and not payload:
            return HostState(host_key)
        return decode_state(host_key, self._to_caller(float(next_ms or 0)), payload)

    async def counts(self, now_at: float) -> FrontierCounts:
        await self.open()
        replies = await asyncio.gather(
            *(self._shard_call("counts", shard, now_at, []) for shard in range(self._layout.shards))
        )
        total = [0] * 13
        levels = [0] * self._queues.levels
        for reply in replies:
            for i, value in enumerate(reply.rest[:13]):
                total[i] += int(value)
            for i, value in enumerate(reply.rest[13 : 13 + len(levels)]):
                levels[i] += int(value)
        self._front_levels = tuple(levels)
        front, back, active, ready, snoozed, parked, inactive, due, held = total[:9]
        leased, seen, requests, retired = total[9:]
        return FrontierCounts(
            hosts_inactive=inactive,
            hosts_inactive_due=due,
            hosts_held=held,
            queued=front + back,
            front_queued=front,
            back_queued=back,
            hosts_active=active,
            hosts_ready=ready,
            hosts_snoozed=snoozed,
            hosts_parked=parked,
            hosts_retired=retired,
            leased=leased,
            seen=seen,
            requests_made=requests,
        )

    def front_by_level(self) -> tuple[int, ...]:
        """URLs waiting in each front-queue level, summed over the shards, as of the last
        :meth:`counts` (no I/O: COUNTS, read only, also answers the depth of each level,
        in the same atomic read as ``front_queued``). For the dashboard's queue depth by
        priority level: see :class:`courtly.store.base.FrontDepths`. Zeros before the
        first :meth:`counts`."""
        return self._front_levels or (0,) * self._queues.levels

    async def flush(self) -> None:
        """Send the pending due-index updates; durability is the server's (its AOF)."""
        if self._opened:
            await self._flush_index()

    async def aclose(self) -> None:
        try:
            await self._found.aclose()
            if self._opened:
                await self._flush_index()
                if self._members_at > -math.inf:  # its shards go to the others at once
                    with contextlib.suppress(*_transient()[0], CrawlFailed):  # lost: said
                        await self._heartbeat(leaving=True)
            if self._batcher is not None:
                await self._batcher.aclose()
        finally:
            await self._client.aclose()

    def ip_gate(self, cap: int, hold_s: float) -> RedisIpGate:
        """The crawl's per-IP cap of ``cap`` requests in flight, across every fetcher."""
        return RedisIpGate(
            self._client,
            self._crawl,
            cap,
            hold_s,
            ready=self.open,
            calls=self._calls,
            send=None if self._batcher is None else self._batcher.call,
            outage=self._outage,
        )

    # -- internals ----------------------------------------------------------------

    def _shard_prefix(self, shard: int) -> str:
        return f"{self._crawl}:{{{self._crawl}.{shard}}}:"

    def _blob_key(self, namespace: str, key: str) -> str:
        return f"{self._crawl}:blob:{namespace}:{key}"

    def _seeds_key(self) -> str:
        return f"{self._crawl}:seeds"

    async def _shard_call(
        self, name: str, shard: int, now_at: float | None, args: Iterable[Any]
    ) -> _Reply:
        """One shard script call. A script that writes carries a call id of its own: sent
        again (by :meth:`_retrying`, or by the cluster client itself, which sends a call
        again after a ``ConnectionError`` or ``TimeoutError`` and closes every connection,
        calls in flight included, each time it refreshes its slot map), it returns the
        reply of its first run instead of running twice. The shard keeps that reply
        until the id comes back with this store's next call there (the reply was read),
        or for ``retry_s`` plus :data:`_KEEP_SLACK_S` (a store that died)."""
        now = -1.0 if self._server_clock or now_at is None else now_at * 1000.0
        config = f"{shard} {self._layout.shards} {self._rng.randrange(1 << 31)} {self._config_tail}"
        keys = [self._shard_prefix(shard) + "m"]
        head = repr(now)
        call = ""
        done: list[str] = []
        if name in _WRITES:
            self._call_count += 1
            call = f"{self._caller}.{self._call_count}"
            done = self._replied.pop(shard, [])
            head = f"{head} {call} {self._keep_ms}" + (f" {','.join(done)}" if done else "")
        argv = [head, config, *args]
        first = name == "lease"
        async with self._gate(first):
            try:
                raw = await self._retrying(lambda: self._run(name, keys, argv, first))
            except BaseException:
                if done:  # dropped at a later call, or when their time is up
                    self._replied.setdefault(shard, []).extend(done)
                raise
            if call:
                self._replied.setdefault(shard, []).append(call)
            reply = _Reply(raw)
            if self._replica_acks and name in _WRITES and not reply.fenced:
                await self._replicated(keys[0])
        if now_at is not None:
            self._offset_ms = reply.now_ms - now_at * 1000.0
        if not reply.fenced and name not in ("fence", "host", "counts"):
            pending = self._pending.get(shard)
            if pending is None or pending[0] < reply.version:
                due = "" if reply.due_ms is None else repr(reply.due_ms)
                nxt = "" if reply.next_ms is None else repr(reply.next_ms)
                self._pending[shard] = (reply.version, due, nxt, reply.offer_text)
                self._offers[shard] = reply.offer
        return reply

    def _gate(self, first: bool) -> contextlib.AbstractAsyncContextManager[Any]:
        """The bound on calls in flight (:data:`_CALLS_IN_FLIGHT`), which a lease step's
        calls (``first``: LEASE, and the INDEX read that serves a lease) skip on
        standalone Redis: the batcher sends them in a lane of their own (one round at a
        time), and the dispatcher makes one step at a time, so they are bounded without
        it and never wait for the process's other calls."""
        if first and self._batcher is not None:
            return contextlib.nullcontext()
        return self._calls

    async def _run(self, name: str, keys: list[str], argv: list[Any], first: bool = False) -> Any:
        """One shard script call (``first``: in the batcher's lane, see :meth:`_gate`). A
        node that lacks the script even after the client loaded it on the nodes it knows
        (a master added while the client ran, reached by an ASK redirection) gets its
        full text once (EVAL caches it there)."""
        send = None
        if self._batcher is not None:
            send = self._batcher.call_first if first else self._batcher.call
        raw = await run_script(self._client, self._scripts[name], name, keys, argv, send)
        if raw == _MOVING:
            raise SlotMoving(f"the slot of {keys[0]} is migrating")
        return raw

    async def _command(self, *command: Any) -> Any:
        """One plain command, in the batcher's next round on standalone Redis."""
        if self._batcher is None:
            return await self._client.execute_command(*command)
        return await self._batcher.call(*command)

    async def _replicated(self, shard_key: str) -> None:
        """Wait until ``replica_acks`` replicas hold every write the shard's master made
        so far (for at most ``replica_wait_s``): a write to the shard's ``ack`` key and
        a WAIT on one connection to that master. The replication stream is in order,
        so that WAIT covers the script call before it, whichever connection made it.
        If the master dies before it answers, the step's fate is unknown (it is not
        run again): the one step in flight per call is what replica acks leave open."""
        client = self._client
        ack_key = shard_key[:-1] + "ack"
        waits = ("WAIT", self._replica_acks, self._replica_wait_ms)
        cluster = hasattr(client, "get_node_from_key")
        master = client.get_node_from_key(ack_key).name if cluster else ""
        if time.monotonic() < self._unreplicated.get(master, 0.0):
            return

        async def ack() -> Any:
            pipe = client.pipeline(transaction=False)
            pipe.incr(ack_key)
            if cluster:  # the master of the key's slot now (after a failover: the new one)
                pipe.execute_command(*waits, target_nodes=client.get_node_from_key(ack_key))
            else:
                pipe.execute_command(*waits)
            return await pipe.execute()

        transient, _ = _transient()
        try:
            _, acked = await ack()
        except transient as error:  # the master died under the step: unknown, not retried
            log.warning("%s: the last step may not be replicated: %s", shard_key, error)
            return
        if int(acked) < self._replica_acks:
            # a master short of replicas (one just promoted has none until one is added)
            # is not waited for again for a while: the crawl goes on unreplicated there
            self._unreplicated[master] = time.monotonic() + _UNREPLICATED_S
            log.warning(
                "%s: %s of %s replicas acknowledged within %s ms; not waiting on this master "
                "for %.0f s (a failover now may lose its last steps)",
                shard_key,
                acked,
                self._replica_acks,
                self._replica_wait_ms,
                _UNREPLICATED_S,
            )

    def give_up_after(self, seconds: float) -> None:
        """See :class:`~courtly.store.base.RidesOutages`: no call is retried for more than
        ``seconds`` from now, those retrying now included."""
        self._retry_until = min(self._retry_until, time.monotonic() + seconds)

    async def _retrying(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """``call()``, again while the server is unreachable or a cluster fails over, for
        up to ``retry_s`` seconds, backing off from 50 ms to ``_RETRY_MAX_S``. A shard
        script that wrote and whose reply was lost answers the call sent again with its
        first reply (:meth:`_shard_call`); a server that lost the write (a restart, a
        failover before the replica had it) lost that reply with it, and runs the call
        afresh."""
        deadline = time.monotonic() + self._retry_s
        delay_s = 0.05
        transient, refused = _transient()
        retried: tuple[type[BaseException], ...] = (*transient, RuntimeError, AttributeError)
        outage = self._outage
        while True:
            try:
                answer = await call()
            except refused:
                raise
            except retried as error:
                if isinstance(error, (RuntimeError, AttributeError)) and not _closed(error):
                    raise
                if time.monotonic() + delay_s > min(deadline, self._retry_until):
                    raise
                if isinstance(error, SlotMoving):  # a reshard at work, not an outage
                    log.debug("slot moving, retrying in %.2f s: %s", delay_s, error)
                else:  # told once, then every few seconds (courtly.store.redis.outage)
                    outage.failed(error, delay_s)
                await asyncio.sleep(delay_s)
                delay_s = min(_RETRY_MAX_S, delay_s * 2)
            else:
                outage.answered()
                return answer

    def _to_caller(self, server_ms: float) -> float:
        """A server time (ms) on the caller's clock; 0 stays 0 (a host never held back)."""
        if server_ms <= 0:
            return 0.0
        return (server_ms - self._offset_ms) / 1000.0

    async def _index(
        self, k: int, now_at: float | None, ahead_s: float = 0.0
    ) -> tuple[int, list[int], list[tuple[int, float]]]:
        """Apply the pending updates; how many shards are due by now + ``ahead_s``, up to
        :data:`_DUE_READ` of them (earliest due first; their offers are kept for
        :meth:`_lease_from` to order them by), and the ``k`` earliest (shard, next ms)."""
        pending, self._pending = self._pending, {}
        now = -1.0 if self._server_clock or now_at is None else now_at * 1000.0
        args: list[Any] = [repr(now), k, ahead_s * 1000.0, max(k, _DUE_READ)]
        for shard, (version, due, nxt, offer) in pending.items():
            args.extend((shard, version, due, nxt, offer))
        keys = [
            self._crawl_key + "due",
            self._crawl_key + "dv",
            self._crawl_key + "nx",
            self._crawl_key + "of",
        ]
        try:
            async with self._gate(k > 0):  # a lease's read, not a flush of updates
                raw = await self._retrying(lambda: self._run("index", keys, args, k > 0))
        except BaseException:
            for shard, update in pending.items():
                self._pending.setdefault(shard, update)
            raise
        if now_at is not None:
            self._offset_ms = float(raw[0]) - now_at * 1000.0
        due_shards = [int(shard) for shard in raw[2]]
        for shard, offer in zip(due_shards, raw[4], strict=True):
            self._offers[shard] = parse_offer(offer)
        return int(raw[1]), due_shards, _pairs(raw[3])

    async def _flush_index(self) -> None:
        if self._pending:
            await self._index(0, None)

    # -- shard affinity (courtly.store.redis.affinity) --

    def _owns(self, shard: int) -> bool:
        return self._mine is None or shard in self._mine

    def _held_back(self, candidates: list[int], now_ms: float) -> dict[int, float]:
        """The due ``candidates`` this store leaves to their owners for now: shard -> the
        server time (ms) from which it takes them (``inf``: not before the owner's
        membership lapses). Empty without affinity or with this store the only member."""
        if self._mine is None:
            return {}
        held: dict[int, float] = {}
        max_wait_s = self._queues.max_due_wait_s
        for shard in candidates:
            offer = self._offers.get(shard)
            aged = offer is not None and is_aged(offer[2] / 1000.0, now_ms / 1000.0, max_wait_s)
            until = held_back_until(
                shard in self._mine,
                aged,
                None if offer is None else offer[1],
                self._affinity_grace_ms,
            )
            if until is not None and until > now_ms:
                held[shard] = until
        return held

    async def fetchers(self) -> list[str]:
        """The ids of the crawl's live fetchers: the stores that leased in the last
        :data:`~courtly.store.redis.affinity.MEMBER_LIFETIME_S` seconds and have not
        closed (``courtly status``)."""
        await self.open()
        return await self._members("", leaving=False)

    async def _members(self, member: str, *, leaving: bool) -> list[str]:
        """The live fetchers' ids, after renewing (or ending) ``member``'s ('' : neither).
        Raises :class:`~courtly.errors.CrawlFailed` if the crawl's keys are gone: the
        frontier went with them, and a fetcher that went on would find nothing to do, or
        start the crawl again from a seed another process re-adds."""
        args = [member, round(MEMBER_LIFETIME_S * 1000.0), "1" if leaving else "0"]
        keys = [self._crawl_key + "members", self._crawl_key + "meta"]
        async with self._gate(False):
            raw = await self._run("members", keys, args)
        if not int(raw[0]):
            raise CrawlFailed(
                f"the Redis store lost crawl {self._crawl!r}: its keys are gone (a server "
                "restarted without persistence, or they were flushed or evicted), and its "
                "frontier with them; nothing can resume it. Keep Redis's persistence on "
                "(appendonly yes) and memory unevicted (maxmemory-policy noeviction) for a "
                "frontier that outlives a restart (docs/distributed.md)"
            )
        return [_s(one) for one in raw[1:]]

    async def _heartbeat(self, *, leaving: bool) -> None:
        """Renew (or end) this store's membership of the crawl's fetchers and, with
        affinity, learn which shards it owns; an unreachable server leaves the last split
        as it was."""
        self._members_at = time.monotonic()
        try:
            members = await self._members(self._caller, leaving=leaving)
        except _transient()[0] as exc:
            log.debug("crawl %r: membership not renewed (%s)", self._crawl, exc)
            return
        others = [member for member in members if member != self._caller]
        if self._affinity_grace_ms > 0 and others:
            self._mine = owned_shards(self._caller, others, self._layout.shards)
        else:
            self._mine = None

    def _probe(self, shards: int) -> int | None:
        """The next shard to visit whatever the index says, once per probe interval."""
        now = time.monotonic()
        if now < self._probe_at:
            return None
        self._probe_at = now + self._probe_interval_s
        shard = self._probe_next
        self._probe_next = (shard + 1) % shards
        return shard

    def _leases(
        self, reply: _Reply, now_at: float, ttl_s: float, ahead_s: float, back_at: float
    ) -> list[Lease]:
        """The leases of a LEASE reply, taken as of ``now_at + ahead_s`` (the script's
        step time). A host due after the server's now (leased ahead) has its next allowed
        time mapped from ``back_at``, the caller's time when the reply was back, which is
        after the server's now: waiting until then starts no request early on the
        server's clock, whatever the round trip took (the offset of :meth:`_to_caller`,
        taken from ``now_at``, maps it up to a round trip early)."""
        out: list[Lease] = []
        rest = reply.rest
        leased_at = now_at + ahead_s
        expires_at = leased_at + ttl_s
        for i in range(0, len(rest), 5):
            host_key = _s(rest[i])
            entry = _s(rest[i + 2])
            depth, url = decode_entry(entry)
            next_ms = float(rest[i + 3])
            if self._server_clock and next_ms > reply.now_ms:
                allowed_at = back_at + (next_ms - reply.now_ms) / 1000.0
            else:
                allowed_at = self._to_caller(next_ms)
            state = decode_state(host_key, allowed_at, _s(rest[i + 4]))
            token, attempts = int(rest[i + 1]), decode_attempts(entry)
            out.append(Lease(token, host_key, url, depth, leased_at, expires_at, state, attempts))
        return out

    def _state_args(self, lease: Lease, host: HostState, now_at: float) -> tuple[str, ...]:
        if host.next_allowed_at == 0.0:
            delta = "z"
        else:
            delta = repr((host.next_allowed_at - now_at) * 1000.0)
        failing = "1" if host.error_streak + host.parks else "0"
        requests = max(0, host.requests_made - lease.host.requests_made)
        return (delta, encode_state(host), host.retired or "", failing, str(requests))

    def _caps(self, budget: BudgetConfig) -> tuple[int, int]:
        """ADD's queue caps: of a host, of a shard's share of the crawl (-1: none)."""
        host_cap = -1 if budget.max_queued_per_host is None else budget.max_queued_per_host
        crawl_cap = (
            -1 if budget.max_queued is None else math.ceil(budget.max_queued / self._layout.shards)
        )
        return host_cap, crawl_cap

    async def _add_found(
        self, entries: Sequence[QueuedUrl], budget: BudgetConfig, referrer: str
    ) -> list[AddStatus]:
        """A completion's discoveries in other shards, coalesced with those of the other
        completions under way (one ADD per shard per round: :mod:`.coalescer`); the new
        ones are catalogued with ``referrer``."""
        shards = self._layout.shards
        caps = self._caps(budget)
        keyed = [((shard_of(e.host_key, shards), *caps), (e, referrer)) for e in entries]
        statuses = await self._found.submit(keyed)
        later = [
            CatalogueEntry(entry.url, depth=entry.depth, referrer=referrer)
            for entry, status in zip(entries, statuses, strict=True)
            if status is AddStatus.QUEUED
            and shard_of(url_authority(entry.url), shards) != shard_of(entry.host_key, shards)
        ]
        await self._record((), found=later)
        return statuses

    async def _send_found(
        self, key: tuple[int, int, int], items: list[tuple[QueuedUrl, str]]
    ) -> list[AddStatus]:
        """One ADD of a round of :meth:`_add_found`: each URL with its own referrer."""
        shard, host_cap, crawl_cap = key
        shards = self._layout.shards
        args: list[Any] = [host_cap, crawl_cap, ""]
        for entry, referrer in items:
            h1, h2 = bloom_hashes(entry.url)
            here = shard_of(url_authority(entry.url), shards) == shard
            args.extend(
                (
                    entry.host_key,
                    _level_arg(entry),
                    encode_entry(entry.host_key, entry.depth, entry.url),
                    h1,
                    h2,
                    ">" + referrer if here else "0",
                )
            )
        reply = await self._shard_call("add", shard, None, args)
        return [AddStatus(int(raw)) for raw in reply.rest]

    def _add_args(
        self,
        args: list[Any],
        entries: Sequence[QueuedUrl],
        budget: BudgetConfig,
        referrer: str | None,
        shard: int,
    ) -> set[QueuedUrl]:
        """Append ADD's arguments to ``args``; the entries whose catalogue row belongs to
        another shard (written after the step, when the URL was queued)."""
        shards = self._layout.shards
        args.extend((*self._caps(budget), referrer or ""))
        elsewhere: set[QueuedUrl] = set()
        for entry in entries:
            h1, h2 = bloom_hashes(entry.url)
            here = referrer is not None and shard_of(url_authority(entry.url), shards) == shard
            if referrer is not None and not here:
                elsewhere.add(entry)
            args.extend(
                (
                    entry.host_key,
                    _level_arg(entry),
                    encode_entry(entry.host_key, entry.depth, entry.url),
                    h1,
                    h2,
                    "1" if here else "0",
                )
            )
        return elsewhere

    async def _add(
        self,
        entries: Sequence[QueuedUrl],
        now_at: float,
        budget: BudgetConfig,
        referrer: str | None,
        script: str = "add",
    ) -> list[AddStatus]:
        """ADD (or REVISIT) per shard, concurrently; statuses in the order of
        ``entries``; the new URLs catalogued (with ``referrer``) when one is given."""
        shards = self._layout.shards
        groups: dict[int, list[int]] = {}
        for i, entry in enumerate(entries):
            groups.setdefault(shard_of(entry.host_key, shards), []).append(i)
        statuses: list[AddStatus] = [AddStatus.INVALID] * len(entries)
        later: list[CatalogueEntry] = []

        async def one(shard: int, indexes: list[int]) -> None:
            group = [entries[i] for i in indexes]
            args: list[Any] = []
            elsewhere = self._add_args(args, group, budget, referrer, shard)
            reply = await self._shard_call(script, shard, now_at, args)
            for i, entry, raw in zip(indexes, group, reply.rest, strict=True):
                statuses[i] = status = AddStatus(int(raw))
                if status is AddStatus.QUEUED and entry in elsewhere:
                    later.append(CatalogueEntry(entry.url, depth=entry.depth, referrer=referrer))

        await asyncio.gather(*(one(shard, indexes) for shard, indexes in groups.items()))
        await self._record((), found=later)
        return statuses

    async def _record(
        self, records: Sequence[CatalogueEntry], *, found: Sequence[CatalogueEntry]
    ) -> None:
        """RECORD per catalogue shard: ``records`` replace, ``found`` only fill gaps."""
        shards = self._layout.shards
        groups: dict[int, list[Any]] = {}
        for record in records:
            payload, referrer = encode_catalogue(record)
            shard = shard_of(url_authority(record.url), shards)
            groups.setdefault(shard, []).extend((record.url, payload, referrer))
        for record in found:
            shard = shard_of(url_authority(record.url), shards)
            payload = f"D{record.depth}"
            groups.setdefault(shard, []).extend(
                (record.url, payload, "\0" + (record.referrer or ""))
            )
        await asyncio.gather(
            *(
                self._shard_call("record", shard, None, [len(args) // 3, *args])
                for shard, args in groups.items()
            )
        )

    async def _catalogue_chunk(self, shard: int, start: int) -> list[tuple[float, CatalogueEntry]]:
        """Up to a chunk of a shard's catalogue from position ``start``: (order, entry)."""
        prefix = self._shard_prefix(shard)
        client = self._client
        async with self._calls:
            raw = await client.zrange(
                prefix + "co", start, start + _CATALOGUE_CHUNK - 1, withscores=True
            )
            if not raw:
                return []
            urls = [member for member, _ in raw]
            payloads = await client.hmget(prefix + "c", urls)
            referrers = await client.hmget(prefix + "cr", urls)
        return [
            (
                float(score),
                decode_catalogue(
                    _s(url), _s(payload or b"{}"), None if referrer is None else _s(referrer)
                ),
            )
            for (url, score), payload, referrer in zip(raw, payloads, referrers, strict=True)
        ]


def _closed(error: BaseException) -> bool:
    """A call that failed before anything was sent: uvloop's refusal to write on a socket
    whose peer (a node that died) closed it, the client's race where another task dropped
    the connection in use (its writer is gone), or the cluster client following an ASK
    redirection to a node it does not know yet (a master added while it ran: its node
    lookup gives ``None``; the script did not run on the node that answered ASK). The
    call is retried like a connection error (the next attempt reconnects, or learns the
    new layout; the redirection ends when the slot's migration does). The error may be
    the one the client raises while handling these (version 8 of the client records a
    metric of the failed call on that ``None`` node: ``no attribute 'connection_kwargs'``),
    so the chain of errors being handled is read too."""
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return False
        text = str(seen)
        if (
            "handler is closed" in text
            or "no attribute 'writelines'" in text
            or "'NoneType' object has no attribute 'execute_command'" in text
        ):
            return True
        seen = seen.__context__
    return False


def _level_arg(entry: QueuedUrl) -> str:
    """ADD's level field: the level, then ``^`` for a lift (a SEEN URL is promoted)."""
    return f"{entry.level}^" if entry.lift else str(entry.level)


def _pairs(raw: list[Any]) -> list[tuple[int, float]]:
    return [(int(raw[i]), float(raw[i + 1])) for i in range(0, len(raw), 2)]


def _split(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal non-negative shares."""
    if parts == 0:
        return []
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _least(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)

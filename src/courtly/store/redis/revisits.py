"""The Redis store's recrawl rows (:class:`~courtly.store.revisit_rows.RevisitRows`).

A row lives in the shard of its **host** (``shard_of(host_key)``), beside the host's
queue, so that one script on one slot can queue it again: ``rv`` (url -> payload: host
key, depth and the flattened state), ``rk`` (url -> lane, seen-set hashes, host and
queue entry), ``rd`` (the shard's due sorted set: url -> due ms on the server's
clock) and ``ro`` (URLs out). ``note.lua`` writes rows, out or not as written (their
due times sent on the server's clock, as for next allowed times); ``due.lua``
queues due rows again by the same rules as memory and SQLite
(:func:`courtly.store.revisit_rows.requeue`). A row's ``next_due_at`` read back is its
``rd`` score on the caller's clock.

Which shards to visit: the earliest due time of each shard, from the replies of NOTE
and DUE and from a read of every shard's ``rd`` head at most every ``poll_s`` seconds
(other processes write rows too). No commits: each script is one atomic step, so the
row is written right before the page's completion (a crash between them has the URL,
still at the head of its queue, fetched again and its visit counted twice).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from courtly.frontier.budget import BudgetConfig
from courtly.store.redis.codec import bloom_hashes, encode_entry, shard_of
from courtly.store.revisit_rows import DueBatch, RevisitRow, state_from_values, state_values

if TYPE_CHECKING:
    from courtly.store.redis.store import RedisStore

__all__ = ["RedisRevisitRows", "RevisitSeam"]

_POLL_S: Final = 2.0
_SCAN: Final = 500


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisRevisitRows:
    """The recrawl rows of one :class:`~courtly.store.redis.store.RedisStore` (it holds
    one as ``revisits`` and forwards the seam's calls)."""

    def __init__(self, store: RedisStore) -> None:
        self._store = store
        self._due: dict[int, float] = {}  # shard -> earliest due ms known
        self._polled_at = -math.inf

    def _shard(self, host_key: str) -> int:
        return shard_of(host_key, self._store.layout.shards)

    async def get(self, keys: Sequence[tuple[str, str]]) -> dict[str, RevisitRow]:
        store = self._store
        await store.open()
        groups: dict[int, list[str]] = {}
        for url, host_key in keys:
            groups.setdefault(self._shard(host_key), []).append(url)
        found: dict[str, RevisitRow] = {}

        async def one(shard: int, urls: list[str]) -> None:
            for url, row in zip(urls, await self._read(shard, urls), strict=True):
                if row is not None:
                    found[url] = row

        await asyncio.gather(*(one(shard, urls) for shard, urls in groups.items()))
        return found

    async def _read(self, shard: int, urls: list[str]) -> list[RevisitRow | None]:
        store = self._store
        prefix = store._shard_prefix(shard)
        client = store._client
        async with store._calls:
            payloads = await client.hmget(prefix + "rv", urls)
            scores = await client.zmscore(prefix + "rd", urls)
            outs = await client.smismember(prefix + "ro", urls)
        rows: list[RevisitRow | None] = []
        for payload, score, out in zip(payloads, scores, outs, strict=True):
            if payload is None:
                rows.append(None)
                continue
            values = json.loads(_text(payload))
            state = state_from_values(values[2:])
            if not out:
                due = None if score is None else store._to_caller(float(score))
                state = dataclasses.replace(state, next_due_at=due)
            rows.append(RevisitRow(state, values[0], int(values[1]), bool(out)))
        return rows

    def _server_ms(self, at: float) -> float:
        """A time on the caller's clock on the server's (ms), by the offset the store
        learnt from the server's TIME (none when the caller's clock drives it)."""
        return at * 1000.0 + self._store._offset_ms

    async def note(self, rows: Sequence[RevisitRow]) -> None:
        store = self._store
        await store.open()
        groups: dict[int, list[Any]] = {}
        for row in rows:
            state = row.state
            due = "" if state.next_due_at is None else repr(self._server_ms(state.next_due_at))
            h1, h2 = bloom_hashes(row.url)
            entry = encode_entry(row.host_key, row.depth, row.url)
            meta = f"{state.lane} {h1} {h2} {row.host_key} {entry}"
            payload = json.dumps([row.host_key, row.depth, *state_values(state)])
            out = "1" if row.out else "0"
            groups.setdefault(self._shard(row.host_key), []).extend(
                (row.url, due, payload, meta, out)
            )

        async def one(shard: int, args: list[Any]) -> None:
            await store._shard_call("note", shard, None, args)
            self._remember(shard, await self._head(shard))

        await asyncio.gather(*(one(shard, args) for shard, args in groups.items()))

    async def _head(self, shard: int) -> float | None:
        store = self._store
        async with store._calls:
            head = await store._client.zrange(
                store._shard_prefix(shard) + "rd", 0, 0, withscores=True
            )
        return float(head[0][1]) if head else None

    def _remember(self, shard: int, due_ms: float | None) -> None:
        if due_ms is None:
            self._due.pop(shard, None)
        else:
            self._due[shard] = due_ms

    async def _poll(self) -> None:
        """Read every shard's earliest due time (rows other processes wrote)."""
        shards = range(self._store.layout.shards)
        heads = await asyncio.gather(*(self._head(shard) for shard in shards))
        for shard, due in zip(shards, heads, strict=True):
            self._remember(shard, due)

    async def requeue(
        self,
        now_at: float,
        limit: int,
        budget: BudgetConfig,
        *,
        levels: Sequence[int],
        retry_s: float,
        lost_after_s: float,
    ) -> DueBatch:
        store = self._store
        await store.open()
        if now_at - self._polled_at >= _POLL_S or not self._due:
            self._polled_at = now_at
            await self._poll()
        now_ms = self._server_ms(now_at)
        due = sorted((ms, shard) for shard, ms in self._due.items() if ms <= now_ms)
        shards = self._store.layout.shards
        host_cap = -1 if budget.max_queued_per_host is None else budget.max_queued_per_host
        crawl_cap = -1 if budget.max_queued is None else math.ceil(budget.max_queued / shards)
        queued: list[str] = []
        refused = 0
        for _, shard in due:
            if len(queued) + refused >= limit:
                break
            args = [
                limit - len(queued) - refused,
                host_cap,
                crawl_cap,
                repr(retry_s * 1000.0),
                repr(lost_after_s * 1000.0),
                *levels,
            ]
            reply = await store._shard_call("due", shard, now_at, args)
            rest = reply.rest
            refused += int(rest[0])
            self._remember(shard, float(rest[1]) if rest[1] else None)
            queued.extend(_text(url) for url in rest[2:])
        await store._flush_index()
        return DueBatch(tuple(queued), refused, await self.next_due_at(poll=False))

    async def next_due_at(self, *, poll: bool = True) -> float | None:
        store = self._store
        await store.open()
        if poll:
            await self._poll()
        if not self._due:
            return None
        return store._to_caller(min(self._due.values()))

    async def rows(self) -> AsyncIterator[RevisitRow]:
        store = self._store
        await store.open()
        for shard in range(store.layout.shards):
            cursor = 0
            while True:
                async with store._calls:
                    cursor, chunk = await store._client.hscan(
                        store._shard_prefix(shard) + "rv", cursor, count=_SCAN
                    )
                urls = [_text(url) for url in chunk]
                for row in await self._read(shard, urls) if urls else ():
                    if row is not None:
                        yield row
                if not cursor:
                    break


class RevisitSeam:
    """The :class:`~courtly.store.revisit_rows.RevisitRows` methods of the Redis store (a
    base class of :class:`~courtly.store.redis.store.RedisStore`), forwarded to its
    :class:`RedisRevisitRows`."""

    __rows: RedisRevisitRows | None = None

    @property
    def _revisit_rows(self) -> RedisRevisitRows:
        if self.__rows is None:
            self.__rows = RedisRevisitRows(cast("RedisStore", self))
        return self.__rows

    async def revisit_states(self, keys: Sequence[tuple[str, str]]) -> dict[str, RevisitRow]:
        return await self._revisit_rows.get(keys)

    async def note_visits(self, rows: Sequence[RevisitRow]) -> None:
        await self._revisit_rows.note(rows)

    async def requeue_due(
        self,
        now_at: float,
        limit: int,
        budget: BudgetConfig,
        *,
        levels: Sequence[int],
        retry_s: float,
        lost_after_s: float,
    ) -> DueBatch:
        return await self._revisit_rows.requeue(
            now_at, limit, budget, levels=levels, retry_s=retry_s, lost_after_s=lost_after_s
        )

    async def next_revisit_at(self) -> float | None:
        return await self._revisit_rows.next_due_at()

    def revisit_rows(self) -> AsyncIterator[RevisitRow]:
        return self._revisit_rows.rows()

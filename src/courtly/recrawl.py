"""The crawl's recrawl lane (``courtly crawl --recrawl``): what the fetch loop asks of it.

:class:`Recrawl` sits between the crawl loop and the :class:`RevisitBook`:

* :meth:`Recrawl.fetch` reads the URL's recrawl row from the store and sends its
  validators (conditional GET);
* :meth:`Recrawl.visited` digests the answer (payload sha1 for the WARC, main-text
  xxh3 and SimHash for change decisions), folds it into the state, archives it (a 304
  as a ``server-not-modified`` revisit, a repeated payload as an
  ``identical-payload-digest`` revisit, anything else as a full response) and writes
  the row, held with the page's completion that follows (one commit);
* :meth:`Recrawl.feed` has the store queue due URLs again (``requeue_due``: by the
  due index, routed as ``revisit`` routes known URLs, never through the seen-set),
  within the share of fetches revisits may take (:func:`revisit_allowance`);
* :meth:`Recrawl.start` counts the rows into the book, moves an older crawl's revisit
  blob into rows, and makes every fetched catalogue URL without a row due at once, so
  a finished crawl resumed with ``--recrawl`` starts revisiting; :meth:`Recrawl.save`
  keeps the last changes (``courtly changes``) in a blob.

The rows are the store's (:mod:`courtly.store.revisit_rows`): several processes that
share a store (Redis fetchers; each partition with its own store) each run a lane over
the rows of the URLs they fetch.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
import uuid
from dataclasses import dataclass
from typing import cast

from courtly.archive.revisit import (
    IDENTICAL_PAYLOAD_DIGEST,
    SERVER_NOT_MODIFIED,
    RevisitRef,
    payload_digest,
    write_revisit,
)
from courtly.archive.warc import WarcWriter, warc_date
from courtly.changes import MAX_EVENTS, ChangeEvent, events_from_bytes, events_to_bytes
from courtly.clock import Clock
from courtly.config import CrawlConfig
from courtly.errors import ConfigError
from courtly.fetch.records import ConditionalFetcher, Fetcher, FetchResult
from courtly.fetch.validators import Validators
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.frontier import Candidate, Frontier
from courtly.frontier.news_lane import news_schedule
from courtly.frontier.records import Lease
from courtly.frontier.recrawl import DAY_S, LaneSchedule
from courtly.frontier.revisit import Archive, RevisitState, Visit
from courtly.frontier.revisit_book import RevisitBook
from courtly.parse.content_type import is_html
from courtly.parse.fingerprint import content_hash, hamming, simhash64
from courtly.parse.main_text import main_text_and_title, text_digest
from courtly.parse.near_duplicates import NearDuplicateIndex
from courtly.store.base import FrontierStore
from courtly.store.revisit_blob import BLOB, rows_from_blob
from courtly.store.revisit_rows import RevisitRow, RevisitRows

__all__ = ["Recrawl", "RecrawlCounts", "revisit_allowance"]

_CHANGES = ("recrawl", "changes")
_FEED_MAX = 256
_POLL_S = 2.0
"""How often the lane asks the store for the earliest due time (rows another process
shares may have come due)."""
_START_BATCH = 500


def revisit_allowance(share: float, admitted: int, fetches: int, *, discovery_waiting: bool) -> int:
    """How many more revisits may be admitted now.

    ``admitted`` counts every revisit admitted so far (fetched or still pending),
    ``fetches`` every fetch made plus the pending revisits. With discovery work
    waiting, admitting k keeps ``admitted + k <= share * (fetches + k)``, so revisits
    are at most ``share`` of the fetches (the first one is always allowed when
    ``share > 0``); with none waiting, the idle share is lent out (no bound).
    """
    if not discovery_waiting or share >= 1.0:
        return _FEED_MAX
    room = math.floor((share * fetches - admitted) / (1.0 - share) + 1e-9)
    if room <= 0 and admitted == 0 and share > 0:
        room = 1
    return max(0, min(_FEED_MAX, room))


@dataclass
class RecrawlCounts:
    """What the lane did: ``revisits`` fetches of known URLs, of which ``not_modified``
    were 304s, ``unchanged`` judged unchanged (304s included) and ``changed`` changed."""

    revisits: int = 0
    not_modified: int = 0
    unchanged: int = 0
    changed: int = 0


def _lane(config: CrawlConfig) -> LaneSchedule:
    """The ordinary lane: the configured clamps; before a URL has a history, the geometric
    mean of the clamps, at most a day."""
    low, high = config.recrawl_min_interval_s, config.recrawl_max_interval_s
    return LaneSchedule(min_s=low, max_s=high, default_s=min(DAY_S, math.sqrt(low * high)))


class Recrawl:
    """The recrawl lane of one crawl process (module docstring)."""

    def __init__(
        self,
        config: CrawlConfig,
        store: FrontierStore,
        frontier: Frontier,
        clock: Clock,
        *,
        rng: random.Random | None = None,
        save_every_s: float = 5.0,
    ) -> None:
        if not isinstance(store, RevisitRows):
            raise ConfigError(f"--recrawl: the store {type(store).__name__} keeps no recrawl rows")
        lane = _lane(config)
        self._config = config
        self._store = store
        self.rows: RevisitRows = store
        self._frontier = frontier
        self._clock = clock
        self._share = config.recrawl_share
        news_floor = config.news_min_interval_s
        if news_floor is None:
            news_floor = lane.min_s / 4
        self.book = RevisitBook(
            lane,
            None,
            rng or random.Random(),
            news=news_schedule(min(news_floor, lane.max_s), lane.max_s),
            news_patterns=[re.compile(p) for p in config.news],
        )
        self._save_every_s = save_every_s
        self._saved_at = float("-inf")
        self.counts = RecrawlCounts()
        self.fetches = 0
        self.pending = 0
        """Rows this process put out (revisits queued, failed fetches' retries waiting)
        whose visit has not come yet."""
        self.changes: list[ChangeEvent] = []
        self._near = NearDuplicateIndex()
        self._texts: dict[int, str] = {}  # main-text digest -> the first URL with it
        self._unsaved: list[ChangeEvent] = []
        self._known: dict[str, RevisitRow | None] = {}  # read at fetch, until noted
        self._next_due: float | None = None
        self._polled_at = float("-inf")

    def _host_key(self, url: str) -> str:
        return self._frontier.queued_url(Candidate(url), canonical=True).host_key

    async def start(self) -> None:
        """Move an older crawl's blob into rows, count the rows in; every fetched
        catalogue URL without a row is due now."""
        store, rows = self._store, self.rows
        now = self._clock.now()
        data = await store.get_blob(*BLOB)
        if data:
            lanes = self.book.lanes
            old = rows_from_blob(data, self._host_key, lambda lane: lanes[lane].max_s)
            await rows.note_visits(old)
            await store.put_blob(*BLOB, b"")
            await store.flush()
        self.changes = events_from_bytes(await store.get_blob(*_CHANGES))
        async for row in rows.revisit_rows():
            self.book.count(row.state)
            self._index(row.url, row.state.text_digest, row.state.simhash)
            if row.out:
                self.pending += 1
        batch: list[RevisitRow] = []
        async for entry in store.catalogue():
            if entry.status is None or entry.skip_reason is not None:
                continue
            validators = Validators(etag=entry.etag, last_modified=entry.last_modified)
            state = RevisitState(
                entry.url,
                visits=1,
                status=entry.status,
                last_fetch_at=entry.fetched_at,
                judged_at=entry.fetched_at,
                validators=validators,
                next_due_at=now,
            )
            batch.append(RevisitRow(state, self._host_key(entry.url), entry.depth))
            if len(batch) >= _START_BATCH:
                await self._add_missing(batch)
        await self._add_missing(batch)
        await store.flush()
        self._next_due = await rows.next_revisit_at()
        self._saved_at = self._polled_at = now

    async def _add_missing(self, batch: list[RevisitRow]) -> None:
        """Write the rows of ``batch`` whose URL has none yet (then empty it)."""
        if not batch:
            return
        known = await self.rows.revisit_states([(row.url, row.host_key) for row in batch])
        missing = [row for row in batch if row.url not in known]
        batch.clear()
        if missing:
            await self.rows.note_visits(missing)
            for row in missing:
                self.book.count(row.state)

    async def fetch(self, fetcher: Fetcher, url: str) -> FetchResult:
        """GET ``url``, conditionally when its row has validators."""
        row = (await self.rows.revisit_states([(url, self._host_key(url))])).get(url)
        self._known[url] = row
        headers = self.book.headers_for(row.state if row is not None else None)
        if not headers:
            return await fetcher.fetch(url)
        return await cast(ConditionalFetcher, fetcher).fetch(url, headers=headers)

    async def visited(
        self, lease: Lease, result: FetchResult | None, warc: WarcWriter | None
    ) -> tuple[Visit, tuple[str, int, int] | None]:
        """Fold a fetch of ``lease.url`` (``None``: no response) into its row, archive it
        and write the row (held with the completion that follows); returns the visit
        and the archived record's (file, offset, length)."""
        url = lease.url
        now = self._clock.now()
        if url in self._known:
            row = self._known.pop(url)
        else:
            row = (await self.rows.revisit_states([(url, lease.host_key)])).get(url)
        known = row.state if row is not None else None
        depth = row.depth if row is not None else lease.depth
        if row is not None and row.out:
            self.pending = max(0, self.pending - 1)
        self.fetches += 1
        if known is not None and known.visits:
            self.counts.revisits += 1
        if result is None:
            visit = self.book.note(known, url, now, status=None)
            await self._write(RevisitRow(visit.state, lease.host_key, depth))
            return visit, None
        payload = result.raw_body if result.raw_body is not None else result.body
        digest = payload_digest(payload) if result.status != 304 else None
        text: int | None = None
        simhash: int | None = None
        title: str | None = None
        if 200 <= result.status < 300 and is_html(result.header("Content-Type"), result.body):
            body, title = main_text_and_title(result.body)
            text, simhash = text_digest(body), simhash64(body)
        elif 200 <= result.status < 300:
            text = content_hash(result.body)  # not HTML: the bytes decide
        record_id = str(uuid.uuid4())
        visit = self.book.note(
            known,
            url,
            now,
            status=result.status,
            headers=result.headers,
            body_digest=digest,
            text_digest=text,
            simhash=simhash,
            content_bytes=len(result.body) if result.status != 304 else None,
        )
        self._count(visit, result.status)
        if text is not None and simhash is not None:
            visit = self._mark_duplicates(visit, text, simhash)
        if visit.changed and known is not None:
            distance = None
            if known.simhash is not None and simhash is not None:
                distance = hamming(known.simhash, simhash)
            event = ChangeEvent(
                url, now, known.status, result.status, known.content_bytes,
                visit.state.content_bytes, distance, title,
            )  # fmt: skip
            self.changes = [*self.changes[-(MAX_EVENTS - 1) :], event]
            self._unsaved.append(event)
        visit, position = self._archive(warc, result, visit, record_id)
        await self._write(RevisitRow(visit.state, lease.host_key, depth))
        return visit, position

    async def retrying(self, lease: Lease, until: float) -> None:
        """A failed fetch of ``lease.url`` is retried: its lease's URL waits at the head of
        its host's queue for the back-off, up to ``until`` (epoch seconds). Its row is
        written *out* (queued) and due the longest interval after ``until``, so that
        ``requeue_due`` does not queue the URL a second time while the retry waits; the
        retry's visit writes the row back (not out) with its schedule."""
        url = lease.url
        row = (await self.rows.revisit_states([(url, lease.host_key)])).get(url)
        if row is None or row.out:
            return
        lost = until + self.book.lane.max_s
        state = dataclasses.replace(row.state, next_due_at=max(lost, row.state.next_due_at or lost))
        await self._write(dataclasses.replace(row, state=state, out=True))
        self.pending += 1  # as a row queued again: its visit takes it back out

    async def _write(self, row: RevisitRow) -> None:
        await self.rows.note_visits([row])
        due = row.state.next_due_at
        if due is not None and (self._next_due is None or due < self._next_due):
            self._next_due = due

    def _index(self, url: str, text: int | None, simhash: int | None) -> None:
        if text is not None:
            self._texts.setdefault(text, url)
        if simhash is not None:
            self._near.add(url, simhash)

    def _mark_duplicates(self, visit: Visit, text: int, simhash: int) -> Visit:
        """Record ``duplicate_of`` (same main text, another URL seen first) and
        ``near_duplicate_of`` (the nearest other URL within the index's k bits)."""
        url = visit.state.url
        first = self._texts.setdefault(text, url)
        near = self._near.find(simhash, exclude=url)
        self._near.add(url, simhash)
        state = dataclasses.replace(
            visit.state,
            duplicate_of=first if first != url else None,
            near_duplicate_of=near[0][1] if near else None,
        )
        return dataclasses.replace(visit, state=state)

    def _count(self, visit: Visit, status: int) -> None:
        if status == 304:
            self.counts.not_modified += 1
        if visit.state.comparisons and not visit.changed and status < 500:
            self.counts.unchanged += 1
        if visit.changed:
            self.counts.changed += 1

    def _archive(
        self,
        warc: WarcWriter | None,
        result: FetchResult,
        visit: Visit,
        record_id: str,
    ) -> tuple[Visit, tuple[str, int, int] | None]:
        if warc is None:
            return visit, None
        state = visit.state
        if visit.archive in (Archive.NOT_MODIFIED, Archive.IDENTICAL_DIGEST):
            ref = RevisitRef(state.warc_record_id, state.url, state.warc_date, state.body_digest)
            profile = (
                SERVER_NOT_MODIFIED
                if visit.archive is Archive.NOT_MODIFIED
                else IDENTICAL_PAYLOAD_DIGEST
            )
            position = write_revisit(warc, result, profile, ref)
        else:
            position = warc.write_exchange(result, record_id=record_id)
            if 200 <= result.status < 300:
                state = dataclasses.replace(
                    state, warc_record_id=record_id, warc_date=warc_date(result.started_at)
                )
                visit = dataclasses.replace(visit, state=state)
        return visit, (position.filename, position.offset, position.length)

    async def feed(self, budget: BudgetConfig) -> int:
        """Have the store queue due URLs again (within the share); how many went in."""
        now = self._clock.now()
        if now - self._polled_at >= _POLL_S:  # rows shared with other processes
            self._polled_at = now
            self._next_due = await self.rows.next_revisit_at()
        upcoming = self._next_due
        if upcoming is None or upcoming > now:
            return 0
        counts = await self._store.counts(now)
        # queued again by this process and not fetched yet: in the queues still (bounds
        # the count when other processes sharing the store fetched some of them)
        self.pending = min(self.pending, counts.queued + counts.leased)
        discovery_waiting = counts.queued + counts.leased > self.pending
        room = revisit_allowance(
            self._share,
            self.counts.revisits + self.pending,
            self.fetches + self.pending,
            discovery_waiting=discovery_waiting,
        )
        if room <= 0:
            return 0
        top = self._frontier.config.queues.levels - 1
        lane = self.book.lane
        batch = await self.rows.requeue_due(
            now,
            room,
            budget,
            levels=(0, min(1, top)),  # by lane: news revisits at level 0, ordinary at 1
            retry_s=lane.min_s,
            lost_after_s=lane.max_s,
        )
        self.pending += len(batch.queued)
        self._next_due = batch.next_due_at
        return len(batch.queued)

    async def next_due_at(self) -> float | None:
        return await self.rows.next_revisit_at()

    async def save(self, *, force: bool = False) -> None:
        """Add the changes seen since the last save to the store's last changes (every
        ``save_every_s``, or now when ``force``); the rows are written with each visit.
        The blob is read and written again, so processes sharing a store (Redis) keep
        each other's changes (two saving at the same moment may lose one's)."""
        now = self._clock.now()
        if self._unsaved and (force or now - self._saved_at >= self._save_every_s):
            self._saved_at = now
            stored = events_from_bytes(await self._store.get_blob(*_CHANGES))
            known = {(e.url, e.at) for e in stored}
            fresh = [e for e in self._unsaved if (e.url, e.at) not in known]
            merged = sorted([*stored, *fresh], key=lambda e: e.at)[-MAX_EVENTS:]
            self._unsaved.clear()
            await self._store.put_blob(*_CHANGES, events_to_bytes(merged))

"""The crawl's recrawl lane (``courtly crawl --recrawl``): what the fetch loop asks of it.

:class:`Recrawl` sits between the crawl loop and the :class:`RevisitBook`:

* :meth:`Recrawl.fetch` sends a known URL's validators (conditional GET);
* :meth:`Recrawl.visited` digests the answer (payload sha1 for the WARC, main-text
  xxh3 and SimHash for change decisions), folds it into the book and archives it: a
  304 as a ``server-not-modified`` revisit, a repeated payload as an
  ``identical-payload-digest`` revisit, anything else as a full response;
* :meth:`Recrawl.feed` puts due URLs back into the frontier through the store's
  ``revisit`` (never the seen-set), within the share of fetches revisits may take
  (:func:`revisit_allowance`);
* :meth:`Recrawl.start` / :meth:`Recrawl.save` keep the book in the store (a blob),
  and on start every fetched catalogue URL the book lacks is due at once, so a
  finished crawl resumed with ``--recrawl`` starts revisiting.

Trade-off: the book is one blob rewritten every ``save_every_s`` (fine for the small
watch-a-set-of-pages crawls ``--recrawl`` is for; a per-URL table is the way to
millions of URLs).
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
from courtly.fetch.records import ConditionalFetcher, Fetcher, FetchResult
from courtly.fetch.validators import Validators
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.frontier import Candidate, Frontier
from courtly.frontier.news_lane import NEWS, news_schedule
from courtly.frontier.records import AddStatus
from courtly.frontier.recrawl import DAY_S, LaneSchedule
from courtly.frontier.revisit import Archive, Visit
from courtly.frontier.revisit_book import RevisitBook
from courtly.parse.content_type import is_html
from courtly.parse.fingerprint import content_hash, hamming, simhash64
from courtly.parse.main_text import main_text_and_title, text_digest
from courtly.parse.near_duplicates import NearDuplicateIndex
from courtly.store.base import FrontierStore

__all__ = ["Recrawl", "RecrawlCounts", "revisit_allowance"]

_BLOB = ("recrawl", "book")
_CHANGES = ("recrawl", "changes")
_FEED_MAX = 256


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
        lane = _lane(config)
        self._config = config
        self._store = store
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
        self.changes: list[ChangeEvent] = []
        self._near = NearDuplicateIndex()
        self._texts: dict[int, str] = {}  # main-text digest -> the first URL with it

    async def start(self) -> None:
        """Load the saved book; every fetched URL it lacks is due now."""
        data = await self._store.get_blob(*_BLOB)
        if data is not None:
            self.book.load(data)
        self.changes = events_from_bytes(await self._store.get_blob(*_CHANGES))
        for state in self.book.states.values():
            self._index(state.url, state.text_digest, state.simhash)
        now = self._clock.now()
        async for entry in self._store.catalogue():
            if entry.status is not None and entry.skip_reason is None:
                validators = Validators(etag=entry.etag, last_modified=entry.last_modified)
                self.book.ensure(
                    entry.url,
                    entry.depth,
                    now,
                    status=entry.status,
                    fetched_at=entry.fetched_at,
                    validators=validators,
                )
        self._saved_at = now

    async def fetch(self, fetcher: Fetcher, url: str) -> FetchResult:
        """GET ``url``, conditionally when the book has validators for it."""
        headers = self.book.headers_for(url)
        if not headers:
            return await fetcher.fetch(url)
        return await cast(ConditionalFetcher, fetcher).fetch(url, headers=headers)

    def visited(
        self, url: str, depth: int, result: FetchResult | None, warc: WarcWriter | None
    ) -> tuple[Visit, tuple[str, int, int] | None]:
        """Fold a fetch (``None``: no response) into the book and archive it; returns the
        visit and the archived record's (file, offset, length)."""
        now = self._clock.now()
        known = self.book.state(url)
        self.fetches += 1
        if known is not None and known.visits:
            self.counts.revisits += 1
        if result is None:
            return self.book.note(url, depth, now, status=None), None
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
            url,
            depth,
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
            self._mark_duplicates(url, text, simhash)
        if visit.changed and known is not None:
            distance = None
            if known.simhash is not None and simhash is not None:
                distance = hamming(known.simhash, simhash)
            event = ChangeEvent(
                url, now, known.status, result.status, known.content_bytes,
                visit.state.content_bytes, distance, title,
            )  # fmt: skip
            self.changes = [*self.changes[-(MAX_EVENTS - 1) :], event]
        position = self._archive(warc, result, visit, record_id)
        return visit, position

    def _index(self, url: str, text: int | None, simhash: int | None) -> None:
        if text is not None:
            self._texts.setdefault(text, url)
        if simhash is not None:
            self._near.add(url, simhash)

    def _mark_duplicates(self, url: str, text: int, simhash: int) -> None:
        """Record ``duplicate_of`` (same main text, another URL seen first) and
        ``near_duplicate_of`` (the nearest other URL within the index's k bits)."""
        first = self._texts.setdefault(text, url)
        near = self._near.find(simhash, exclude=url)
        self._near.add(url, simhash)
        self.book.mark(
            url,
            duplicate_of=first if first != url else None,
            near_duplicate_of=near[0][1] if near else None,
        )

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
    ) -> tuple[str, int, int] | None:
        if warc is None:
            return None
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
                self.book.archived(state.url, record_id, warc_date(result.started_at))
        return (position.filename, position.offset, position.length)

    async def feed(self, budget: BudgetConfig) -> int:
        """Put due URLs back into the frontier (within the share); how many went in."""
        now = self._clock.now()
        upcoming = self.book.next_due_at()
        if upcoming is None or upcoming > now:
            return 0
        counts = await self._store.counts(now)
        discovery_waiting = counts.queued + counts.leased > len(self.book.out)
        pending = len(self.book.out)
        room = revisit_allowance(
            self._share,
            self.counts.revisits + pending,
            self.fetches + pending,
            discovery_waiting=discovery_waiting,
        )
        due = self.book.take_due(now, room)
        if not due:
            return 0
        queued_url = self._frontier.queued_url
        top = self._frontier.config.queues.levels - 1
        entries = [
            # news revisits first (level 0), ordinary ones next (level 1)
            dataclasses.replace(
                queued_url(Candidate(d.url, depth=d.depth, is_recrawl=True), canonical=True),
                level=0 if d.lane == NEWS else min(1, top),
            )
            for d in due
        ]
        statuses = await self._store.revisit(entries, now, budget)
        queued = 0
        for item, status in zip(due, statuses, strict=True):
            if status is AddStatus.QUEUED:
                queued += 1
            else:
                self.book.give_back(item.url, now + self.book.lane.min_s)
        return queued

    def next_due_at(self) -> float | None:
        return self.book.next_due_at()

    async def save(self, *, force: bool = False) -> None:
        """Keep the book in the store (every ``save_every_s``, or now when ``force``)."""
        now = self._clock.now()
        if force or now - self._saved_at >= self._save_every_s:
            self._saved_at = now
            await self._store.put_blob(*_BLOB, self.book.to_bytes())
            await self._store.put_blob(*_CHANGES, events_to_bytes(self.changes))

"""The catalogue's recrawl rows: one :class:`RevisitRow` per fetched URL of a ``--recrawl``
crawl, and the one step that puts due URLs back into their host queues.

A row is a URL's :class:`~courtly.frontier.revisit.RevisitState` (visits, changes, last
change, the last changed intervals, validators and their reliability, digests, SimHash,
next due time, duplicates), its host key and depth, and whether it is *out*: queued again
and not visited since. Every store keeps them beside its catalogue (SQLite: the
``revisit`` table with an index on the due time; memory: a dict and a heap; Redis: a
hash and a due sorted set per shard), behind the :class:`RevisitRows` seam:

* :meth:`RevisitRows.note_visits` writes rows; the write is **held** with the step that
  follows (the page's completion), so both are in one commit: a crash keeps both or
  neither (a visit noted and its completion lost would only count the visit again when
  the URL, still at the head of its queue, is fetched again);
* :meth:`RevisitRows.requeue_due` is one step: the due rows (earliest first, by the
  index, never a scan) are routed through the scheduler as
  :meth:`~courtly.store.base.FrontierStore.revisit` routes known URLs (the news lane at
  its level, ordinary revisits at theirs, budgets and retired hosts refused); a queued
  row is out, due again ``lost_after_s`` later only if its visit never comes (a URL the
  robots rules now refuse, say); a refused one is due again ``retry_s`` later.

:func:`requeue` is that step over :class:`DueRows` (memory and SQLite run it; the Redis
store's ``due.lua`` mirrors it). :func:`state_values` / :func:`state_from_values` flatten a
state to the column order :data:`STATE_COLUMNS` (validators spread out, the interval ring
as JSON) for SQLite and Redis alike.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

from courtly.fetch.validators import Validators
from courtly.frontier.budget import BudgetConfig
from courtly.frontier.records import AddStatus, QueuedUrl
from courtly.frontier.revisit import RevisitState
from courtly.store.scheduler import Scheduler

__all__ = [
    "STATE_COLUMNS",
    "DueBatch",
    "DueRows",
    "RevisitRow",
    "RevisitRows",
    "export_fields",
    "requeue",
    "state_from_values",
    "state_values",
]

_VALIDATOR_FIELDS: Final = tuple(f.name for f in dataclasses.fields(Validators))
_ADDED_FIELDS: Final = ("judged_at",)
"""State fields added after the first layout (state version 6): flattened last, so that
a payload written before (a Redis row) is a prefix, its missing fields read as ``None``."""
_STATE_FIELDS: Final = tuple(
    f.name
    for f in dataclasses.fields(RevisitState)
    if f.name != "validators" and f.name not in _ADDED_FIELDS
)
STATE_COLUMNS: Final = (*_STATE_FIELDS, *_VALIDATOR_FIELDS, *_ADDED_FIELDS)
"""A flattened state's columns: the state's own fields (``url`` first), then the
validators', then the fields added since (:data:`_ADDED_FIELDS`)."""
_RING: Final = _STATE_FIELDS.index("changed_ring")
_OWN: Final = len(_STATE_FIELDS)
_VALIDATORS_END: Final = _OWN + len(_VALIDATOR_FIELDS)


@dataclass(frozen=True, slots=True)
class RevisitRow:
    """One URL's recrawl row: its state, where it queues (``host_key``, ``depth``) and
    whether it is ``out`` (queued again, its visit not noted yet)."""

    state: RevisitState
    host_key: str
    depth: int = 0
    out: bool = False

    @property
    def url(self) -> str:
        return self.state.url


@dataclass(frozen=True, slots=True)
class DueBatch:
    """What :meth:`RevisitRows.requeue_due` did: the URLs ``queued`` again (out from now
    on), how many were ``refused`` (budget, retired host), and the earliest due time of a
    row after the step (``None``: no row is due at any time)."""

    queued: tuple[str, ...]
    refused: int
    next_due_at: float | None


@runtime_checkable
class RevisitRows(Protocol):
    """The recrawl rows of a store (module docstring); every method is one step."""

    async def revisit_states(self, keys: Sequence[tuple[str, str]]) -> dict[str, RevisitRow]:
        """The rows of those of ``keys`` (``(url, host_key)`` pairs: a store may keep a
        row with its host's queue) that have one, by URL."""
        ...

    async def note_visits(self, rows: Sequence[RevisitRow]) -> None:
        """Write ``rows`` (replacing any earlier row of the URL), held with the next step:
        one commit holds both. A row's due time is its ``state.next_due_at``; a row
        written ``out`` (a failed fetch's retry is queued) is not queued again before it,
        and then only as a lost one."""
        ...

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
        """Queue again up to ``limit`` rows due by ``now_at``, earliest first, each at
        ``levels[lane]``; see the module docstring."""
        ...

    async def next_revisit_at(self) -> float | None:
        """The earliest due time of any row (``None`` if there is none)."""
        ...

    def revisit_rows(self) -> AsyncIterator[RevisitRow]:
        """Every row (the crawl's start: lane sizes, duplicate indexes; the export)."""
        ...


class DueRows(Protocol):
    """What :func:`requeue` needs of a store's rows: the due ones by the index, and the
    writes that mark a row out or due later."""

    def due(self, now_at: float, limit: int) -> list[RevisitRow]: ...

    def set_due(self, url: str, due_at: float, *, out: bool) -> None: ...


def requeue(
    rows: DueRows,
    scheduler: Scheduler,
    now_at: float,
    limit: int,
    budget: BudgetConfig,
    *,
    levels: Sequence[int],
    retry_s: float,
    lost_after_s: float,
) -> tuple[tuple[str, ...], int]:
    """The step of :meth:`RevisitRows.requeue_due` over ``rows`` (inside the store's own
    step): the URLs queued and how many were refused."""
    due = rows.due(now_at, limit)
    if not due:
        return (), 0
    entries = [
        QueuedUrl(row.url, row.host_key, levels[min(row.state.lane, len(levels) - 1)], row.depth)
        for row in due
    ]
    statuses = scheduler.add(entries, budget, known=True)
    queued: list[str] = []
    refused = 0
    for row, status in zip(due, statuses, strict=True):
        if status is AddStatus.QUEUED:
            queued.append(row.url)
            rows.set_due(row.url, now_at + lost_after_s, out=True)
        else:
            refused += 1
            rows.set_due(row.url, now_at + retry_s, out=False)
    return tuple(queued), refused


def export_fields(row: RevisitRow) -> dict[str, object]:
    """The ``recrawl`` object of a URL's ``courtly export`` line: its history, validators
    and their reliability, digests (16-digit hex, as the catalogue's), next due time."""
    s, v = row.state, row.state.validators

    def hex64(value: int | None) -> str | None:
        return None if value is None else format(value & 0xFFFF_FFFF_FFFF_FFFF, "016x")

    return {
        "lane": s.lane,
        "visits": s.visits,
        "comparisons": s.comparisons,
        "changes": s.changes,
        "last_fetch_at": s.last_fetch_at,
        "last_judged_at": s.compared_at,
        "last_change_at": s.last_change_at,
        "changed_intervals_s": list(s.changed_ring),
        "change_rate_per_s": s.change_rate_per_s,
        "interval_s": s.interval_s,
        "next_due_at": s.next_due_at,
        "out": row.out,
        "etag": v.etag,
        "last_modified": v.last_modified,
        "etag_unreliable": v.etag_unreliable,
        "lm_unreliable": v.lm_unreliable,
        "text_digest": hex64(s.text_digest),
        "simhash": hex64(s.simhash),
        "duplicate_of": s.duplicate_of,
        "near_duplicate_of": s.near_duplicate_of,
    }


def state_values(state: RevisitState) -> list[Any]:
    """``state`` flattened in :data:`STATE_COLUMNS` order (the ring as a JSON list)."""
    values: list[Any] = [getattr(state, name) for name in _STATE_FIELDS]
    values[_RING] = json.dumps(list(state.changed_ring))
    values.extend(getattr(state.validators, name) for name in _VALIDATOR_FIELDS)
    values.extend(getattr(state, name) for name in _ADDED_FIELDS)
    return values


def state_from_values(values: Sequence[Any]) -> RevisitState:
    """The inverse of :func:`state_values` (booleans and the ring restored). ``values``
    may lack the fields added since the first layout (an older row): they are ``None``."""
    if not _VALIDATORS_END <= len(values) <= len(STATE_COLUMNS):
        raise ValueError(f"a recrawl row has {len(values)} values, not {len(STATE_COLUMNS)}")
    own = dict(zip(_STATE_FIELDS, values[:_OWN], strict=True))
    own["changed_ring"] = tuple(float(t) for t in json.loads(own["changed_ring"] or "[]"))
    raw = dict(zip(_VALIDATOR_FIELDS, values[_OWN:_VALIDATORS_END], strict=True))
    raw["etag_unreliable"] = bool(raw["etag_unreliable"])
    raw["lm_unreliable"] = bool(raw["lm_unreliable"])
    added = list(values[_VALIDATORS_END:])
    added += [None] * (len(_ADDED_FIELDS) - len(added))
    own.update(zip(_ADDED_FIELDS, added, strict=True))
    return RevisitState(validators=Validators(**raw), **own)

"""One URL's revisit history, and the one state machine that folds a visit into it.

:class:`RevisitState` is what the catalogue keeps per URL for recrawling (visits,
changes, last change, the last changed intervals, validators and their reliability,
text digest, SimHash, next due time). :func:`observe` folds one visit into it and
says how to archive it (:class:`Visit`); :func:`schedule` gives the next due time
from :mod:`courtly.frontier.recrawl`. Both are pure: ``now`` and the jitter come from
the caller's injected clock and random source.

Rules (docs/recrawl.md):

* a 304 is "unchanged" (archived as a ``server-not-modified`` revisit);
* a 2xx whose main-text digest equals the last one is "unchanged"; when its payload
  digest equals the last one too it is archived as an ``identical-payload-digest``
  revisit, else as a full response (only the template moved);
* anything else with a status is a change, a 2xx<->4xx flip included;
* a 5xx, a 429 or no response at all is transient: not counted, not scheduled off.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from courtly.fetch.validators import Validators, http_date_s, judge
from courtly.frontier.recrawl import (
    LaneSchedule,
    corrected_irregular_rate,
    first_interval,
    last_modified_rate,
    next_due_at,
    recrawl_interval,
    window_unchanged,
)

__all__ = [
    "HISTORY",
    "RING",
    "Archive",
    "RevisitState",
    "Visit",
    "estimate_rate",
    "observe",
    "schedule",
]

RING = 32
"""How many changed-interval lengths a state keeps (the estimator's recent window)."""
HISTORY = 3
"""Comparisons a state needs before its change rate is estimated and scheduled on."""


class Archive(Enum):
    """How a visit goes into the WARC."""

    RESPONSE = "response"
    NOT_MODIFIED = "server-not-modified"
    IDENTICAL_DIGEST = "identical-payload-digest"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class RevisitState:
    """Per-URL recrawl history. Times epoch seconds, durations seconds, rates per second.

    ``visits`` counts fetches with an answer that was judged; ``comparisons`` those
    that had a previous copy to compare with (``changes`` of them changed).
    ``unchanged_s`` sums the intervals after which nothing changed, ``changed_ring``
    holds the last :data:`RING` intervals after which something did. ``lm_changes`` /
    ``lm_observed_s`` feed the Last-Modified estimator. ``body_digest`` is the payload's
    ``sha1:`` label (the WARC's), ``text_digest``/``simhash`` are of the main text,
    ``content_bytes`` the decoded body's length.
    ``warc_record_id``/``warc_date`` name the last full response archived (what a
    revisit record refers to). ``lane`` is 0 (news) or 1 (ordinary);
    ``floor_streak`` counts schedules in a row that put the URL at its lane's floor (a
    record only: the news lane is joined by the rate, :mod:`courtly.frontier.news_lane`).
    ``last_fetch_at`` is the last attempt, a transient failure (no answer, 429, 5xx)
    included; ``judged_at`` the last fetch whose answer was judged (the copy the next
    answer is compared with, and what intervals are measured from; ``None`` in a state
    kept before it was: then ``last_fetch_at`` stands in, :attr:`compared_at`).
    ``duplicate_of`` names another URL with the same main text, ``near_duplicate_of``
    one whose SimHash is within a few bits (:mod:`courtly.parse.near_duplicates`).
    """

    url: str
    lane: int = 1
    visits: int = 0
    comparisons: int = 0
    changes: int = 0
    unchanged_s: float = 0.0
    changed_ring: tuple[float, ...] = ()
    lm_changes: int = 0
    lm_observed_s: float = 0.0
    validators: Validators = field(default_factory=Validators)
    status: int | None = None
    body_digest: str | None = None
    text_digest: int | None = None
    simhash: int | None = None
    content_bytes: int | None = None
    last_fetch_at: float | None = None
    last_change_at: float | None = None
    change_rate_per_s: float = 0.0
    interval_s: float | None = None
    floor_streak: int = 0
    next_due_at: float | None = None
    warc_record_id: str | None = None
    warc_date: str | None = None
    duplicate_of: str | None = None
    near_duplicate_of: str | None = None
    judged_at: float | None = None

    @property
    def compared_at(self) -> float | None:
        """When the stored copy was fetched: ``judged_at``, else ``last_fetch_at``."""
        return self.judged_at if self.judged_at is not None else self.last_fetch_at


@dataclass(frozen=True, slots=True)
class Visit:
    """What one fetch showed: the new state, whether it ``changed``, how to archive it."""

    state: RevisitState
    changed: bool
    archive: Archive


def _header(headers: tuple[tuple[str, str], ...], name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def observe(
    state: RevisitState,
    *,
    status: int | None,
    headers: tuple[tuple[str, str], ...],
    at: float,
    body_digest: str | None,
    text_digest: int | None,
    simhash: int | None,
    content_bytes: int | None = None,
) -> Visit:
    """Fold one visit at ``at`` into ``state`` (rules in the module docstring).

    ``status`` is ``None`` when no response came. For a 304 the digests are ignored
    (the stored ones stand).
    """
    if status is None or status == 429 or status >= 500:
        return Visit(replace(state, last_fetch_at=at), False, Archive.RESPONSE)
    # No copy to compare with: never fetched, or known only from a catalogue row (resume).
    # Intervals run from the copy compared with, not from a failed attempt since.
    copy_at = state.compared_at
    first = copy_at is None or state.status is None
    if status != 304 and state.text_digest is None and state.body_digest is None:
        first = True
    since = 0.0 if first or copy_at is None else max(0.0, at - copy_at)
    etag = _header(headers, "etag")
    last_modified = _header(headers, "last-modified")
    if status == 304 and not first:
        validators = replace(
            state.validators,
            etag=etag or state.validators.etag,
            last_modified=last_modified or state.validators.last_modified,
        )
        new = replace(
            state,
            visits=state.visits + 1,
            comparisons=state.comparisons + 1,
            unchanged_s=state.unchanged_s + since,
            validators=validators,
            last_fetch_at=at,
            judged_at=at,
        )
        return Visit(new, False, Archive.NOT_MODIFIED)
    same_class = state.status is not None and state.status // 100 == status // 100
    text_same = same_class and text_digest is not None and text_digest == state.text_digest
    bytes_same = same_class and body_digest is not None and body_digest == state.body_digest
    unchanged = not first and (text_same or bytes_same)
    changed = not first and not unchanged
    validators = judge(
        state.validators,
        etag=etag,
        last_modified=last_modified,
        date=_header(headers, "date"),
        bytes_same=bytes_same,
        changed=changed,
    )
    new = replace(
        state,
        visits=state.visits + 1,
        comparisons=state.comparisons + (0 if first else 1),
        validators=validators,
        status=status,
        body_digest=body_digest,
        text_digest=text_digest,
        simhash=simhash,
        content_bytes=content_bytes,
        last_fetch_at=at,
        judged_at=at,
    )
    if unchanged:
        new = replace(new, unchanged_s=state.unchanged_s + since)
        archive = Archive.IDENTICAL_DIGEST if bytes_same else Archive.RESPONSE
        return Visit(new, False, archive)
    if changed:
        new = replace(
            new,
            changes=state.changes + 1,
            changed_ring=(*state.changed_ring, since)[-RING:],
            last_change_at=at,
        )
        lm_s = http_date_s(last_modified)
        if validators.lm_trusted and lm_s is not None and copy_at is not None:
            # The change happened at Last-Modified: the time after it counts as observed.
            new = replace(
                new,
                lm_changes=state.lm_changes + 1,
                lm_observed_s=state.lm_observed_s + max(0.0, min(since, at - lm_s)),
            )
    return Visit(new, changed, Archive.RESPONSE)


def estimate_rate(state: RevisitState, lane: LaneSchedule) -> float:
    """λ̂ for ``state``: the Last-Modified estimator while that header is trusted, there
    are 3 comparisons and a change has been seen with its Last-Modified (before the first
    change it is 0, which would send the page, doubling, to the longest interval), else
    the bias-corrected irregular-interval MLE
    (:func:`~courtly.frontier.recrawl.corrected_irregular_rate`) over the recent window
    (the ring's changed intervals and their share of the unchanged time and visits),
    its pseudo-data half an unchanged and half a changed interval of the page's mean
    interval, bisected between a thousandth of a change per longest interval and ten
    per shortest."""
    if state.validators.lm_trusted and state.comparisons >= HISTORY:
        observed = state.lm_observed_s + state.unchanged_s
        if 0 < state.lm_changes == state.changes and observed > 0:
            return last_modified_rate(state.comparisons, state.changes, observed)
    kept = len(state.changed_ring)
    return corrected_irregular_rate(
        state.changed_ring,
        window_unchanged(state.unchanged_s, state.changes, kept),
        window_unchanged(float(state.comparisons - state.changes), state.changes, kept),
        default_s=lane.default_s,
        low=0.001 / lane.max_s,
        high=10.0 / lane.min_s,
    )


def schedule(
    state: RevisitState,
    *,
    now: float,
    mu: float,
    lane: LaneSchedule,
    jitter: float = 1.0,
    date_s: float | None = None,
) -> RevisitState:
    """``state`` with its estimated rate, interval and next due time set: the interval
    counted from the copy compared with (:attr:`RevisitState.compared_at`, not a failed
    attempt since), never before ``now`` plus the lane's floor.

    Until :data:`HISTORY` comparisons the lane's first interval is used
    (10% of Date − Last-Modified when known, else the lane's default).
    """
    last = state.compared_at if state.compared_at is not None else now
    if state.comparisons < HISTORY:
        lm_s = http_date_s(state.validators.last_modified) if state.validators.lm_trusted else None
        interval = first_interval(lane, date_s=date_s, last_modified_s=lm_s)
        rate = 0.0
    else:
        rate = estimate_rate(state, lane)
        interval = recrawl_interval(rate, lane.weight, mu, lane, previous_s=state.interval_s)
    due = next_due_at(now, last, interval, lane, jitter=jitter)
    streak = state.floor_streak + 1 if interval <= lane.min_s else 0
    return replace(
        state, change_rate_per_s=rate, interval_s=interval, floor_streak=streak, next_due_at=due
    )

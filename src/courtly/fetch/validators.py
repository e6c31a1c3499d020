"""HTTP validators for conditional GET, and how far each server's can be trusted.

Contract (RFC 9110 §8.8, §13.1; RFC 9111 §4.2.2):

* :class:`Validators` keeps a URL's ``ETag`` verbatim (with any ``W/``) and its
  ``Last-Modified`` as received; :func:`conditional_headers` sends them back as
  ``If-None-Match`` / ``If-Modified-Since``, leaving out any marked unreliable, and
  sends nothing on every ``unconditional_every``-th visit (a server that answers 304
  for changed content is caught there).
* :func:`merge_not_modified` folds the headers a 304 repeats (Cache-Control,
  Content-Location, Date, ETag, Expires, Vary, Last-Modified) into the stored ones.
* :func:`judge` updates the reliability after a full response, knowing whether the
  content changed (judged on the main-text digest, not on the validators):

  - a new ETag while the bytes held: a strike; ``ETAG_STRIKES`` strikes (a tag per
    response or per backend) make the ETag unreliable;
  - Last-Modified later than Date, or moved while the main text held (Last-Modified
    always "now"): a strike; ``LM_STRIKES`` make it unreliable;
  - the same ETag (or Last-Modified) on changed content: the server would have
    answered 304 for it, so that validator is unreliable at once.

  An unreliable validator is never sent again (and Last-Modified no longer feeds the
  change-rate estimator); the state is kept per URL and persists with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime

__all__ = [
    "ETAG_STRIKES",
    "LM_STRIKES",
    "NOT_MODIFIED_REPEATED",
    "UNCONDITIONAL_EVERY",
    "Validators",
    "conditional_headers",
    "http_date_s",
    "judge",
    "merge_not_modified",
]

ETAG_STRIKES = 2
LM_STRIKES = 2
UNCONDITIONAL_EVERY = 16
"""Every 16th visit goes out without validators (the lying-304 check): at most 1 in 16
revisits of an unchanged page misses its 304."""
NOT_MODIFIED_REPEATED = frozenset(
    {"cache-control", "content-location", "date", "etag", "expires", "vary", "last-modified"}
)
_SLACK_S = 2.0


def http_date_s(value: str | None) -> float | None:
    """An HTTP date as epoch seconds, or ``None`` when absent or unparseable."""
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


@dataclass(frozen=True, slots=True)
class Validators:
    """One URL's validators and their reliability (``*_strikes`` count suspicious answers)."""

    etag: str | None = None
    last_modified: str | None = None
    etag_unreliable: bool = False
    lm_unreliable: bool = False
    etag_strikes: int = 0
    lm_strikes: int = 0

    @property
    def lm_trusted(self) -> bool:
        """Last-Modified present and not caught lying: it may feed the estimator."""
        return self.last_modified is not None and not self.lm_unreliable


def conditional_headers(
    validators: Validators, visit_number: int, *, unconditional_every: int = UNCONDITIONAL_EVERY
) -> dict[str, str]:
    """The request headers for visit ``visit_number`` (1 = the first fetch).

    Empty on the first visit, on every ``unconditional_every``-th one and for
    validators marked unreliable. A server must ignore If-Modified-Since when
    If-None-Match is present, so both go out together.
    """
    if visit_number <= 1 or (unconditional_every > 0 and visit_number % unconditional_every == 0):
        return {}
    headers: dict[str, str] = {}
    if validators.etag is not None and not validators.etag_unreliable:
        headers["If-None-Match"] = validators.etag
    if validators.last_modified is not None and not validators.lm_unreliable:
        headers["If-Modified-Since"] = validators.last_modified
    return headers


def merge_not_modified(
    stored: Iterable[tuple[str, str]], not_modified: Iterable[tuple[str, str]]
) -> tuple[tuple[str, str], ...]:
    """The stored 200's headers with those a 304 repeats (:data:`NOT_MODIFIED_REPEATED`)
    replaced by the 304's values; other stored headers kept, in order."""
    fresh: dict[str, list[tuple[str, str]]] = {}
    for name, value in not_modified:
        if name.lower() in NOT_MODIFIED_REPEATED:
            fresh.setdefault(name.lower(), []).append((name, value))
    merged: list[tuple[str, str]] = []
    for name, value in stored:
        key = name.lower()
        if key in fresh:
            merged.extend(fresh.pop(key))
        elif key not in NOT_MODIFIED_REPEATED or key not in _names(not_modified):
            merged.append((name, value))
    for pairs in fresh.values():
        merged.extend(pairs)
    return tuple(merged)


def _names(headers: Iterable[tuple[str, str]]) -> set[str]:
    return {name.lower() for name, _ in headers}


def judge(
    validators: Validators,
    *,
    etag: str | None,
    last_modified: str | None,
    date: str | None,
    bytes_same: bool,
    changed: bool,
) -> Validators:
    """The reliability after a full (200) response: see the module docstring.

    ``bytes_same``: the payload digest equals the stored one; ``changed``: the main
    text changed. The response's own ``etag``/``last_modified`` become the stored ones.
    """
    v = validators
    etag_strikes, lm_strikes = v.etag_strikes, v.lm_strikes
    etag_unreliable, lm_unreliable = v.etag_unreliable, v.lm_unreliable
    if v.etag is not None and etag is not None:
        if etag != v.etag and bytes_same:
            etag_strikes += 1
        if etag == v.etag and changed:
            etag_unreliable = True
    if last_modified is not None:
        lm_s, date_s = http_date_s(last_modified), http_date_s(date)
        later_than_date = lm_s is not None and date_s is not None and lm_s > date_s + _SLACK_S
        moved_alone = v.last_modified not in (None, last_modified) and not changed
        if later_than_date or moved_alone:
            lm_strikes += 1
        if v.last_modified is not None and last_modified == v.last_modified and changed:
            lm_unreliable = True
    return replace(
        v,
        etag=etag,
        last_modified=last_modified,
        etag_strikes=etag_strikes,
        lm_strikes=lm_strikes,
        etag_unreliable=etag_unreliable or etag_strikes >= ETAG_STRIKES,
        lm_unreliable=lm_unreliable or lm_strikes >= LM_STRIKES,
    )

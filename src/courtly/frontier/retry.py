"""Retrying a page URL: which failed attempts earn another one, and how many.

A fetch that got no response (connection refused or reset, timeout, a keep-alive
connection the server had closed), a 5xx or a 429 is *retryable*: the URL is
released back to the head of its host's back queue with its attempt count one
higher (:meth:`~courtly.frontier.Frontier.retry`), and the host waits out the
back-off :func:`~courtly.frontier.politeness.apply_outcome` gives it (a 429/503's
``Retry-After``, else the error back-off: 5, 10, 20 s). There is no immediate retry
in any layer: each attempt is a lease of its own, after the host's gap.

After ``PolitenessConfig.max_attempts`` attempts (default 3) the last failure is
final: the URL is completed and catalogued with its ``fail_reason`` (a response
with its status, as any response). Nothing else is retried: a 4xx other than 429
is an answer, and a request never sent (robots.txt, address guard, URL too long)
is not an attempt. Host-level limits still apply beside the per-URL count: a host
whose failures keep coming is parked, then retired (its URLs dropped with
``host_retired:<reason>``).

The count lives with the URL in every store (memory, SQLite, Redis); an attempt
cut short by a crash or an expired lease is not counted (it was never judged).
"""

from __future__ import annotations

from typing import Final

from courtly.frontier.records import OutcomeKind

__all__ = ["RETRYABLE", "should_retry"]

RETRYABLE: Final = frozenset(
    {OutcomeKind.NETWORK_ERROR, OutcomeKind.SERVER_ERROR, OutcomeKind.THROTTLED}
)
"""Outcomes of a page fetch that may go better on a later attempt."""


def should_retry(kind: OutcomeKind, attempts_before: int, max_attempts: int) -> bool:
    """True if a fetch that ended with ``kind`` after ``attempts_before`` failed attempts
    should be tried again (this attempt is number ``attempts_before + 1``)."""
    return kind in RETRYABLE and attempts_before + 1 < max_attempts

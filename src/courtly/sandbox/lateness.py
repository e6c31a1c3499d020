"""How late a polite crawler starts each request, read from the server's request log.

The politeness rule fixes the *earliest* start of a host's next request: the end
of its previous response plus the required gap, ``max(min delay, Crawl-delay,
Retry-After after a 429/503, delay factor × the previous response's duration)``.
A crawler that keeps every fetcher busy whenever a host is due starts each
request at that moment; whatever it starts later is *lateness*, and lateness is
what separates a crawl from the politeness bound (``benchmarks/compare_scrapy.py``).

Both ends come from the server's log, so the figure is the same for every
crawler. A negative lateness is a request that started early: the audit
(:func:`courtly.sandbox.audit`) reports those as gap violations; this module
only measures.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from courtly.sandbox.request_log import RequestRecord
from courtly.sandbox.truth import SandboxTruth

__all__ = ["Lateness", "lateness", "lateness_summary"]


@dataclass(frozen=True, slots=True)
class Lateness:
    """One request after the first to its host: how long after its earliest allowed start
    it began. Seconds."""

    record: RequestRecord
    previous: RequestRecord
    """The host's request before it (by start)."""
    required_s: float
    """The gap the rule required after ``previous`` ended."""
    late_s: float
    """``record.start_at − (previous.end_at + required_s)``."""


def lateness(
    records: Iterable[RequestRecord],
    *,
    truth: SandboxTruth,
    min_delay_s: float,
    delay_factor: float = 0.0,
    user_agent_token: str = "courtly",
) -> list[Lateness]:
    """Every request's lateness against the host's previous one, in log order per host.

    ``min_delay_s`` and ``delay_factor`` are the crawler's; the Crawl-delay is the
    one the host's robots.txt gives ``user_agent_token``; a 429 or 503 with a
    ``Retry-After`` requires that long a gap after it.
    """
    by_host: dict[str, list[RequestRecord]] = defaultdict(list)
    for rec in records:
        by_host[rec.host].append(rec)
    out: list[Lateness] = []
    for host, recs in by_host.items():
        recs.sort(key=lambda r: (r.start_at, r.end_at))
        base_s = max(min_delay_s, truth.crawl_delay_s(host, user_agent_token))
        for prev, rec in pairwise(recs):
            required = max(base_s, delay_factor * (prev.end_at - prev.start_at))
            if prev.status in (429, 503) and prev.retry_after_s is not None:
                required = max(required, prev.retry_after_s)
            late = rec.start_at - (prev.end_at + required)
            out.append(Lateness(rec, prev, required, late))
    return out


def lateness_summary(rows: Sequence[Lateness]) -> dict[str, float | int | None]:
    """``n`` and the ``p50``, ``p90``, ``p95``, ``p99`` and ``mean`` of ``late_s``, in ms."""
    values = sorted(row.late_s * 1000.0 for row in rows)
    if not values:
        return {"n": 0, "p50": None, "p90": None, "p95": None, "p99": None, "mean": None}

    def at(share: float) -> float:
        return round(values[min(len(values) - 1, int(share * len(values)))], 1)

    return {
        "n": len(values),
        "p50": at(0.5),
        "p90": at(0.9),
        "p95": at(0.95),
        "p99": at(0.99),
        "mean": round(sum(values) / len(values), 1),
    }

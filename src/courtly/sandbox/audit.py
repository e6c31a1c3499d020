"""The auditor: judge a crawler by the sandbox's request log.

:func:`audit` checks the log against the politeness rules and the ground
truth and returns an :class:`AuditReport`. Server-side intervals lie inside
the crawler's own (the server sees a request after it was sent and finishes
before the client has read everything), so the overlap and gap checks are
lower bounds: a violation found here is a real one.

Checks (each counted in ``violations``):

``host_overlap``        a request to a host started while another to it was in flight
``ip_over_cap``         a request made an address exceed ``per_ip_cap`` concurrent requests
``gap``                 a request started before ``end + required`` of an earlier one to
                        the same host, ``required = max(min_delay_s, Crawl-delay for the
                        token, Retry-After if that answer was a 429/503 with one)``
                        (``retry_after_violations`` counts the Retry-After cases among them)
``disallowed``          a URL forbidden by robots.txt for the token was fetched
``robots_unavailable``  a non-robots URL was fetched from a host whose robots.txt
                        answered 5xx or hung (complete disallow, RFC 9309)
``duplicate``           the same canonical URL was fetched again after a final answer
                        (2xx/3xx/4xx other than 408/429, not cut off; robots.txt
                        refetches excluded)

Requests to the dead host never reach the server and cannot be audited here.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from courtly.sandbox.request_log import RequestRecord
from courtly.sandbox.spec import SandboxSpec
from courtly.sandbox.truth import SandboxTruth, Scope
from courtly.sandbox.urls import host_url, split_url
from courtly.sandbox.world import SandboxWorld

__all__ = ["AuditFinding", "AuditReport", "audit"]

_NOT_FINAL = frozenset({0, 408, 429})
_KINDS = (
    "host_overlap",
    "ip_over_cap",
    "gap",
    "disallowed",
    "robots_unavailable",
    "duplicate",
)


@dataclass(frozen=True, slots=True)
class AuditFinding:
    """One violation: its kind, where and when (``at`` = start of the offending request)."""

    kind: str
    host: str
    ip: str
    path: str
    at: float
    detail: str


@dataclass(frozen=True, slots=True)
class AuditReport:
    """Counts per check, a few examples of each, and coverage of the expected pages."""

    requests: int
    hosts: int
    host_overlaps: int
    ip_over_cap: int
    gap_violations: int
    retry_after_violations: int
    disallowed_fetches: int
    robots_unavailable_fetches: int
    duplicate_fetches: int
    violations: int
    max_in_flight_per_host: int
    max_in_flight_per_ip: int
    nofollow_fetches: int
    trap_fetches: int
    unknown_host_requests: int
    expected_pages: int
    expected_fetched: int
    examples: tuple[AuditFinding, ...] = field(default=())

    @property
    def clean(self) -> bool:
        """No violation of any kind."""
        return self.violations == 0

    @property
    def coverage(self) -> float:
        """Share of the expected pages fetched with 200 (1.0 when nothing was expected)."""
        return self.expected_fetched / self.expected_pages if self.expected_pages else 1.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field plus ``coverage`` and ``clean``."""
        data = asdict(self)
        data["coverage"] = round(self.coverage, 4)
        data["clean"] = self.clean
        return data

    def summary(self) -> str:
        """A few human-readable lines."""
        lines = [
            f"requests {self.requests} on {self.hosts} hosts; violations {self.violations}",
            f"  host overlaps {self.host_overlaps} (max in flight per host "
            f"{self.max_in_flight_per_host}); over per-IP cap {self.ip_over_cap} "
            f"(max per IP {self.max_in_flight_per_ip})",
            f"  gap {self.gap_violations} (of which Retry-After {self.retry_after_violations}); "
            f"disallowed {self.disallowed_fetches}; robots unavailable "
            f"{self.robots_unavailable_fetches}; duplicates {self.duplicate_fetches}",
            f"  coverage {self.expected_fetched}/{self.expected_pages} = {self.coverage:.1%}; "
            f"nofollow-only fetched {self.nofollow_fetches}; trap pages {self.trap_fetches}; "
            f"unknown hosts {self.unknown_host_requests}",
        ]
        lines.extend(
            f"  - {f.kind} {f.host}{f.path} @ {f.at:.3f} ({f.ip}): {f.detail}"
            for f in self.examples
        )
        return "\n".join(lines)


def _truth_of(
    spec_or_truth: SandboxSpec | SandboxWorld | SandboxTruth, records: list[RequestRecord]
) -> SandboxTruth:
    if isinstance(spec_or_truth, SandboxTruth):
        return spec_or_truth
    if isinstance(spec_or_truth, SandboxWorld):
        return SandboxTruth(spec_or_truth)
    port = spec_or_truth.port or (records[0].port if records else 80)
    return SandboxTruth(SandboxWorld(spec_or_truth, port))


class _Findings:
    def __init__(self, max_examples: int) -> None:
        self.counts: dict[str, int] = dict.fromkeys(_KINDS, 0)
        self.examples: dict[str, list[AuditFinding]] = defaultdict(list)
        self.max_examples = max_examples

    def add(self, kind: str, record: RequestRecord, detail: str) -> None:
        self.counts[kind] += 1
        if len(self.examples[kind]) < self.max_examples:
            finding = AuditFinding(
                kind, record.host, record.ip, record.path, record.start_at, detail
            )
            self.examples[kind].append(finding)


def _max_concurrency(
    records: list[RequestRecord], cap: int | None, tolerance_s: float
) -> tuple[int, list[tuple[RequestRecord, int]]]:
    """Peak concurrency of ``records``, and the starts that pushed it above ``cap``.

    An interval is ``[start_at, end_at - tolerance_s)``: touching intervals do
    not overlap.
    """
    events: list[tuple[float, int, int]] = []
    for i, rec in enumerate(records):
        events.append((rec.start_at, 1, i))
        events.append((max(rec.start_at, rec.end_at - tolerance_s), 0, i))
    events.sort()
    level = peak = 0
    over: list[tuple[RequestRecord, int]] = []
    for _, kind, i in events:
        if kind == 0:
            level -= 1
            continue
        level += 1
        peak = max(peak, level)
        if cap is not None and level > cap:
            over.append((records[i], level))
    return peak, over


def audit(
    log_records: Iterable[RequestRecord],
    *,
    spec_or_truth: SandboxSpec | SandboxWorld | SandboxTruth,
    min_delay_s: float,
    per_ip_cap: int,
    user_agent_token: str = "courtly",
    tolerance_s: float = 0.005,
    only_user_agent: str | None = None,
    max_examples: int = 5,
    scope: Scope = "domain",
    follow_sitemaps: bool = False,
    seeds: Iterable[str] | None = None,
) -> AuditReport:
    """Check ``log_records`` (a server-side request log) against the politeness rules.

    ``min_delay_s`` is the crawler's minimum gap per host (seconds),
    ``per_ip_cap`` its maximum of concurrent requests per address and
    ``user_agent_token`` the robots product token it obeys. ``tolerance_s``
    forgives clock granularity in the overlap and gap checks. Only records
    whose User-Agent contains ``only_user_agent`` are judged, if given.
    Coverage is measured against ``truth.expected_pages(user_agent_token,
    scope=scope, seeds=seeds, follow_sitemaps=follow_sitemaps)``.
    """
    records = sorted(
        (
            r
            for r in log_records
            if only_user_agent is None or only_user_agent.lower() in r.ua.lower()
        ),
        key=lambda r: (r.start_at, r.end_at),
    )
    truth = _truth_of(spec_or_truth, records)
    world = truth.world
    token = user_agent_token
    findings = _Findings(max_examples)

    by_host: dict[str, list[RequestRecord]] = defaultdict(list)
    by_ip: dict[str, list[RequestRecord]] = defaultdict(list)
    unknown = 0
    for rec in records:
        if world.profile(rec.host) is None:
            unknown += 1
        by_host[rec.host].append(rec)
        by_ip[rec.ip].append(rec)

    # One request in flight per host, and the gap after each.
    max_host = 0
    retry_after_violations = 0
    for host, recs in by_host.items():
        peak, _ = _max_concurrency(recs, None, tolerance_s)
        max_host = max(max_host, peak)
        base_s = max(min_delay_s, truth.crawl_delay_s(host, token))
        latest_end = float("-inf")
        latest_rec: RequestRecord | None = None
        pending: list[tuple[float, int, float, float]] = []  # (end, index, required, retry)
        bound = float("-inf")
        bound_from: tuple[RequestRecord, float, float] | None = None
        for i, rec in enumerate(recs):
            if latest_rec is not None and rec.start_at < latest_end - tolerance_s:
                findings.add(
                    "host_overlap",
                    rec,
                    f"started {latest_end - rec.start_at:.3f}s before {latest_rec.path} ended",
                )
            while pending and pending[0][0] <= rec.start_at + tolerance_s:
                end, j, required, retry = heapq.heappop(pending)
                if end + required > bound:
                    bound = end + required
                    bound_from = (recs[j], required, retry)
            if bound_from is not None and rec.start_at < bound - tolerance_s:
                prev, required, retry = bound_from
                gap = rec.start_at - prev.end_at
                is_retry = retry > 0 and rec.start_at < prev.end_at + retry - tolerance_s
                retry_after_violations += is_retry
                reason = "Retry-After" if is_retry and retry >= base_s else "delay"
                findings.add(
                    "gap",
                    rec,
                    f"gap {gap:.3f}s after {prev.path} ({prev.status}) < {required:.3f}s "
                    f"({reason})",
                )
            retry = (
                rec.retry_after_s
                if rec.status in (429, 503) and rec.retry_after_s is not None
                else 0.0
            )
            heapq.heappush(pending, (rec.end_at, i, max(base_s, retry), retry))
            if rec.end_at > latest_end:
                latest_end, latest_rec = rec.end_at, rec

    # Per-address caps.
    max_ip = 0
    for recs in by_ip.values():
        peak, over = _max_concurrency(recs, per_ip_cap, tolerance_s)
        max_ip = max(max_ip, peak)
        for rec, level in over:
            findings.add("ip_over_cap", rec, f"{level} requests in flight > cap {per_ip_cap}")

    # Robots, duplicates, coverage.
    final_seen: set[str] = set()
    fetched_ok: set[str] = set()
    nofollow = traps = 0
    for rec in records:
        profile = world.profile(rec.host)
        if profile is None:
            continue
        url = world.canonical(host_url(rec.host, rec.port, rec.path or "/"))
        _, _, path = split_url(url)
        robots = truth.is_robots_path(rec.host, path)
        if not robots:
            if truth.robots_unavailable(rec.host):
                findings.add("robots_unavailable", rec, "robots.txt is unreachable there")
            elif truth.disallowed(url, token):
                findings.add("disallowed", rec, f"robots.txt disallows it for {token!r}")
            if url in final_seen:
                findings.add("duplicate", rec, "already fetched with a final answer")
            if rec.status not in _NOT_FINAL and rec.status < 500 and not rec.cut:
                final_seen.add(url)
        if rec.status == 200:
            fetched_ok.add(url)
        if truth.nofollow_only(url):
            nofollow += 1
        if truth.is_trap(url):
            traps += 1

    expected = truth.expected_pages(
        token, scope=scope, seeds=seeds, follow_sitemaps=follow_sitemaps
    )
    counts = findings.counts
    examples = tuple(f for kind in _KINDS for f in findings.examples[kind])
    return AuditReport(
        requests=len(records),
        hosts=len(by_host),
        host_overlaps=counts["host_overlap"],
        ip_over_cap=counts["ip_over_cap"],
        gap_violations=counts["gap"],
        retry_after_violations=retry_after_violations,
        disallowed_fetches=counts["disallowed"],
        robots_unavailable_fetches=counts["robots_unavailable"],
        duplicate_fetches=counts["duplicate"],
        violations=sum(counts.values()),
        max_in_flight_per_host=max_host,
        max_in_flight_per_ip=max_ip,
        nofollow_fetches=nofollow,
        trap_fetches=traps,
        unknown_host_requests=unknown,
        expected_pages=len(expected),
        expected_fetched=len(expected & fetched_ok),
        examples=examples,
    )

"""The partitions summed into one crawl: counts, snapshots (progress, the final summary)
and the stores' ``last_run`` records (``courtly status``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from courtly.crawl import CrawlSnapshot
from courtly.frontier.records import FrontierCounts
from courtly.observe.observation import merge_observed
from courtly.stop import ending

__all__ = ["merge_counts", "merge_last_runs", "merge_snapshots"]


def merge_counts(counts: Sequence[FrontierCounts]) -> FrontierCounts:
    """Field by field sums (the frontiers are disjoint)."""
    return FrontierCounts(
        *(sum(getattr(c, spec.name) for c in counts) for spec in fields(FrontierCounts))
    )


def _sum_dicts(items: Iterable[dict[Any, int]]) -> dict[Any, int]:
    total: Counter[Any] = Counter()
    for item in items:
        total.update(item)
    return dict(total)


def merge_snapshots(snapshots: Sequence[CrawlSnapshot], state_dir: Path) -> CrawlSnapshot:
    """One snapshot for the whole crawl: sums, the longest elapsed time, every WARC file."""
    elapsed_s = max((s.elapsed_s for s in snapshots), default=1e-9)
    pages = sum(s.pages for s in snapshots)
    reasons = [s.stop_reason for s in snapshots if s.stop_reason is not None]
    counts = merge_counts([s.counts for s in snapshots])
    return CrawlSnapshot(
        elapsed_s=elapsed_s,
        pages=pages,
        pages_per_s=pages / max(elapsed_s, 1e-9),
        robots_fetches=sum(s.robots_fetches for s in snapshots),
        bytes_received=sum(s.bytes_received for s in snapshots),
        redirects=sum(s.redirects for s in snapshots),
        in_flight=sum(s.in_flight for s in snapshots),
        counts=counts,
        errors=_sum_dicts(s.errors for s in snapshots),
        error_examples={k: v for s in reversed(snapshots) for k, v in s.error_examples.items()},
        skipped=_sum_dicts(s.skipped for s in snapshots),
        statuses=_sum_dicts(s.statuses for s in snapshots),
        warc_files=tuple(f for s in snapshots for f in s.warc_files),
        state_dir=str(state_dir),
        finished=bool(snapshots) and all(s.finished for s in snapshots),
        stop_reason=reasons[0] if reasons else None,
        stop_detail=next((s.stop_detail for s in snapshots if s.stop_detail), None),
        hosts_retired=_sum_dicts(s.hosts_retired for s in snapshots),
        fetchers=sum(s.fetchers for s in snapshots),
        observed=merge_observed([s.observed for s in snapshots], counts),
        resumed=any(s.resumed for s in snapshots),
    )


def merge_last_runs(runs: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The ``last_run`` records of the partitions' stores, summed into one; a crawl that
    ran out of URLs is named from the sums, as :class:`PartitionedCrawl` names it."""
    present = [run for run in runs if run]
    if not present:
        return None
    reasons = [run.get("stop_reason") for run in present if run.get("stop_reason")]
    pages = sum(run.get("pages", 0) for run in present)
    retired = _sum_dicts(run.get("hosts_retired", {}) for run in present)
    reason = reasons[0] if reasons else None
    detail = next((run["stop_detail"] for run in present if run.get("stop_detail")), None)
    if reason in ("done", "nothing_fetchable"):
        reason, detail = ending(pages, retired)
    return {
        "updated_at": max(run.get("updated_at", 0.0) for run in present),
        "pages": pages,
        "robots_fetches": sum(run.get("robots_fetches", 0) for run in present),
        "bytes_received": sum(run.get("bytes_received", 0) for run in present),
        "errors": _sum_dicts(run.get("errors", {}) for run in present),
        "error_examples": {
            k: v for run in reversed(present) for k, v in run.get("error_examples", {}).items()
        },
        "skipped": _sum_dicts(run.get("skipped", {}) for run in present),
        "finished": len(present) == len(runs) and all(run.get("finished") for run in present),
        "stop_reason": reason,
        "stop_detail": detail,
        "hosts_retired": retired,
        "fetchers": sum(run.get("fetchers", 0) for run in present),
        "partitions": len(runs),
    }


# -- the parent: N child processes ------------------------------------------------------------

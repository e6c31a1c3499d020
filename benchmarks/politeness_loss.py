"""Where a polite crawl's requests went short of the politeness bound, host by host.

Reads one run of ``compare_scrapy.py`` (its ``web/`` directory: the spec, the seeds and
the server's request log) and accounts, per host, for the time between the window's
start and its end in which the host was not in a request or in the gap the politeness
rule required after one (the rule of the audit and of the bound: ``max(min delay,
Crawl-delay, Retry-After after a 429/503, delay factor × the previous response's
duration)``, from the *end* of that response, both ends as the server logged them):

* ``start``: the window's start → the host's first request (its robots.txt);
* ``late_first_page``: the first page after robots.txt, started later than allowed;
* ``late`` by the term that set the required gap (``min_delay``, ``crawl_delay``,
  ``retry_after``, ``fetch_time``) and by size (``late_ge_800ms`` is mostly a back-off
  beyond the rule: a parked host, a latency-doubling pause);
* ``end``: the host's earliest next start after its last request → the window's end,
  where the bound still counts a request (hosts with pages left only).

Each host's lost time over its cycle in the bound (``fetch + gap``) estimates the
requests it lost; the sum is set against the bound's requests less those made. What is
left over (``lost_to_phase_at_end``) is the phase of each host's schedule at the
window's end: the bound starts every host at the window's start, so with a window a
little over a whole number of cycles it fits one more request into each host's last
cycle, which a host running any time behind (its robots.txt a few hundred milliseconds
in, its requests a few milliseconds late each) misses whole; with a window a little
under, it costs nothing. It is part of the start and the lateness, counted whole. Hosts
are grouped by kind: ``plain``, ``crawl_delay``, ``slow``, ``flaky`` (429/503 windows),
``robots_unavailable`` and ``dead`` (robots.txt only, in the bound).

    python benchmarks/politeness_loss.py benchmarks/out/compare/politeness-courtly
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import compare_scrapy as cs  # noqa: E402
from courtly.sandbox import load_log  # noqa: E402
from courtly.sandbox.request_log import RequestRecord  # noqa: E402
from courtly.sandbox.spec import SandboxSpec  # noqa: E402
from courtly.sandbox.urls import split_url  # noqa: E402
from courtly.sandbox.world import SandboxWorld  # noqa: E402

PARTS = (
    "start",
    "late_first_page",
    "late_min_delay",
    "late_crawl_delay",
    "late_retry_after",
    "late_fetch_time",
    "end",
)


def account(run_dir: Path, scenario_name: str = "politeness") -> dict[str, Any]:
    """The accounting of the run in ``run_dir`` (see the module doc), as JSON values."""
    web = run_dir / "web"
    spec = SandboxSpec.from_json((web / "spec.json").read_text())
    world = SandboxWorld(spec, spec.port)
    truth = cs.CachedTruth(world)
    scenario = cs.scenarios(False)[scenario_name]
    seeds = (web / "seeds.txt").read_text().split()
    records = [r for r in load_log(web / "requests.jsonl") if r.ua == cs.USER_AGENT]
    w0 = min(r.start_at for r in records)
    w1 = max(r.end_at for r in records)
    window_s = w1 - w0
    expected = truth.expected_pages(cs.TOKEN, scope=scenario.scope, seeds=seeds)
    pages_on: dict[str, int] = defaultdict(int)
    for url in expected:
        pages_on[split_url(url)[0]] += 1
    by_host: dict[str, list[RequestRecord]] = defaultdict(list)
    for rec in records:
        by_host[rec.host].append(rec)

    # the bound, host by host (as compare_scrapy.bound, which sums it)
    kind_of: dict[str, str] = {}
    cycle_of: dict[str, float] = {}
    bound_of: dict[str, float] = {}
    per_ip: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    for profile in world.hosts:
        name = profile.name
        if profile.dead or truth.robots_unavailable(name):
            kind_of[name] = "dead" if profile.dead else "robots_unavailable"
            per_ip[profile.ip].append((name, 1.0, 0.0))
            continue
        fetch_s = world.latency_s(profile)
        crawl_delay = truth.crawl_delay_s(name, cs.TOKEN)
        gap_s = max(scenario.min_delay_s, crawl_delay, cs.DELAY_FACTOR * fetch_s)
        kind_of[name] = (
            "flaky"
            if profile.flaky
            else "slow"
            if fetch_s > 0
            else "crawl_delay"
            if crawl_delay > scenario.min_delay_s
            else "plain"
        )
        cycle_of[name] = fetch_s + gap_s
        requests = len(
            cs._host_starts(
                window_s,
                fetch_s,
                gap_s,
                float(spec.retry_after_s) if profile.flaky else 0.0,
                spec.flaky_every if profile.flaky else 0,
                spec.flaky_window,
                pages_on[name],
            )
        )
        per_ip[profile.ip].append((name, float(requests), fetch_s))
    for hosts in per_ip.values():
        busy_s = sum(n * fetch_s for _, n, fetch_s in hosts)
        scale = min(1.0, scenario.per_ip * window_s / busy_s) if busy_s > 0 else 1.0
        for name, n, _ in hosts:
            bound_of[name] = n * scale

    kinds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    sizes: dict[str, list[float]] = defaultdict(list)
    for name, kind in kind_of.items():
        row = kinds[kind]
        recs = sorted(by_host.get(name, []), key=lambda r: (r.start_at, r.end_at))
        row["hosts"] += 1
        row["bound_requests"] += bound_of[name]
        row["requests"] += len(recs)
        if kind in ("dead", "robots_unavailable") or not recs:
            continue
        cycle = cycle_of[name]
        lost: dict[str, float] = defaultdict(float)
        lost["start"] = recs[0].start_at - w0
        base_s = max(scenario.min_delay_s, truth.crawl_delay_s(name, cs.TOKEN))
        pages = 0
        for prev, rec in pairwise(recs):
            required, term = _required(prev, base_s, scenario.min_delay_s)
            late = rec.start_at - (prev.end_at + required)
            first_page = truth.is_robots_path(name, prev.path) and not truth.is_robots_path(
                name, rec.path
            )
            lost["late_first_page" if first_page else f"late_{term}"] += late
            if not first_page:
                sizes[_size(late)].append(late)
            pages += not truth.is_robots_path(name, rec.path)
        last = recs[-1]
        required, _ = _required(last, base_s, scenario.min_delay_s)
        if pages < pages_on[name]:
            lost["end"] = max(0.0, w1 - (last.end_at + required))
        for part, seconds in lost.items():
            row[part + "_s"] += seconds
            row["lost_requests"] += seconds / cycle
    out_kinds: dict[str, dict[str, float]] = {}
    totals: dict[str, float] = defaultdict(float)
    for kind, row in sorted(kinds.items()):
        for key, value in row.items():
            totals[key] += value
        out_kinds[kind] = _rounded(row)
    bound = totals["bound_requests"]
    return {
        "window_s": round(window_s, 3),
        "requests": int(totals["requests"]),
        "bound_requests": round(bound, 1),
        "requests_efficiency": round(totals["requests"] / bound, 4),
        "short_of_bound": round(bound - totals["requests"], 1),
        "lost_requests_accounted": round(totals["lost_requests"], 1),
        "lost_to_phase_at_end": round(bound - totals["requests"] - totals["lost_requests"], 1),
        "lost_share_of_bound": {
            part: round(_part_requests(kinds, cycle_of, kind_of, part) / bound, 4) for part in PARTS
        },
        "late_by_size": {
            size: {"n": len(xs), "sum_s": round(sum(xs), 2)} for size, xs in sorted(sizes.items())
        },
        "kinds": out_kinds,
    }


def _required(prev: RequestRecord, base_s: float, min_delay_s: float) -> tuple[float, str]:
    """The gap the rule required after ``prev``, and the term that set it."""
    fetch = cs.DELAY_FACTOR * (prev.end_at - prev.start_at)
    required, term = base_s, "crawl_delay" if base_s > min_delay_s else "min_delay"
    if fetch > required:
        required, term = fetch, "fetch_time"
    retry_s = prev.retry_after_s if prev.status in (429, 503) else None
    if retry_s is not None and retry_s > required:
        required, term = retry_s, "retry_after"
    return required, term


def _size(late_s: float) -> str:
    for limit, name in ((0.01, "lt_10ms"), (0.1, "lt_100ms"), (0.8, "lt_800ms")):
        if late_s < limit:
            return name
    return "ge_800ms"


def _part_requests(
    kinds: dict[str, dict[str, float]],
    cycle_of: dict[str, float],
    kind_of: dict[str, str],
    part: str,
) -> float:
    """The requests ``part`` lost, summed over the kinds (host-seconds over a mean cycle)."""
    total = 0.0
    for kind, row in kinds.items():
        cycles = [cycle_of[h] for h, k in kind_of.items() if k == kind and h in cycle_of]
        if cycles and row.get(part + "_s"):
            total += row[part + "_s"] / (sum(cycles) / len(cycles))
    return total


def _rounded(row: dict[str, float]) -> dict[str, float]:
    return {key: round(value, 3) for key, value in row.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("run_dir", type=Path, nargs="+", help="compare_scrapy's politeness run")
    args = parser.parse_args(argv)
    for run_dir in args.run_dir:
        print(json.dumps({"run": str(run_dir)} | account(run_dir), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

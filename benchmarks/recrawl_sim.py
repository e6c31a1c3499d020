"""Recrawl policies on a simulated web: freshness, age and no-change fetches (notes §7).

N pages with change rates log-uniform on [1/60, 24] per day, Poisson change times drawn
in advance (fixed seed), a budget of B fetches a day, evenly spaced visits per page.

* ``uniform``: every page every N/B days;
* ``harmonic``: ``courtly.frontier.recrawl`` — rates λ̂ estimated from what the visits
  saw (the irregular-interval MLE, the crawl's estimator without Last-Modified),
  μ fitted to the budget, ρ = (√(λ² + 4λ/μ) − λ)/2, re-solved weekly;
* ``nutch``: the interval ×1.4 when unchanged, ×0.8 when changed, in [1 h, 30 d] (no budget).

    python benchmarks/recrawl_sim.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import json
import math
import random
import time

from courtly.frontier.recrawl import LaneSchedule, fit_mu, harmonic_rate, irregular_rate

DAY = 1.0  # the simulation runs in days


def changes(rate: float, horizon: float, rng: random.Random) -> list[float]:
    out: list[float] = []
    at = 0.0
    while True:
        at += rng.expovariate(rate)
        if at >= horizon:
            return out
        out.append(at)


def run(
    policy: str, pages: int, days: float, budget: float, seed: int = 1
) -> dict[str, float | str]:
    rng = random.Random(seed)
    rates = [math.exp(rng.uniform(math.log(1 / 60), math.log(24))) for _ in range(pages)]
    times = [changes(r, days, rng) for r in rates]
    lane = LaneSchedule(min_s=1 / 24, max_s=30.0, default_s=1.0)
    interval = [pages / budget] * pages
    changed: list[list[float]] = [[] for _ in range(pages)]
    unchanged = [0.0] * pages
    fresh_time = age_time = 0.0
    fetches = nochange = 0
    next_solve = 7.0
    last = [0.0] * pages  # every page fetched at 0
    due = [(pages / budget) * (i + 0.5) / pages for i in range(pages)]  # spread the first round
    if policy == "nutch":
        due = [1.0 * (i + 0.5) / pages for i in range(pages)]
        interval = [1.0] * pages
    heap = sorted((d, i) for i, d in enumerate(due))
    heapq.heapify(heap)
    last_change_index = [0] * pages
    while heap:
        at, i = heapq.heappop(heap)
        if at >= days:
            continue
        if policy == "harmonic" and at >= next_solve:
            next_solve += 7.0
            est = [
                irregular_rate(changed[j][-32:], unchanged[j], pseudo_s=0.5, low=0.0005, high=70)
                for j in range(pages)
            ]
            mu = fit_mu([(e, 1.0) for e in est], budget, lane)
            interval = [
                min(lane.max_s, max(lane.min_s, 1 / max(harmonic_rate(e, 1.0, mu), 1e-12)))
                for e in est
            ]
        fresh_time_i, age_i = _window(times[i], last[i], at)
        fresh_time += fresh_time_i
        age_time += age_i
        k = bisect.bisect_right(times[i], at)
        saw_change = k > last_change_index[i]
        last_change_index[i] = k
        gap = at - last[i]
        fetches += 1
        if saw_change:
            changed[i].append(gap)
        else:
            unchanged[i] += gap
            nochange += 1
        if policy == "nutch":
            interval[i] = min(30.0, max(1 / 24, interval[i] * (0.8 if saw_change else 1.4)))
        last[i] = at
        heapq.heappush(heap, (at + interval[i], i))
    for i in range(pages):
        f, a = _window(times[i], last[i], days)
        fresh_time += f
        age_time += a
    return {
        "policy": policy,
        "freshness": round(fresh_time / (pages * days), 3),
        "age_days": round(age_time / (pages * days), 3),
        "fetches_per_day": round(fetches / days),
        "no_change_share": round(nochange / max(1, fetches), 3),
    }


def _window(change_times: list[float], start: float, end: float) -> tuple[float, float]:
    """Fresh time and integrated age over [start, end) of a copy taken at ``start``."""
    k = bisect.bisect_right(change_times, start)
    if k >= len(change_times) or change_times[k] >= end:
        return end - start, 0.0
    first = change_times[k]
    return first - start, (end - first) ** 2 / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 pages, 60 days")
    parser.add_argument("--json", action="store_true", help="one JSON line")
    args = parser.parse_args()
    pages, days = (200, 60.0) if args.quick else (1000, 240.0)
    budget = float(pages)  # one fetch per page per day on average
    started = time.perf_counter()
    rows = [run(p, pages, days, budget) for p in ("uniform", "harmonic", "nutch")]
    result: dict[str, object] = {
        "pages": pages,
        "days": days,
        "budget_per_day": budget,
        "rows": rows,
    }
    result["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps(result))
        return
    print(f"{pages} pages, {days:g} days, {budget:g} fetches/day budget")
    for row in rows:
        print(
            f"{row['policy']:>9}: freshness {row['freshness']}, age {row['age_days']} d, "
            f"{row['fetches_per_day']} fetches/day, {row['no_change_share']:.0%} no change"
        )


if __name__ == "__main__":
    main()

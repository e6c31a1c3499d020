"""Recrawl policies on a simulated web: freshness, age and no-change fetches (notes §7).

N pages with change rates log-uniform on [1/60, 24] per day, Poisson change times drawn
in advance (fixed seeds), a budget of B fetches a day, evenly spaced visits per page.
Every policy of one seed runs on the same pages and the same change times:

* ``uniform``: every page every N/B days;
* ``harmonic``: ``courtly.frontier.recrawl`` as the crawl runs it — λ̂ estimated from what
  the visits saw (:func:`~courtly.frontier.revisit.estimate_rate`'s estimator without
  Last-Modified: :func:`~courtly.frontier.recrawl.corrected_irregular_rate` over the last
  32 changed intervals and their share of the unchanged time and visits,
  :func:`~courtly.frontier.recrawl.window_unchanged`); the
  estimates and μ (fitted to the budget) re-solved weekly, each visit's next interval from
  :func:`~courtly.frontier.recrawl.recrawl_interval` (clamped to [1 h, 30 d], at most twice
  the previous); the first week every page is visited daily;
* ``harmonic-true``: the same schedule with the true λ (what a perfect estimator gives);
* ``harmonic-lm`` (``--last-modified``): the same schedule on a web whose servers send an
  honest Last-Modified (the time of the page's last change): as
  :func:`~courtly.frontier.revisit.estimate_rate`, the crawl's Last-Modified estimator
  from 3 comparisons once a change has been seen, the binary one before (and while no
  change has been seen: the Last-Modified estimator is 0 then); ``--lm-zero``
  (``harmonic-lm (zero)``) runs the rule before, the Last-Modified estimator from 3
  comparisons whether or not a change was seen;
* ``harmonic (fixed pseudo)`` (``--before``): the estimator before, whole half-day
  pseudo-intervals (:func:`~courtly.frontier.recrawl.irregular_rate`'s defaults);
* ``nutch``: the interval ×1.4 when unchanged, ×0.8 when changed, in [1 h, 30 d] (no budget).

Each seed also prints ``expected uniform``: Σ (1 − e^{−λI})/(λI) / N for its rates, the
closed form the simulated uniform freshness must match (notes §2; a check of the
simulator, not of a policy).

    python benchmarks/recrawl_sim.py [--quick] [--seeds 1,2,3,4,5 | --seeds-near 0.637:5]
        [--policies uniform,harmonic] [--last-modified] [--lm-zero] [--before]
        [--unwindowed] [--json]
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import json
import math
import os
import random
import statistics
import sys
import time

from courtly.frontier.recrawl import (
    LaneSchedule,
    corrected_irregular_rate,
    fit_mu,
    irregular_rate,
    last_modified_rate,
    recrawl_interval,
    window_unchanged,
)

RING = 32  # the changed intervals a crawl's state keeps (courtly.frontier.revisit.RING)
POLICIES = ("uniform", "harmonic", "harmonic-true", "nutch")


def changes(rate: float, horizon: float, rng: random.Random) -> list[float]:
    out: list[float] = []
    at = 0.0
    while True:
        at += rng.expovariate(rate)
        if at >= horizon:
            return out
        out.append(at)


def web(pages: int, days: float, seed: int) -> tuple[list[float], list[list[float]]]:
    """The change rates (per day) and the change times of ``pages`` pages."""
    rng = random.Random(seed)
    rates = [math.exp(rng.uniform(math.log(1 / 60), math.log(24))) for _ in range(pages)]
    return rates, [changes(r, days, rng) for r in rates]


def rates_only(pages: int, seed: int) -> list[float]:
    """The change rates ``web`` draws for ``seed`` (its first draws), without the change times."""
    rng = random.Random(seed)
    return [math.exp(rng.uniform(math.log(1 / 60), math.log(24))) for _ in range(pages)]


def seeds_near(target: float, count: int, pages: int, *, tolerance: float = 0.0015) -> list[int]:
    """The first ``count`` seeds (from 1) whose closed-form uniform freshness is within
    ``tolerance`` of ``target``: webs like the notes' draw, picked by their rates alone,
    before any policy runs on them."""
    picked: list[int] = []
    seed = 0
    while len(picked) < count:
        seed += 1
        if abs(expected_uniform(rates_only(pages, seed), 1.0) - target) <= tolerance:
            picked.append(seed)
    return picked


def expected_uniform(rates: list[float], interval: float) -> float:
    """Freshness of evenly spaced visits every ``interval``: mean of (1 − e^{−r})/r."""
    return sum(-math.expm1(-r * interval) / (r * interval) for r in rates) / len(rates)


def run(
    policy: str,
    rates: list[float],
    times: list[list[float]],
    days: float,
    budget: float,
    *,
    window: bool = True,
    estimator: str = "corrected",
    lm_zero: bool = False,
) -> dict[str, float | str]:
    """One policy over the pages ``rates``/``times`` for ``days`` at ``budget`` fetches a day.

    ``estimator`` is the crawl's (``corrected``: :func:`corrected_irregular_rate`, its
    pseudo-data on each page's own mean interval) or ``fixed`` (the estimator before:
    :func:`irregular_rate` with a whole changed and an unchanged half-day
    pseudo-interval), for comparison. ``window=False`` (with ``fixed``) also sets all the
    unchanged time against only the last 32 changed intervals (the estimator before the
    window's fix)."""
    pages = len(rates)
    lane = LaneSchedule(min_s=1 / 24, max_s=30.0, default_s=1.0)
    interval = [pages / budget] * pages
    changed: list[tuple[float, ...]] = [() for _ in range(pages)]
    unchanged = [0.0] * pages  # all the unchanged time, as the crawl's state keeps it
    counts = [0] * pages  # changes seen
    visits = [0] * pages  # comparisons: every visit had a copy to compare with
    lm_observed = [0.0] * pages  # Σ (visit − Last-Modified) over the visits that saw a change
    fresh_time = age_time = 0.0
    fetches = nochange = 0
    next_solve = 7.0
    est: list[float] = []
    mu = 1.0
    last = [0.0] * pages  # every page fetched at 0
    due = [(pages / budget) * (i + 0.5) / pages for i in range(pages)]  # spread the first round
    if policy == "nutch":
        due = [1.0 * (i + 0.5) / pages for i in range(pages)]
        interval = [1.0] * pages
    heap = sorted((d, i) for i, d in enumerate(due))
    heapq.heapify(heap)
    last_change_index = [0] * pages

    def corrected(j: int) -> float:
        """Page ``j``'s rate by the crawl's estimator (:func:`corrected_irregular_rate`)."""
        return corrected_irregular_rate(
            changed[j],
            window_unchanged(unchanged[j], counts[j], len(changed[j])),
            window_unchanged(float(visits[j] - counts[j]), counts[j], len(changed[j])),
            default_s=1.0,
            low=0.0005,
            high=70,
        )

    while heap:
        at, i = heapq.heappop(heap)
        if at >= days:
            continue
        if policy.startswith("harmonic") and at >= next_solve:
            next_solve += 7.0
            if policy == "harmonic-true":
                est = rates
            elif policy == "harmonic-lm":
                # estimate_rate with an honest Last-Modified: its estimator from 3
                # comparisons once a change was seen (with lm_zero: whether or not, the
                # rule before, which is 0 until then), else the binary one
                est = [
                    last_modified_rate(visits[j], counts[j], lm_observed[j] + unchanged[j])
                    if visits[j] >= 3 and (counts[j] > 0 or lm_zero)
                    else corrected(j)
                    for j in range(pages)
                ]
            elif estimator == "corrected":
                est = [corrected(j) for j in range(pages)]
            else:
                est = [
                    irregular_rate(
                        changed[j],
                        window_unchanged(unchanged[j], counts[j], len(changed[j]))
                        if window
                        else unchanged[j],
                        pseudo_s=0.5,
                        low=0.0005,
                        high=70,
                    )
                    for j in range(pages)
                ]
            mu = fit_mu([(e, 1.0) for e in est], budget, lane)
        fresh_time_i, age_i = _window(times[i], last[i], at)
        fresh_time += fresh_time_i
        age_time += age_i
        k = bisect.bisect_right(times[i], at)
        saw_change = k > last_change_index[i]
        last_change_index[i] = k
        gap = at - last[i]
        fetches += 1
        visits[i] += 1
        if not saw_change:
            nochange += 1
        if saw_change:
            changed[i] = (*changed[i], gap)[-RING:]
            counts[i] += 1
            lm_observed[i] += at - times[i][k - 1]  # the visit's time less its Last-Modified
        else:
            unchanged[i] += gap
        if policy == "nutch":
            interval[i] = min(30.0, max(1 / 24, interval[i] * (0.8 if saw_change else 1.4)))
        elif policy.startswith("harmonic") and est:
            # as the crawl schedules a visit: this page's estimate, the lane's μ, the clamps
            # and at most twice the previous interval
            interval[i] = recrawl_interval(est[i], 1.0, mu, lane, previous_s=interval[i])
        last[i] = at
        heapq.heappush(heap, (at + interval[i], i))
    for i in range(pages):
        f, a = _window(times[i], last[i], days)
        fresh_time += f
        age_time += a
    name = policy
    if policy == "harmonic-lm" and lm_zero:
        name = "harmonic-lm (zero)"
    if policy == "harmonic" and estimator != "corrected":
        name = "harmonic (fixed pseudo)" if window else "harmonic (fixed, unwindowed)"
    return {
        "policy": name,
        "freshness": round(fresh_time / (pages * days), 4),
        "age_days": round(age_time / (pages * days), 4),
        "fetches_per_day": round(fetches / days),
        "no_change_share": round(nochange / max(1, fetches), 4),
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
    parser.add_argument(
        "--seeds", default="1,2,3,4,5", help="the webs to draw: seeds, comma-separated"
    )
    parser.add_argument(
        "--last-modified",
        action="store_true",
        help="also run the schedule with honest Last-Modified dates (harmonic-lm)",
    )
    parser.add_argument(
        "--lm-zero",
        action="store_true",
        help="also run harmonic-lm as before: the Last-Modified estimator from 3 "
        "comparisons even while no change has been seen (it is 0 then)",
    )
    parser.add_argument(
        "--policies",
        help="run only these of the base policies (comma-separated: "
        + ",".join(POLICIES)
        + "; uniform always runs, the gains are over it)",
    )
    parser.add_argument(
        "--before",
        action="store_true",
        help="also run the estimator before its fix (fixed half-day pseudo-intervals)",
    )
    parser.add_argument(
        "--unwindowed", action="store_true", help="also run the estimator without its window fix"
    )
    parser.add_argument(
        "--seeds-near",
        metavar="F:N",
        help="instead of --seeds: the first N seeds whose closed-form uniform freshness is "
        "within 0.0015 of F (e.g. 0.637:5, webs like the notes' draw)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON line")
    args = parser.parse_args()
    pages, days = (200, 60.0) if args.quick else (1000, 240.0)
    budget = float(pages)  # one fetch per page per day on average
    started = time.perf_counter()
    if args.seeds_near:
        target, count = args.seeds_near.split(":")
        chosen = seeds_near(float(target), int(count), pages)
    else:
        chosen = [int(part) for part in args.seeds.split(",")]
    policies: tuple[str, ...] = POLICIES
    if args.policies:
        asked = {part.strip() for part in args.policies.split(",")}
        unknown = asked - set(POLICIES)
        if unknown:
            parser.error(f"unknown policies: {', '.join(sorted(unknown))}")
        policies = tuple(p for p in POLICIES if p in asked or p == "uniform")
    seeds: list[dict[str, object]] = []
    for seed in chosen:
        rates, times = web(pages, days, seed)
        rows = [run(p, rates, times, days, budget) for p in policies]
        if args.last_modified:
            rows.append(run("harmonic-lm", rates, times, days, budget))
        if args.lm_zero:
            rows.append(run("harmonic-lm", rates, times, days, budget, lm_zero=True))
        if args.before:
            rows.append(run("harmonic", rates, times, days, budget, estimator="fixed"))
        if args.unwindowed:
            rows.append(
                run("harmonic", rates, times, days, budget, window=False, estimator="fixed")
            )
        seeds.append(
            {
                "seed": seed,
                "expected_uniform": round(expected_uniform(rates, pages / budget), 4),
                "rows": rows,
            }
        )
    mean: dict[str, dict[str, float]] = {}
    spread: dict[str, dict[str, float]] = {}  # median, min and max over the seeds
    for name in [str(r["policy"]) for r in seeds[0]["rows"]]:  # type: ignore[attr-defined]
        picked = [r for s in seeds for r in s["rows"] if r["policy"] == name]  # type: ignore[attr-defined]
        gains = [
            float(r["freshness"]) - float(u["freshness"])
            for s in seeds
            for r in s["rows"]  # type: ignore[attr-defined]
            for u in s["rows"]  # type: ignore[attr-defined]
            if r["policy"] == name and u["policy"] == "uniform"
        ]
        mean[name] = {
            key: round(statistics.mean(float(r[key]) for r in picked), 4)
            for key in ("freshness", "age_days", "fetches_per_day", "no_change_share")
        }
        mean[name]["gain_over_uniform"] = round(statistics.mean(gains), 4)
        spread[name] = {
            f"{key}_{stat}": round(fn(float(r[key]) for r in picked), 4)
            for key in ("freshness", "no_change_share")
            for stat, fn in (("median", statistics.median), ("min", min), ("max", max))
        }
        spread[name].update(
            gain_median=round(statistics.median(gains), 4),
            gain_min=round(min(gains), 4),
            gain_max=round(max(gains), 4),
        )
    result: dict[str, object] = {
        "command": " ".join(["python benchmarks/recrawl_sim.py", *sys.argv[1:]]),
        "load_average_at_end": [round(x, 1) for x in os.getloadavg()],
        "pages": pages,
        "days": days,
        "budget_per_day": budget,
        "seeds": seeds,
        "mean": mean,
        "spread": spread,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"{pages} pages, {days:g} days, {budget:g} fetches/day budget")
    for s in seeds:
        print(f"seed {s['seed']}: expected uniform {s['expected_uniform']}")
        for row in s["rows"]:  # type: ignore[attr-defined]
            print(
                f"  {row['policy']:>22}: freshness {row['freshness']}, age {row['age_days']} d, "
                f"{row['fetches_per_day']} fetches/day, {row['no_change_share']:.1%} no change"
            )
    print(f"mean of {len(seeds)} seeds:")
    for name, row in mean.items():
        print(
            f"  {name:>22}: freshness {row['freshness']} ({row['gain_over_uniform']:+.4f} over "
            f"uniform), age {row['age_days']} d, {row['fetches_per_day']:.0f} fetches/day, "
            f"{row['no_change_share']:.1%} no change"
        )
    print(f"median [min, max] of {len(seeds)} seeds:")
    for name, row in spread.items():
        print(
            f"  {name:>22}: freshness {row['freshness_median']} [{row['freshness_min']}, "
            f"{row['freshness_max']}], gain {row['gain_median']:+.4f} [{row['gain_min']:+.4f}, "
            f"{row['gain_max']:+.4f}], no change {row['no_change_share_median']:.1%} "
            f"[{row['no_change_share_min']:.1%}, {row['no_change_share_max']:.1%}]"
        )


if __name__ == "__main__":
    main()

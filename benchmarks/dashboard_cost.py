"""What the live dashboard costs a crawl: the wide scenario with ``--dashboard`` off and on.

Issue target: with the dashboard on, the wide benchmark loses at most 3 % of its
pages/s, measured side by side. Each round runs ``courtly crawl`` with its defaults
(``compare_scrapy``'s flags, a fresh sandbox web served by a child process, the same
audit) three times:

* ``off``: plain, with the default progress interval (2 s);
* ``off_1s``: plain, with ``--progress-interval 1``: what ``--dashboard`` sets when no
  interval is given (its history is at 1 Hz), so that this arm and ``on`` differ by the
  dashboard alone;
* ``on``: with ``--dashboard 127.0.0.1:PORT`` and an operator polling it, every second,
  ``/api/snapshot``, ``/api/hosts?sort=delay&n=50`` and ``/metrics`` (what the page
  and a Prometheus scrape ask for).

The order rotates from round to round (off, off_1s, on; off_1s, on, off; ...) so that a
machine slowly getting busier or quieter does not favour one arm. Each round gives the
ratio ``on / off_1s`` of pages/s (the dashboard's own cost: ``pages_per_s_ratio``, the
median over rounds, and ``loss`` = 1 - it; the target is met when it is at most 0.03
and the rounds resolve it: ``resolved``, the middle half of the ratios spanning at most
0.06; else ``target_met`` is ``None``)
and ``off_1s / off`` (what the faster tick alone does: ``interval_ratio``), and
``on / off`` (what turning the dashboard on costs a default crawl, tick and all:
``full_ratio``), each with its spread over rounds (min, quartiles, max), with each
arm's medians, the CPU per page (``cpu_ms_per_page_ratio``: on / off_1s) and the load
average beside them. On a shared machine
the spread between two runs of one arm can exceed 3 %: read ``ratios`` (every round)
before the median.

    .venv/bin/python benchmarks/dashboard_cost.py --json                 # 8,000 hosts
    .venv/bin/python benchmarks/dashboard_cost.py --quick --rounds 2     # 2,000 hosts, 20 s
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import socket
import statistics
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from compare_scrapy import (
    HERE,
    CachedTruth,
    ProcessCost,
    Sandbox,
    audited_pages,
    commit,
    courtly_command,
    free_port,
    machine,
    run_measured,
    scenarios,
)
from courtly.sandbox import RequestRecord, SandboxWorld, load_log

TARGET_LOSS = 0.03
POLLED = ("/api/snapshot", "/api/hosts?sort=delay&n=50", "/metrics")
POLL_EVERY_S = 1.0


def dashboard_port() -> int:
    """A port free on 127.0.0.1 now, for ``--dashboard``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Operator:
    """Polls the dashboard's endpoints every :data:`POLL_EVERY_S` from a thread.

    Counts the answers (``ok``) and the failures (``failed``: refused before the
    crawler started serving, or errors): the run only counts as "on" if the
    dashboard did answer.
    """

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.ok = 0
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Operator:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(POLL_EVERY_S):
            for path in POLLED:
                try:
                    with urllib.request.urlopen(self.base + path, timeout=5) as answer:
                        answer.read()
                    self.ok += 1
                except (OSError, urllib.error.URLError):
                    self.failed += 1


ARMS = ("off", "off_1s", "on")
"""Plain (default interval), plain at the dashboard's 1 s interval, with the dashboard."""


def figures(
    scenario: Any,
    web: Sandbox,
    records: list[RequestRecord],
    cost: ProcessCost,
    seconds: float,
    truth: CachedTruth,
) -> dict[str, Any]:
    """Pages/s, CPU per page and the politeness audit, as ``compare_scrapy`` counts
    them (pages: the crawler's requests other than robots.txt, over the window from its
    first request's start to its last one's end); without ``compare_scrapy``'s order,
    lateness and coverage figures, which take minutes at 8,000 hosts on a loaded
    machine and say nothing of the dashboard."""
    report, _, pages, window_s = audited_pages(scenario, web, records, seconds, truth)
    return {
        "pages": pages,
        "pages_per_s": round(pages / window_s, 1),
        "cpu_ms_per_page": round(1000 * cost.cpu_s / pages, 3) if pages else None,
        "cpu_cores": round(cost.cpu_s / window_s, 3),
        "violations": report.violations,
    }


def one_run(
    scenario: Any, seconds: float, workdir: Path, truth: CachedTruth, arm: str
) -> dict[str, Any]:
    """One crawl of a fresh copy of the web; the figures of ``compare_scrapy``."""
    dashboard = arm == "on"
    run_dir = workdir / f"{scenario.name}-{arm}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    load_before = os.getloadavg()[0]
    web = Sandbox(scenario.spec, run_dir / "web", truth.world)
    polls: dict[str, int] = {}
    try:
        cmd = courtly_command(scenario, web, seconds, run_dir / "state")
        if arm == "off_1s":
            cmd += ["--progress-interval", "1"]
        if dashboard:
            port = dashboard_port()
            cmd += ["--dashboard", f"127.0.0.1:{port}"]
            with Operator(port) as operator:
                cost = run_measured(cmd, run_dir / "courtly.log")
            polls = {"ok": operator.ok, "failed": operator.failed}
        else:
            cost = run_measured(cmd, run_dir / "courtly.log")
    finally:
        web.stop()
    records = load_log(Path(web.info["log_path"]))
    row = figures(scenario, web, records, cost, seconds, truth)
    row |= {
        "arm": arm,
        "dashboard": dashboard,
        "load_before": round(load_before, 2),
        "polls": polls,
    }
    row["returncode"] = cost.returncode
    return row


def spread(values: list[float]) -> dict[str, float] | None:
    """Min, quartiles and max of per-round ratios (``None`` without rounds)."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) > 1:
        q1, q2, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1 = q2 = q3 = ordered[0]
    return {
        "min": ordered[0],
        "q1": round(q1, 4),
        "median": round(q2, 4),
        "q3": round(q3, 4),
        "max": ordered[-1],
    }


def resolved(ratios: list[float]) -> bool:
    """Whether the rounds can tell a loss of :data:`TARGET_LOSS`: the middle half of the
    per-round ratios spans at most twice it (else ``target_met`` is ``None``: the
    median alone says nothing at that spread)."""
    quartiles = spread(ratios)
    return quartiles is not None and quartiles["q3"] - quartiles["q1"] <= 2 * TARGET_LOSS


def cpu_ratio(runs: list[dict[str, Any]]) -> float | None:
    """Median over rounds of ``on / off_1s`` CPU per page (the dashboard's own CPU)."""
    by_round: dict[int, dict[str, float]] = {}
    for r in runs:
        if r["cpu_ms_per_page"]:
            by_round.setdefault(r["round"], {})[r["arm"]] = r["cpu_ms_per_page"]
    ratios = [p["on"] / p["off_1s"] for p in by_round.values() if "on" in p and "off_1s" in p]
    return round(statistics.median(ratios), 4) if ratios else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenario", default="wide", help="a compare_scrapy scenario [wide]")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three arms [3]")
    parser.add_argument("--seconds", type=float, help="per run [the scenario's: 60 s]")
    parser.add_argument("--quick", action="store_true", help="2,000 hosts, 20 s runs")
    parser.add_argument("--workdir", type=Path, default=HERE / "out" / "dashboard_cost")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    chosen = scenarios(args.quick)
    if args.scenario not in chosen:
        parser.error(f"unknown scenario {args.scenario!r}; choose from {sorted(chosen)}")
    scenario = chosen[args.scenario]
    seconds = args.seconds or scenario.seconds
    spec = dataclasses.replace(scenario.spec, port=free_port())
    scenario = dataclasses.replace(scenario, spec=spec)
    truth = CachedTruth(SandboxWorld(spec, spec.port))
    runs: list[dict[str, Any]] = []
    ratios: list[float] = []
    interval_ratios: list[float] = []
    full_ratios: list[float] = []
    for index in range(args.rounds):
        order = ARMS[index % 3 :] + ARMS[: index % 3]
        pair: dict[str, dict[str, Any]] = {}
        for arm in order:
            print(f"round {index + 1}: {arm}, {seconds:.0f} s ...", file=sys.stderr)
            row = one_run(scenario, seconds, args.workdir, truth, arm) | {"round": index}
            print(f"  {row}", file=sys.stderr, flush=True)
            pair[arm] = row
            runs.append(row)
        if pair["off_1s"]["pages_per_s"]:
            ratios.append(round(pair["on"]["pages_per_s"] / pair["off_1s"]["pages_per_s"], 4))
        if pair["off"]["pages_per_s"]:
            interval_ratios.append(
                round(pair["off_1s"]["pages_per_s"] / pair["off"]["pages_per_s"], 4)
            )
            full_ratios.append(round(pair["on"]["pages_per_s"] / pair["off"]["pages_per_s"], 4))

    def median_of(arm: str, key: str) -> float | None:
        values = [r[key] for r in runs if r["arm"] == arm and r[key] is not None]
        return round(statistics.median(values), 3) if values else None

    ratio = round(statistics.median(ratios), 4) if ratios else None
    loss = round(1 - ratio, 4) if ratio is not None else None
    medians = {
        f"{arm}_{key}_median": median_of(arm, key)
        for arm in ARMS
        for key in ("pages_per_s", "cpu_ms_per_page")
    }
    result = {
        "benchmark": "dashboard_cost",
        "machine": machine(),
        "commit": commit(),
        "scenario": scenario.name,
        "hosts": spec.n_hosts,
        "seconds": seconds,
        "rounds": args.rounds,
        "polled_every_s": POLL_EVERY_S,
        "polled": list(POLLED),
        **medians,
        "ratios": ratios,
        "ratio_spread": spread(ratios),
        "interval_ratios": interval_ratios,
        "full_ratios": full_ratios,
        "full_ratio": round(statistics.median(full_ratios), 4) if full_ratios else None,
        "full_ratio_spread": spread(full_ratios),
        "cpu_ms_per_page_ratio": cpu_ratio(runs),
        "load_average_range": [
            min(r["load_before"] for r in runs),
            max(r["load_before"] for r in runs),
        ],
        "interval_ratio": round(statistics.median(interval_ratios), 4) if interval_ratios else None,
        "pages_per_s_ratio": ratio,
        "loss": loss,
        "target_loss": TARGET_LOSS,
        "resolved": resolved(ratios),
        "target_met": None if loss is None or not resolved(ratios) else loss <= TARGET_LOSS,
        "dashboard_answered": all(r["polls"].get("ok", 0) > 0 for r in runs if r["dashboard"]),
        "violations": sum(r["violations"] for r in runs),
        "runs": runs,
    }
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

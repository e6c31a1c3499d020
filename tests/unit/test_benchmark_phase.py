"""The politeness efficiency with the phase at the window's end taken out
(``compare_scrapy.phase_mean``): a crawler on the bound's own schedule scores 1 at every
window end, and one a few milliseconds behind it loses what its lateness costs, not a
whole request a host because its run stopped just after a whole number of cycles."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

import compare_scrapy as cs  # noqa: E402
from courtly.sandbox import SandboxSpec, SandboxTruth  # noqa: E402
from courtly.sandbox.request_log import RequestRecord  # noqa: E402
from courtly.sandbox.urls import host_url, split_url  # noqa: E402
from courtly.sandbox.world import SandboxWorld  # noqa: E402

STOP_S = 30.0005
"""When the crawler stops starting requests: a hair after 30 cycles of 1 s."""
FETCH_S = 0.0015
"""How long each response takes (the bound takes it as 0 on hosts that are not slow)."""

SPEC = dataclasses.replace(
    SandboxSpec.politeness(20),
    robots_variants=("missing",),
    slow_hosts=0,
    flaky_hosts=0,
    trap_hosts=0,
    dead_hosts=0,
    pages_per_host=60,
)
"""Plain hosts only: every one a 1 s cycle in the politeness scenario's bound."""


def _crawl(truth: SandboxTruth, seeds: list[str], late_s: float) -> list[RequestRecord]:
    """Each host's robots.txt at 0 and one page a second after it, each request
    ``late_s`` later than the one before allowed (0: the bound's schedule), up to
    ``STOP_S``; never more pages than the host has within reach. The first host is
    never late: its 31st request, at 30 s, is in flight at the stop, and the window
    runs on to its end, as in a real run some host's does."""
    pages_on: dict[str, int] = {}
    for url in truth.expected_pages(cs.TOKEN, scope="any", seeds=seeds):
        host = split_url(url)[0]
        pages_on[host] = pages_on.get(host, 0) + 1
    records = []
    for index, profile in enumerate(truth.world.hosts):
        late_here_s = late_s if index else 0.0
        at, paths = 0.0, ["/robots.txt"]
        paths += [f"/p/{i}.html" for i in range(pages_on.get(profile.name, 0))]
        for n, path in enumerate(paths):
            if at > STOP_S:
                break
            records.append(
                RequestRecord(
                    at, at + FETCH_S, profile.name, profile.ip, 80, path, 200, cs.USER_AGENT, 0, n
                )
            )
            at += 1.0 + (late_here_s if n else 0.0)
    return records


def _figures(late_s: float) -> tuple[float, dict[str, float]]:
    world = SandboxWorld(SPEC, 8080)
    truth = SandboxTruth(world)
    seeds = [host_url(p.name, 8080, "/") for p in world.hosts]
    scenario = dataclasses.replace(cs.scenarios(False)["politeness"], spec=SPEC)
    records = _crawl(truth, seeds, late_s)
    window_s = max(r.end_at for r in records) - min(r.start_at for r in records)
    single = len(records) / cs.bound(scenario, truth, window_s, seeds)["bound_requests"]
    phased = cs.phase_mean(scenario, truth, records, window_s, seeds)
    assert phased is not None
    return single, phased


def test_a_crawler_on_the_bounds_schedule_scores_one_at_every_window_end() -> None:
    single, phased = _figures(late_s=0.0)
    assert single == 1.0
    assert phased["requests_efficiency_phase_mean"] == 1.0


def test_a_crawler_a_little_late_loses_its_lateness_not_a_request_a_host() -> None:
    # 2 ms a request: 60 ms over the run, a 6% chance a host misses its last cycle
    single, phased = _figures(late_s=0.002)
    assert single < 0.975  # the 31st request of every host, which it could not make
    assert phased["requests_efficiency_phase_mean"] > 0.99

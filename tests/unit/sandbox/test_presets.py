"""The benchmark presets: the wide web's shape, and the failure mix in every large preset."""

from __future__ import annotations

import statistics
from collections import Counter

import pytest

from courtly.sandbox import Layout, SandboxSpec, build_layout

FAILING_ROBOTS = {"server_error", "hang"}


@pytest.fixture(scope="module")
def layouts() -> dict[str, Layout]:
    return {name: build_layout(SandboxSpec.preset(name)) for name in ("wide", "broad")}


def test_wide_is_shaped_like_the_issue_says(layouts: dict[str, Layout]) -> None:
    spec = SandboxSpec.wide()
    layout = layouts["wide"]
    live = [h for h in layout.hosts if not h.dead]
    assert len(layout.hosts) >= 8000
    assert 6000 <= len(layout.live_ips) <= 6800
    per_ip = Counter(h.ip for h in live)
    sharing = sum(n for n in per_ip.values() if n > 1) / len(live)
    assert 0.25 <= sharing <= 0.45  # about a third share an address
    assert 0.45 <= sum(h.seeded for h in live) / len(live) <= 0.55
    sizes = sorted(h.pages for h in live)
    assert 30 <= statistics.mean(sizes) <= 45
    assert sizes[-1] >= 50 * statistics.median(sizes)  # Zipf: a few huge hosts, many small
    assert sizes[0] >= 1 and sizes[-1] <= spec.max_pages_per_host
    assert spec.links_min == 10 and spec.links_max == 30 and spec.cross_host_share == 0.08
    assert 8_000 <= spec.min_page_bytes + (spec.max_page_bytes - spec.min_page_bytes) / 3 <= 12_000
    assert not spec.external_links  # scope "any" stays on loopback


@pytest.mark.parametrize("name", ["wide", "broad"])
def test_the_failure_mix_is_dealt_in_the_issues_shares(
    name: str, layouts: dict[str, Layout]
) -> None:
    layout = layouts[name]
    live = [h for h in layout.hosts if not h.dead]
    share = Counter(h.robots_variant for h in live)
    n = len(live)
    assert (share["rules"] + share["missing"]) / n >= 0.7  # mostly rules or 404
    assert share["empty"] and share["redirect_chain"]
    assert 0.02 <= sum(share[v] for v in FAILING_ROBOTS) / n <= 0.08  # a few % fail or hang
    delays = [h.crawl_delay_s for h in live if h.robots_variant == "crawl_delay"]
    assert abs(len(delays) / n - 0.05) < 0.01
    assert min(delays) >= 0.5 and max(delays) <= 2.0 and len(set(delays)) > 5
    latencies = [h.latency_s for h in live if h.slow]
    assert abs(len(latencies) / n - 0.05) < 0.01
    assert min(latencies) >= 0.05 and max(latencies) <= 0.3 and len(set(latencies)) > 5
    overloads = Counter(h.overload_status for h in live if h.flaky)
    assert overloads[429] == overloads[503] == len(layout.hosts) // 100
    assert sum(h.dead for h in layout.hosts) == 2


def test_the_politeness_preset_keeps_its_pressure_and_gets_the_failures() -> None:
    layout = build_layout(SandboxSpec.politeness())
    live = [h for h in layout.hosts if not h.dead]
    variants = {h.robots_variant for h in live}
    assert {"empty", "redirect_chain", "server_error", "hang", "crawl_delay"} <= variants
    assert sum(h.slow for h in live) >= len(live) // 10 - 1
    assert sum(h.flaky for h in live) >= len(live) // 10 - 1
    assert all(1.0 <= h.crawl_delay_s <= 2.0 for h in live if h.robots_variant == "crawl_delay")

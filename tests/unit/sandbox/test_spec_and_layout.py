from __future__ import annotations

import ipaddress
from collections import Counter

import pytest

from courtly.sandbox import ROBOTS_VARIANTS, SandboxSpec, build_layout


@pytest.mark.parametrize("name", ["small", "demo", "broad", "politeness", "hostile"])
def test_presets_build_and_round_trip_through_json(name: str) -> None:
    spec = SandboxSpec.preset(name, seed=7)
    assert SandboxSpec.from_json(spec.to_json()) == spec
    layout = build_layout(spec)
    assert len(layout.hosts) == spec.n_hosts
    assert sum(h.dead for h in layout.hosts) == spec.dead_hosts


def test_unknown_preset_and_bad_values_are_refused() -> None:
    with pytest.raises(ValueError, match="preset"):
        SandboxSpec.preset("huge")
    with pytest.raises(ValueError):
        SandboxSpec(robots_variants=("nope",))
    with pytest.raises(ValueError):
        SandboxSpec(n_sites=1, hosts_per_site=1, dead_hosts=1)


def test_small_has_about_ten_hosts_and_every_robots_variant() -> None:
    layout = build_layout(SandboxSpec.small())
    live = [h for h in layout.hosts if not h.dead]
    assert 8 <= len(layout.hosts) <= 12
    assert {h.robots_variant for h in live} == set(ROBOTS_VARIANTS)
    assert any(h.slow for h in live) and any(h.flaky for h in live)
    assert any(h.trap for h in live) and any(h.hostile for h in live)


def test_addresses_are_loopback_shared_by_live_hosts_and_private_to_dead_ones() -> None:
    spec = SandboxSpec.small()
    layout = build_layout(spec)
    for host in layout.hosts:
        assert ipaddress.IPv4Address(host.ip) in ipaddress.IPv4Network("127.0.0.0/8")
        assert host.ip != "127.0.0.1"
    live_use = Counter(h.ip for h in layout.hosts if not h.dead)
    assert len(live_use) == spec.ips
    assert max(live_use.values()) > 1  # some hosts share an address
    dead_ips = {h.ip for h in layout.hosts if h.dead}
    assert dead_ips.isdisjoint(live_use)
    assert set(layout.dead_ips) == dead_ips


def test_broad_spreads_thousands_of_hosts_over_many_addresses() -> None:
    layout = build_layout(SandboxSpec.broad(2000))
    assert len(layout.hosts) == 2000
    assert len(layout.live_ips) >= 200
    assert all(ip.rsplit(".", 1)[1] not in ("0", "255") for ip in layout.live_ips)
    assert len({h.name for h in layout.hosts}) == 2000


def test_layout_depends_on_the_seed_only() -> None:
    assert build_layout(SandboxSpec.small(seed=3)) == build_layout(SandboxSpec.small(seed=3))
    assert build_layout(SandboxSpec.small(seed=3)) != build_layout(SandboxSpec.small(seed=4))

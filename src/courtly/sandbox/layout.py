"""Who is who in a sandbox: host names, addresses and what each host does.

:func:`build_layout` is a pure function of the spec: the same spec gives the
same hosts, addresses and behaviours, in the same order.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterator
from dataclasses import dataclass

from courtly.sandbox.spec import SandboxSpec

__all__ = [
    "BLOCKING_VARIANTS",
    "HostProfile",
    "Layout",
    "build_layout",
    "host_sizes",
    "loopback_addresses",
]

#: Robots variants under which the robots token may fetch nothing but robots.txt.
BLOCKING_VARIANTS = frozenset({"server_error", "hang", "token_blocked"})

_WORDS = ("www", "shop", "blog", "docs", "news", "api", "wiki", "forum", "media", "store", "help")


@dataclass(frozen=True, slots=True)
class HostProfile:
    """One host name and its behaviour.

    ``robots_variant`` is one of :data:`courtly.sandbox.spec.ALL_ROBOTS_VARIANTS`
    (empty for a dead host, which nothing answers). ``pages`` is the number of
    content pages (``/p/0.html`` ...); ``latency_s`` how long a slow host takes
    to answer (0 when it is not slow); ``crawl_delay_s`` the Crawl-delay a
    ``crawl_delay`` host asks of the robots token (0 elsewhere);
    ``overload_status`` the status of a flaky host's overload answers (0: it
    alternates 429 and 503 by window); ``seeded`` whether its front page is a seed.
    """

    name: str
    site: str
    site_index: int
    index_in_site: int
    ip: str
    dead: bool = False
    robots_variant: str = ""
    slow: bool = False
    flaky: bool = False
    trap: bool = False
    hostile: bool = False
    pages: int = 0
    latency_s: float = 0.0
    crawl_delay_s: float = 0.0
    overload_status: int = 0
    seeded: bool = True


@dataclass(frozen=True, slots=True)
class Layout:
    """Every host in site-major order, plus the addresses to listen on."""

    hosts: tuple[HostProfile, ...]
    live_ips: tuple[str, ...]
    dead_ips: tuple[str, ...]

    def by_name(self) -> dict[str, HostProfile]:
        """A name -> profile map (build once and keep it)."""
        return {h.name: h for h in self.hosts}

    def sites(self) -> tuple[str, ...]:
        """The registered domains, in order."""
        return tuple(dict.fromkeys(h.site for h in self.hosts))


def loopback_addresses() -> Iterator[str]:
    """127.0.0.2, 127.0.0.3, ... skipping addresses whose last octet is 0 or 255."""
    address = int(ipaddress.IPv4Address("127.0.0.2"))
    end = int(ipaddress.IPv4Address("127.255.255.254"))
    while address <= end:
        if address & 0xFF not in (0, 255):
            yield str(ipaddress.IPv4Address(address))
        address += 1


def _host_name(site_index: int, index_in_site: int) -> str:
    word = _WORDS[index_in_site % len(_WORDS)]
    label = word if index_in_site == 0 else f"{word}{index_in_site}"
    return f"{label}.site{site_index}.test"


def host_sizes(spec: SandboxSpec, count: int) -> list[int]:
    """Content pages per size rank 1..``count``: ``pages_per_host`` each, or Zipf.

    With ``zipf_s > 0`` rank ``r`` gets ``round(C / r ** zipf_s)`` pages, clipped to
    ``[1, max_pages_per_host]``, with ``C`` the largest scale whose total stays
    within ``count x pages_per_host`` (bisection; pure).
    """
    if spec.zipf_s <= 0 or count <= 0:
        return [min(spec.pages_per_host, spec.max_pages_per_host)] * count
    weights = [r**-spec.zipf_s for r in range(1, count + 1)]
    want = count * spec.pages_per_host

    def sizes(scale: float) -> list[int]:
        return [min(spec.max_pages_per_host, max(1, round(scale * w))) for w in weights]

    low, high = 0.0, float(want)
    for _ in range(40):
        mid = (low + high) / 2
        if sum(sizes(mid)) <= want:
            low = mid
        else:
            high = mid
    return sizes(low)


def build_layout(spec: SandboxSpec) -> Layout:
    """Deal names, addresses, robots variants and behaviours to hosts (pure, seeded)."""
    names = [
        (s, j, _host_name(s, j)) for s in range(spec.n_sites) for j in range(spec.hosts_per_site)
    ]
    n_live = len(names) - spec.dead_hosts
    addresses = loopback_addresses()
    live_ips = tuple(next(addresses) for _ in range(min(spec.ips, n_live)))
    dead_ips = tuple(next(addresses) for _ in range(spec.dead_hosts))

    rng = random.Random(f"{spec.seed}|layout")
    order = list(range(n_live))
    rng.shuffle(order)
    variant = {
        idx: spec.robots_variants[pos % len(spec.robots_variants)] for pos, idx in enumerate(order)
    }
    open_hosts = [idx for idx in order if variant[idx] not in BLOCKING_VARIANTS] or order
    rng.shuffle(open_hosts)

    def pick(start: int, count: int) -> set[int]:
        return {open_hosts[(start + k) % len(open_hosts)] for k in range(count)}

    flaky = pick(0, spec.flaky_hosts)
    slow = pick(spec.flaky_hosts, spec.slow_hosts)
    trap = pick(spec.flaky_hosts + spec.slow_hosts, spec.trap_hosts)
    hostile = pick(spec.flaky_hosts + spec.slow_hosts + spec.trap_hosts, spec.hostile_hosts)
    flaky_order = sorted(flaky, key=open_hosts.index)
    status_of = {idx: 429 if k % 2 == 0 else 503 for k, idx in enumerate(flaky_order)}

    # Sizes by a seeded rank, seeds by a seeded draw, per-host spreads by seeded draws:
    # each from its own stream, so that adding a knob leaves the others' deal alone.
    sizes = host_sizes(spec, n_live)
    size_rank = list(range(n_live))
    random.Random(f"{spec.seed}|sizes").shuffle(size_rank)
    pages = {idx: sizes[rank] for rank, idx in enumerate(size_rank)}
    seed_rng = random.Random(f"{spec.seed}|seeds")
    seeded = {idx for idx in range(n_live) if seed_rng.random() < spec.seeded_share}
    spread = random.Random(f"{spec.seed}|spread")

    def latency(idx: int) -> float:
        if idx not in slow:
            return 0.0
        if spec.slow_max_s > spec.slow_s:
            return round(spread.uniform(spec.slow_s, spec.slow_max_s), 3)
        return spec.slow_s

    def crawl_delay(idx: int) -> float:
        if variant[idx] != "crawl_delay":
            return 0.0
        if spec.crawl_delay_max_s > spec.crawl_delay_s:
            return round(spread.uniform(spec.crawl_delay_s, spec.crawl_delay_max_s), 1)
        return spec.crawl_delay_s

    hosts: list[HostProfile] = []
    for idx, (s, j, name) in enumerate(names):
        site = f"site{s}.test"
        if idx >= n_live:
            ip = dead_ips[idx - n_live]
            hosts.append(HostProfile(name, site, s, j, ip, dead=True))
            continue
        hosts.append(
            HostProfile(
                name=name,
                site=site,
                site_index=s,
                index_in_site=j,
                ip=live_ips[idx % len(live_ips)],
                robots_variant=variant[idx],
                slow=idx in slow,
                flaky=idx in flaky,
                trap=idx in trap,
                hostile=idx in hostile,
                pages=pages[idx],
                latency_s=latency(idx),
                crawl_delay_s=crawl_delay(idx),
                overload_status=status_of.get(idx, 0) if spec.flaky_fixed_status else 0,
                seeded=idx in seeded,
            )
        )
    return Layout(hosts=tuple(hosts), live_ips=live_ips, dead_ips=dead_ips)

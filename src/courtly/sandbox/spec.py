"""The shape of a sandbox web: :class:`SandboxSpec` and its scenario presets.

A spec is a plain value. Together with the port the server ends up on, it
determines every byte the sandbox serves: host names, addresses, robots.txt
variants, pages and links are all derived from ``seed``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ALL_ROBOTS_VARIANTS", "ROBOTS_VARIANTS", "SandboxSpec", "failure_mix_variants"]

#: The default deal of robots.txt behaviours: one host each in the small web (see
#: docs/sandbox.md).
ROBOTS_VARIANTS: tuple[str, ...] = (
    "rules",
    "crawl_delay",
    "missing",
    "server_error",
    "hang",
    "redirect",
    "wildcard",
    "token_blocked",
    "token_open",
)

#: Every robots.txt behaviour the sandbox can give a host: the default deal plus
#: ``empty`` (200 with an empty body) and ``redirect_chain`` (301, then 302, then 200).
ALL_ROBOTS_VARIANTS: tuple[str, ...] = (*ROBOTS_VARIANTS, "empty", "redirect_chain")

#: The realistic mix of robots.txt behaviours, in hosts per 100: mostly rules or 404,
#: some empty or redirected twice, 5% with a Crawl-delay, a few % failing (5xx) or
#: never answering.
_FAILURE_MIX: tuple[tuple[str, int], ...] = (
    ("rules", 44),
    ("missing", 30),
    ("empty", 5),
    ("redirect_chain", 5),
    ("crawl_delay", 5),
    ("token_open", 3),
    ("server_error", 3),
    ("wildcard", 2),
    ("hang", 2),
    ("token_blocked", 1),
)


def failure_mix_variants() -> tuple[str, ...]:
    """The realistic robots.txt mix as a deal of 100 variants (see :data:`_FAILURE_MIX`)."""
    return tuple(name for name, count in _FAILURE_MIX for _ in range(count))


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """What to generate. Counts are per sandbox unless named ``*_per_*``.

    ``n_sites`` registered domains ``site0.test`` ...; each has ``hosts_per_site``
    host names (``www.site0.test``, ``shop1.site0.test`` ...). Live hosts share
    ``ips`` loopback addresses (127.0.0.2 upwards, round-robin); each of the
    ``dead_hosts`` (the last hosts of the last sites) gets an address of its own
    on which nothing listens. ``port`` 0 picks a free port; the same port is
    used on every address.

    Robots variants (``robots_variants``) are dealt to live hosts in a seeded
    order, cycling (repeat a variant to weight it); their groups name
    ``robots_token`` and ``*`` with different rules. A ``crawl_delay`` host asks
    for ``crawl_delay_s`` seconds, or for a seeded delay in ``[crawl_delay_s,
    crawl_delay_max_s]`` (rounded to 0.1 s) when ``crawl_delay_max_s`` is larger.
    ``slow_hosts`` answer every request after ``slow_s`` seconds (a seeded
    latency in ``[slow_s, slow_max_s]`` per host when ``slow_max_s`` is larger).
    ``flaky_hosts`` are overloaded in windows: of every ``flaky_every``
    non-robots requests, the last ``flaky_window`` are answered 429 or 503 with
    ``Retry-After: retry_after_s`` (the status alternates by window, or is fixed
    per host, half of them 429 and half 503, with ``flaky_fixed_status``).
    ``trap_hosts`` carry a calendar, an ever-deeper path and session-id links;
    ``hostile_hosts`` carry a ``big_page_bytes`` page and a gzip bomb that
    inflates to ``bomb_bytes``. A hanging robots.txt is held open for ``hang_s``
    seconds, then the connection is dropped without a response.

    Host sizes: every host has ``pages_per_host`` content pages, or with
    ``zipf_s > 0`` a Zipf share by a seeded size rank (rank ``r`` gets about
    ``C / r ** zipf_s`` pages, ``C`` chosen so that the mean stays about
    ``pages_per_host``), between 1 and ``max_pages_per_host``. Links: with
    ``links_max = 0`` the classic small set (a handful of same-host links and a
    few cross-host ones); with ``links_max > 0`` every content page carries
    ``links_min`` to ``links_max`` links, a ``cross_host_share`` of them to
    other hosts anywhere in the web. ``seeded_share`` is the share of hosts
    whose front page is a seed (dead hosts are always seeds). ``tracking_share`` of the
    same-host links are spelled with tracking parameters (``?utm_source=...&utm_medium=...``,
    ``?fbclid=...``, ``?gclid=...``, ``?mc_cid=...&mc_eid=...``): the server answers them
    with the untagged page, so a crawler that keeps the tags fetches duplicates.
    """

    seed: int = 1
    n_sites: int = 3
    hosts_per_site: int = 3
    pages_per_host: int = 10
    ips: int = 4
    port: int = 0
    robots_token: str = "courtly"
    robots_variants: tuple[str, ...] = ROBOTS_VARIANTS
    crawl_delay_s: float = 0.5
    crawl_delay_max_s: float = 0.0
    slow_hosts: int = 1
    slow_s: float = 0.1
    slow_max_s: float = 0.0
    flaky_hosts: int = 1
    flaky_every: int = 4
    flaky_window: int = 1
    flaky_fixed_status: bool = False
    retry_after_s: int = 1
    dead_hosts: int = 1
    trap_hosts: int = 1
    hostile_hosts: int = 1
    big_page_bytes: int = 11 * 1024 * 1024
    bomb_bytes: int = 101 * 1024 * 1024
    hang_s: float = 10.0
    min_page_bytes: int = 2_000
    max_page_bytes: int = 30_000
    special_pages: bool = True
    duplicate_spellings: bool = True
    redirects: bool = True
    nofollow: bool = True
    sitemaps: bool = True
    external_links: bool = True
    cross_site_links: bool = True
    zipf_s: float = 0.0
    max_pages_per_host: int = 100_000
    links_min: int = 0
    links_max: int = 0
    cross_host_share: float = 0.08
    seeded_share: float = 1.0
    tracking_share: float = 0.0

    def __post_init__(self) -> None:
        if self.n_sites < 1 or self.hosts_per_site < 1 or self.pages_per_host < 1:
            raise ValueError("a sandbox needs at least one site, host and page")
        if self.ips < 1:
            raise ValueError("ips must be at least 1")
        if self.dead_hosts >= self.n_hosts:
            raise ValueError("at least one host must be alive")
        if not self.robots_variants:
            raise ValueError("robots_variants must not be empty")
        unknown = set(self.robots_variants) - set(ALL_ROBOTS_VARIANTS)
        if unknown:
            raise ValueError(f"unknown robots variants: {sorted(unknown)}")
        if not 0 < self.min_page_bytes <= self.max_page_bytes:
            raise ValueError("need 0 < min_page_bytes <= max_page_bytes")
        if self.flaky_every < 1 or self.retry_after_s < 0:
            raise ValueError("flaky_every must be >= 1 and retry_after_s >= 0")
        if not 1 <= self.flaky_window <= self.flaky_every:
            raise ValueError("need 1 <= flaky_window <= flaky_every")
        if self.zipf_s < 0 or self.max_pages_per_host < 1:
            raise ValueError("need zipf_s >= 0 and max_pages_per_host >= 1")
        if self.links_max and not 2 <= self.links_min <= self.links_max:
            raise ValueError("need 2 <= links_min <= links_max (or links_max = 0)")
        if not 0 <= self.tracking_share <= 1:
            raise ValueError("need 0 <= tracking_share <= 1")
        if not 0 <= self.cross_host_share <= 1 or not 0 < self.seeded_share <= 1:
            raise ValueError("need 0 <= cross_host_share <= 1 and 0 < seeded_share <= 1")

    @property
    def n_hosts(self) -> int:
        """All host names, dead ones included."""
        return self.n_sites * self.hosts_per_site

    # -- presets -------------------------------------------------------------------

    @classmethod
    def small(cls, *, seed: int = 1) -> SandboxSpec:
        """For tests: 10 hosts (one dead), ~150 fetchable pages, a few seconds to crawl."""
        return cls(
            seed=seed,
            n_sites=2,
            hosts_per_site=5,
            pages_per_host=14,
            crawl_delay_s=0.1,
            flaky_every=10,
        )

    @classmethod
    def demo(cls, *, seed: int = 1) -> SandboxSpec:
        """For the demo: every feature, 5 sites x 4 hosts, ~20 pages a host."""
        return cls(
            seed=seed,
            n_sites=5,
            hosts_per_site=4,
            pages_per_host=20,
            ips=6,
            crawl_delay_s=1.0,
            slow_hosts=2,
            slow_s=0.3,
            flaky_hosts=2,
            retry_after_s=2,
            trap_hosts=2,
            hang_s=30.0,
        )

    @classmethod
    def broad(cls, n_hosts: int = 2000, *, seed: int = 1) -> SandboxSpec:
        """Throughput benchmark: many hosts, eight to an address, with the failure mix."""
        grid, total = _grid(n_hosts)
        return cls(
            seed=seed,
            **grid,
            pages_per_host=20,
            ips=max(2, total // 8),
            trap_hosts=max(1, n_hosts // 200),
            hostile_hosts=1,
            special_pages=False,
            redirects=True,
            max_page_bytes=20_000,
            **_failure_mix(total),
        )

    @classmethod
    def wide(cls, n_hosts: int = 8000, *, seed: int = 1) -> SandboxSpec:
        """A web shaped like the real one: many hosts, Zipf sizes, half of them seeded.

        ``n_hosts`` hosts (four to a site) on about 0.8 x ``n_hosts`` addresses
        (so about a third of the hosts share one), half of them seeded; Zipf host
        sizes around 40 pages; 10-30 links a page, 8% of them to other hosts
        anywhere; pages of about 10 KB; the failure mix (:func:`_failure_mix`).
        No links leave the sandbox, so ``scope = "any"`` stays on loopback.
        """
        grid, total = _grid(n_hosts)
        return cls(
            seed=seed,
            **grid,
            pages_per_host=40,
            zipf_s=1.0,
            max_pages_per_host=5_000,
            ips=max(2, total * 4 // 5),
            links_min=10,
            links_max=30,
            cross_host_share=0.08,
            seeded_share=0.5,
            min_page_bytes=4_000,
            max_page_bytes=22_000,
            trap_hosts=max(1, total // 200),
            hostile_hosts=1,
            special_pages=False,
            external_links=False,
            **_failure_mix(total),
        )

    @classmethod
    def politeness(cls, n_hosts: int = 200, *, seed: int = 1) -> SandboxSpec:
        """Politeness benchmark: many hosts per IP, crawl delays, 429/503 windows, slow hosts.

        The failure mix's robots.txt answers, with Crawl-delay on a third of the
        hosts (1-2 s), a tenth slow (50-300 ms) and a tenth overloaded in windows.
        """
        grid, total = _grid(n_hosts)
        mix = _failure_mix(total) | {
            "robots_variants": (
                *("rules", "crawl_delay", "missing", "rules", "crawl_delay", "wildcard") * 4,
                *("empty", "redirect_chain", "server_error", "hang"),
            ),
            "crawl_delay_s": 1.0,
            "slow_hosts": max(1, total // 10),
            "flaky_hosts": max(2, total // 10),
        }
        return cls(
            seed=seed,
            **grid,
            pages_per_host=15,
            ips=max(2, total // 10),
            trap_hosts=max(1, total // 50),
            hostile_hosts=0,
            **mix,
        )

    @classmethod
    def hostile(cls, *, seed: int = 1) -> SandboxSpec:
        """Everything that can go wrong, concentrated: most hosts misbehave somehow."""
        return cls(
            seed=seed,
            n_sites=3,
            hosts_per_site=4,
            pages_per_host=8,
            ips=3,
            robots_variants=(
                "server_error",
                "hang",
                "redirect",
                "wildcard",
                "token_blocked",
                "crawl_delay",
                "rules",
            ),
            slow_hosts=3,
            slow_s=0.5,
            flaky_hosts=3,
            flaky_every=2,
            retry_after_s=2,
            dead_hosts=2,
            trap_hosts=4,
            hostile_hosts=3,
            hang_s=20.0,
            tracking_share=0.3,
        )

    @classmethod
    def preset(cls, name: str, *, seed: int = 1) -> SandboxSpec:
        """The preset called ``name``: small, demo, broad, wide, politeness or hostile."""
        presets: dict[str, Callable[..., SandboxSpec]] = {
            "small": cls.small,
            "demo": cls.demo,
            "broad": cls.broad,
            "wide": cls.wide,
            "politeness": cls.politeness,
            "hostile": cls.hostile,
        }
        if name not in presets:
            raise ValueError(f"unknown sandbox preset {name!r}; one of {sorted(presets)}")
        return presets[name](seed=seed)

    # -- persistence ---------------------------------------------------------------

    def to_json(self) -> str:
        """A JSON object with every field (tuples become lists)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> SandboxSpec:
        """The inverse of :meth:`to_json`."""
        raw: dict[str, Any] = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in raw.items() if k in names}
        if "robots_variants" in values:
            values["robots_variants"] = tuple(values["robots_variants"])
        return cls(**values)


def _failure_mix(total: int) -> dict[str, Any]:
    """Spec fields for the failure mix of a realistic web of ``total`` hosts.

    robots.txt as :func:`failure_mix_variants` deals it (5% with a Crawl-delay of
    0.5-2 s); 5% of hosts slow (50-300 ms); 2% overloaded in windows (5 of every
    20 requests answered 429 on half of them, 503 on the other half, with
    ``Retry-After: 2``); a hanging robots.txt never answers within a benchmark
    run (120 s); two dead hosts.
    """
    return {
        "robots_variants": failure_mix_variants(),
        "crawl_delay_s": 0.5,
        "crawl_delay_max_s": 2.0,
        "slow_hosts": max(1, total * 5 // 100),
        "slow_s": 0.05,
        "slow_max_s": 0.3,
        "flaky_hosts": max(2, total * 2 // 100),
        "flaky_every": 20,
        "flaky_window": 5,
        "flaky_fixed_status": True,
        "retry_after_s": 2,
        "dead_hosts": 2,
        "hang_s": 120.0,
    }


def _grid(n_hosts: int, hosts_per_site: int = 4) -> tuple[dict[str, Any], int]:
    """``n_sites`` and ``hosts_per_site`` for at least ``n_hosts`` hosts, and their total."""
    n_sites = max(1, -(-n_hosts // hosts_per_site))
    return {"n_sites": n_sites, "hosts_per_site": hosts_per_site}, n_sites * hosts_per_site

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

__all__ = ["ROBOTS_VARIANTS", "SandboxSpec"]

#: Every robots.txt behaviour the sandbox can give a host (see docs/sandbox.md).
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
    order, cycling; their groups name ``robots_token`` and ``*`` with
    different rules. ``slow_hosts`` answer every request after ``slow_s`` seconds;
    ``flaky_hosts`` answer every ``flaky_every``-th non-robots request with 429
    or 503 and ``Retry-After: retry_after_s``; ``trap_hosts`` carry a calendar,
    an ever-deeper path and session-id links; ``hostile_hosts`` carry a
    ``big_page_bytes`` page and a gzip bomb that inflates to ``bomb_bytes``.
    A hanging robots.txt is held open for ``hang_s`` seconds, then the
    connection is dropped without a response.
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
    slow_hosts: int = 1
    slow_s: float = 0.1
    flaky_hosts: int = 1
    flaky_every: int = 4
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

    def __post_init__(self) -> None:
        if self.n_sites < 1 or self.hosts_per_site < 1 or self.pages_per_host < 1:
            raise ValueError("a sandbox needs at least one site, host and page")
        if self.ips < 1:
            raise ValueError("ips must be at least 1")
        if self.dead_hosts >= self.n_hosts:
            raise ValueError("at least one host must be alive")
        if not self.robots_variants:
            raise ValueError("robots_variants must not be empty")
        unknown = set(self.robots_variants) - set(ROBOTS_VARIANTS)
        if unknown:
            raise ValueError(f"unknown robots variants: {sorted(unknown)}")
        if not 0 < self.min_page_bytes <= self.max_page_bytes:
            raise ValueError("need 0 < min_page_bytes <= max_page_bytes")
        if self.flaky_every < 1 or self.retry_after_s < 0:
            raise ValueError("flaky_every must be >= 1 and retry_after_s >= 0")

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
        """Throughput benchmark: many well-behaved hosts, few hostile ones, no slow hosts."""
        hosts_per_site = 4
        n_sites = max(1, -(-n_hosts // hosts_per_site))
        return cls(
            seed=seed,
            n_sites=n_sites,
            hosts_per_site=hosts_per_site,
            pages_per_host=20,
            ips=max(2, n_sites * hosts_per_site // 8),
            robots_variants=("rules", "missing", "rules", "token_open", "rules", "redirect"),
            slow_hosts=0,
            flaky_hosts=0,
            dead_hosts=1,
            trap_hosts=max(1, n_hosts // 200),
            hostile_hosts=1,
            special_pages=False,
            redirects=True,
            max_page_bytes=20_000,
        )

    @classmethod
    def politeness(cls, n_hosts: int = 200, *, seed: int = 1) -> SandboxSpec:
        """Politeness benchmark: many hosts per IP, crawl delays, 429/503 windows, slow hosts."""
        hosts_per_site = 4
        n_sites = max(1, -(-n_hosts // hosts_per_site))
        total = n_sites * hosts_per_site
        return cls(
            seed=seed,
            n_sites=n_sites,
            hosts_per_site=hosts_per_site,
            pages_per_host=15,
            ips=max(2, total // 10),
            robots_variants=("rules", "crawl_delay", "missing", "rules", "crawl_delay", "wildcard"),
            crawl_delay_s=1.0,
            slow_hosts=max(1, total // 10),
            slow_s=0.2,
            flaky_hosts=max(1, total // 10),
            flaky_every=5,
            retry_after_s=2,
            trap_hosts=max(1, total // 50),
            hostile_hosts=0,
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
        )

    @classmethod
    def preset(cls, name: str, *, seed: int = 1) -> SandboxSpec:
        """The preset called ``name``: small, demo, broad, politeness or hostile."""
        presets: dict[str, Callable[..., SandboxSpec]] = {
            "small": cls.small,
            "demo": cls.demo,
            "broad": cls.broad,
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

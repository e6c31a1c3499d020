"""Ground truth about a sandbox web, for coverage and for the auditor.

Everything is derived from the generator's own model (:class:`SandboxWorld`
and its :class:`~courtly.sandbox.robots_model.RobotsModel` per host), never by
parsing what was served.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Literal

from courtly.sandbox.resources import Page, Redirect
from courtly.sandbox.urls import registered_domain, split_url
from courtly.sandbox.world import SandboxWorld

__all__ = ["SandboxTruth", "Scope"]

Scope = Literal["host", "domain", "any"]

_UNREACHABLE_VARIANTS = frozenset({"server_error", "hang"})


class SandboxTruth:
    """Answers "may this be fetched?" and "what should a polite crawler reach?"."""

    def __init__(self, world: SandboxWorld) -> None:
        self.world = world

    @property
    def port(self) -> int:
        return self.world.port

    def robots_unavailable(self, host: str) -> bool:
        """Whether ``host``'s robots.txt is unreachable (5xx, hangs, or the host is dead).

        RFC 9309: a crawler must then assume complete disallow.
        """
        profile = self.world.profile(host)
        if profile is None:
            return False
        return profile.dead or profile.robots_variant in _UNREACHABLE_VARIANTS

    def is_robots_path(self, host: str, path_qs: str) -> bool:
        """Whether ``path_qs`` is part of fetching robots.txt on ``host``."""
        return path_qs.partition("?")[0] in self.world.robots_paths(host)

    def disallowed(self, url: str, token: str) -> bool:
        """Whether robots rules forbid product ``token`` to fetch ``url``.

        True on hosts whose robots.txt is unreachable (except robots.txt itself);
        false for URLs outside the sandbox.
        """
        host, _, path = split_url(url)
        if self.world.profile(host) is None or self.is_robots_path(host, path):
            return False
        if self.robots_unavailable(host):
            return True
        model = self.world.robots_model(host)
        return model is not None and not model.allowed(path, token)

    def crawl_delay_s(self, host: str, token: str) -> float:
        """The robots Crawl-delay for ``token`` on ``host`` in seconds (0.0 if none)."""
        model = self.world.robots_model(host)
        return model.crawl_delay_s(token) if model is not None else 0.0

    def is_trap(self, url: str) -> bool:
        """Whether ``url`` lies in an infinite space (calendar, deep path, session ids)."""
        host, _, path = split_url(url)
        profile = self.world.profile(host)
        if profile is None or not profile.trap:  # trap pages live on trap hosts only
            return False
        resource = self.world.resolve(host, path)
        return isinstance(resource, Page) and resource.trap

    def nofollow_only(self, url: str) -> bool:
        """Whether ``url`` is linked only through nofollow links or pages (``/nf/`` ...)."""
        _, _, path = split_url(url)
        return path.startswith(("/nf/", "/meta-nf/", "/xrt-nf/"))

    def expected_pages(
        self,
        token: str,
        *,
        scope: Scope = "domain",
        seeds: Iterable[str] | None = None,
        follow_sitemaps: bool = False,
        max_redirects: int = 5,
    ) -> frozenset[str]:
        """Canonical URLs of the HTML pages a correct polite crawler can fetch with 200.

        Breadth-first from ``seeds`` (default: every host's front page) over
        followable links (not ``rel=nofollow``, not from nofollow pages) that
        stay in ``scope`` of the seeds, skipping robots-disallowed URLs, dead
        hosts and hosts with unreachable robots.txt. Redirects are followed up
        to ``max_redirects`` hops. Traps, the big page and the gzip bomb are
        excluded. With ``follow_sitemaps``, pages listed by advertised sitemaps
        count as discovered.
        """
        world = self.world
        start = tuple(seeds) if seeds is not None else world.seeds()
        seed_hosts = {split_url(u)[0] for u in start}
        seed_domains = {registered_domain(h) for h in seed_hosts}

        def in_scope(host: str) -> bool:
            if world.profile(host) is None:
                return False
            if scope == "host":
                return host in seed_hosts
            if scope == "domain":
                return registered_domain(host) in seed_domains
            return True

        expected: set[str] = set()
        seen: set[str] = set()
        sitemap_hosts: set[str] = set()
        queue: deque[tuple[str, int]] = deque()

        def push(url: str, hops: int) -> None:
            if url not in seen:
                seen.add(url)
                queue.append((url, hops))

        for url in start:
            push(world.canonical(url), 0)
        while queue:
            url, hops = queue.popleft()
            host, _, path = split_url(url)
            if not in_scope(host) or self.disallowed(url, token):
                continue
            profile = world.profile(host)
            if profile is None or profile.dead:
                continue
            if follow_sitemaps and host not in sitemap_hosts:
                sitemap_hosts.add(host)
                for page_url in world.sitemap_pages(host):
                    push(page_url, 0)
            resource = world.resolve(host, path)
            if isinstance(resource, Redirect):
                if hops < max_redirects:
                    push(resource.target, hops + 1)
                continue
            if not isinstance(resource, Page) or resource.trap:
                continue
            expected.add(url)
            if resource.meta_nofollow or resource.header_nofollow:
                continue
            for link in resource.links:
                if link.target is not None and not link.nofollow:
                    push(link.target, 0)
        return frozenset(expected)

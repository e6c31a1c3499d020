"""Crawl scope: which discovered URLs the crawl follows at all.

A :class:`Scope` is built once from the seeds and answers ``check(url, depth)`` with ``None``
(follow it) or a short stable reason string, used as a counter label:

- ``"too_deep"``: ``depth`` (links from the nearest seed; seeds are 0) exceeds ``max_depth``;
- ``"out_of_scope"``: the URL's host is not one of the seeds' hosts (mode ``"host"``) or its
  registered domain is not one of the seeds' (mode ``"domain"``, the default);
- ``"excluded"``: an exclude pattern matches;
- ``"not_included"``: include patterns are given and none matches.

Checks run in that order. Hosts are compared without ports, so ``http://a.test/`` and
``https://a.test:8443/`` are the same site. Patterns are Python regular expressions searched
anywhere in the canonical URL (anchor them with ``^`` to match a prefix).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from courtly.errors import ConfigError, InvalidURL
from courtly.url.canonical import canonicalize
from courtly.url.host import DomainResolver, hostname_of

__all__ = ["Scope", "ScopeMode"]

ScopeMode = Literal["host", "domain", "any"]
"""``"host"``: the seeds' hosts only; ``"domain"``: their registered domains; ``"any"``: all."""

_MODES: frozenset[str] = frozenset({"host", "domain", "any"})


@dataclass(frozen=True, slots=True)
class Scope:
    """Which URLs a crawl follows. Build it with :meth:`from_seeds`.

    ``sites`` holds seed hosts (mode ``"host"``) or seed registered domains (mode ``"domain"``);
    it is empty for ``"any"``. ``max_depth`` ``None`` means unlimited.
    """

    mode: ScopeMode
    sites: frozenset[str]
    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()
    max_depth: int | None = None
    resolver: DomainResolver = field(default_factory=DomainResolver, compare=False, repr=False)

    @classmethod
    def from_seeds(
        cls,
        seeds: Iterable[str],
        mode: ScopeMode = "domain",
        *,
        include: Iterable[str | re.Pattern[str]] = (),
        exclude: Iterable[str | re.Pattern[str]] = (),
        max_depth: int | None = None,
        resolver: DomainResolver | None = None,
    ) -> Scope:
        """Build a scope around the seed URLs.

        Raises :class:`courtly.errors.ConfigError` for an unknown mode, a seed that is not a
        valid http(s) URL, no seeds in a ``"host"``/``"domain"`` scope, a pattern that does not
        compile, or a negative ``max_depth``.
        """
        if mode not in _MODES:
            raise ConfigError(f"unknown scope mode {mode!r}; expected host, domain or any")
        if max_depth is not None and max_depth < 0:
            raise ConfigError(f"max_depth must be >= 0, got {max_depth}")
        base = cls(
            mode=mode,
            sites=frozenset(),
            include=_compile_all(include, "include"),
            exclude=_compile_all(exclude, "exclude"),
            max_depth=max_depth,
            resolver=resolver if resolver is not None else DomainResolver(),
        )
        sites: set[str] = set()
        for seed in seeds:
            try:
                site = base.site_of(seed)
            except InvalidURL as exc:
                raise ConfigError(f"seed {seed!r} is not a valid http(s) URL: {exc}") from exc
            if site is not None:
                sites.add(site)
        if mode != "any" and not sites:
            raise ConfigError(f"a {mode!r} scope needs at least one seed")
        return base.with_sites(sites)

    def site_of(self, seed: str) -> str | None:
        """The site the seed URL ``seed`` adds in this scope's mode: its host (``"host"``),
        its registered domain (``"domain"``), ``None`` for ``"any"``. Raises
        :class:`~courtly.errors.InvalidURL` for a URL that is not a crawlable http(s) URL."""
        host = hostname_of(canonicalize(seed))
        if self.mode == "host":
            return host
        if self.mode == "domain":
            return self.resolver.registered_domain(host)
        return None

    def with_seed(self, seed: str) -> Scope:
        """A copy that also holds the site of the seed URL ``seed``; this same scope when
        it holds that site already (or for mode ``"any"``). Raises
        :class:`~courtly.errors.InvalidURL` as :meth:`site_of` does."""
        site = self.site_of(seed)
        if site is None or site in self.sites:
            return self
        return replace(self, sites=self.sites | {site})

    def with_sites(self, sites: Iterable[str]) -> Scope:
        """A copy that also holds ``sites`` (as :meth:`site_of` gives them); the same scope
        for mode ``"any"``."""
        if self.mode == "any":
            return self
        return replace(self, sites=self.sites | frozenset(sites))

    def check(self, url: str, depth: int) -> str | None:
        """Return ``None`` when the canonical ``url`` at link ``depth`` is in scope, else the
        reason: ``"too_deep"``, ``"out_of_scope"``, ``"excluded"`` or ``"not_included"``."""
        if self.max_depth is not None and depth > self.max_depth:
            return "too_deep"
        if self.mode != "any":
            try:
                host = hostname_of(url)
            except InvalidURL:
                return "out_of_scope"
            if self.mode == "domain":
                host = self.resolver.registered_domain(host)
            if host not in self.sites:
                return "out_of_scope"
        for pattern in self.exclude:
            if pattern.search(url):
                return "excluded"
        if self.include and not any(pattern.search(url) for pattern in self.include):
            return "not_included"
        return None


def _compile_all(
    patterns: Iterable[str | re.Pattern[str]], what: str
) -> tuple[re.Pattern[str], ...]:
    compiled: list[re.Pattern[str]] = []
    for pattern in patterns:
        if isinstance(pattern, re.Pattern):
            compiled.append(pattern)
            continue
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigError(f"{what} pattern {pattern!r} does not compile: {exc}") from exc
    return tuple(compiled)
